"""The versioned T-APTS data model: labels and the frozen records the toolset returns.

Every record is a frozen, slotted dataclass that serialises to plain JSON with
``to_dict()``; the plan carries ``schema_version`` so consumers can refuse a plan they do
not understand. The JSON schema of the plan is part of the contract manifest
(``contracts/t-apts/contract.json``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

__all__ = [
    "PLAN_SCHEMA_VERSION",
    "CleanupEntry",
    "CleanupPlan",
    "CleanupPolicy",
    "ObjectTableLabels",
]

#: Version of the JSON layout of :class:`CleanupPlan`; bumped on any incompatible change.
PLAN_SCHEMA_VERSION = "1.0"


class ObjectTableLabels(StrEnum):
    """What the cleanup planner concluded about one object in a folder.

    - ``TRANSIT``: still arriving or in use: a partial download (``.crdownload``,
      ``.part``, an ``.aria2`` control file and its target, ...) or anything modified
      within the settle window. Never touched.
    - ``KEEP``: nothing suggests removing or moving it (also every symlink: its target is
      never followed).
    - ``DELETE``: safe to remove: an exact duplicate of a kept copy, a zero-byte file, or
      an installer / disk image older than the installer threshold. An approved apply
      moves it into quarantine; nothing is ever unlinked.
    - ``ARCHIVE``: old enough to move out of the way but worth keeping; an approved apply
      moves it into the archive folder by month.
    - ``UNKNOWN``: could not be classified: unreadable, vanished while planning, changed
      during planning, a special file (FIFO, socket, device) or nested too deep.
      Never touched.
    """

    TRANSIT = "TRANSIT"
    KEEP = "KEEP"
    DELETE = "DELETE"
    ARCHIVE = "ARCHIVE"
    UNKNOWN = "UNKNOWN"


_PARTIAL_SUFFIXES = (
    ".crdownload",
    ".part",
    ".partial",
    ".download",
    ".opdownload",
    ".!qb",
    ".aria2",
    ".tmp",
    ".filepart",
    ".dtapart",
    ".crswap",
)
_INSTALLER_SUFFIXES = (
    ".exe",
    ".msi",
    ".msix",
    ".dmg",
    ".pkg",
    ".deb",
    ".rpm",
    ".appimage",
    ".apk",
    ".iso",
    ".img",
    ".flatpakref",
    ".snap",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class CleanupPolicy:
    """Thresholds and name rules of the cleanup planner (all ages in seconds).

    ``settle_seconds``: anything modified more recently than this (or in the future) is
    TRANSIT. ``installer_age_seconds``: installers and disk images older than this are
    DELETE. ``archive_age_seconds``: other files older than this are ARCHIVE.
    ``max_depth``: directories nested deeper than this are reported UNKNOWN rather than
    entered. ``workspace``: the folder (relative to the root) that an apply writes its
    quarantine, archive and journal into; the planner never scans it.
    """

    settle_seconds: int = 15 * 60
    installer_age_seconds: int = 30 * 86400
    archive_age_seconds: int = 180 * 86400
    partial_suffixes: tuple[str, ...] = _PARTIAL_SUFFIXES
    installer_suffixes: tuple[str, ...] = _INSTALLER_SUFFIXES
    max_depth: int = 400
    workspace: str = ".terminai-cleanup"

    def __post_init__(self) -> None:
        for name in ("settle_seconds", "installer_age_seconds", "archive_age_seconds", "max_depth"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"CleanupPolicy.{name} must be a non-negative integer, got {value!r}")
        if not self.workspace or "/" in self.workspace or self.workspace in (".", ".."):
            raise ValueError("CleanupPolicy.workspace must be a single folder name")

    def to_dict(self) -> dict[str, Any]:
        return {
            "settle_seconds": self.settle_seconds,
            "installer_age_seconds": self.installer_age_seconds,
            "archive_age_seconds": self.archive_age_seconds,
            "partial_suffixes": list(self.partial_suffixes),
            "installer_suffixes": list(self.installer_suffixes),
            "max_depth": self.max_depth,
            "workspace": self.workspace,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CleanupPolicy:
        return cls(
            settle_seconds=data["settle_seconds"],
            installer_age_seconds=data["installer_age_seconds"],
            archive_age_seconds=data["archive_age_seconds"],
            partial_suffixes=tuple(data["partial_suffixes"]),
            installer_suffixes=tuple(data["installer_suffixes"]),
            max_depth=data["max_depth"],
            workspace=data["workspace"],
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class CleanupEntry:
    """One object of the planned folder and the label the planner gave it.

    ``path`` is relative to the plan's root, ``/``-separated. A name that is not valid
    UTF-8 is shown with ``\\xNN`` escapes in ``path`` and kept exactly in ``path_hex``
    (the raw bytes in hex; ``None`` for ordinary names). ``rule`` is a stable rule id and
    ``reason`` a human sentence. ``sha256`` is set only where the planner hashed the file
    (same-size duplicate candidates). ``duplicate_of`` names the kept canonical copy.
    """

    path: str
    path_hex: str | None
    kind: str
    label: ObjectTableLabels
    rule: str
    reason: str
    size: int | None
    mtime_ns: int | None
    sha256: str | None = None
    duplicate_of: str | None = None

    @property
    def raw_path(self) -> bytes:
        """The exact relative path bytes on disk."""
        if self.path_hex is not None:
            return bytes.fromhex(self.path_hex)
        return self.path.encode("utf-8")

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "path_hex": self.path_hex,
            "kind": self.kind,
            "label": self.label.value,
            "rule": self.rule,
            "reason": self.reason,
            "size": self.size,
            "mtime_ns": self.mtime_ns,
            "sha256": self.sha256,
            "duplicate_of": self.duplicate_of,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CleanupEntry:
        return cls(
            path=data["path"],
            path_hex=data["path_hex"],
            kind=data["kind"],
            label=ObjectTableLabels(data["label"]),
            rule=data["rule"],
            reason=data["reason"],
            size=data["size"],
            mtime_ns=data["mtime_ns"],
            sha256=data["sha256"],
            duplicate_of=data["duplicate_of"],
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class CleanupPlan:
    """The complete, deterministic result of planning a cleanup of one folder.

    The same tree and the same ``now`` give byte-identical :meth:`to_json` output.
    ``limit_hit`` says the scan stopped at ``scan_limit`` objects, so the plan covers
    only part of the folder. ``dry_run`` is True for a plan nobody approved.
    """

    root: str
    now: str
    policy: CleanupPolicy
    entries: tuple[CleanupEntry, ...]
    scanned: int
    scan_limit: int
    limit_hit: bool
    dry_run: bool = True
    schema_version: str = PLAN_SCHEMA_VERSION
    counts: dict[str, int] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        tally = {label.value: 0 for label in ObjectTableLabels}
        for entry in self.entries:
            tally[entry.label.value] += 1
        object.__setattr__(self, "counts", tally)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "root": self.root,
            "now": self.now,
            "dry_run": self.dry_run,
            "scan_limit": self.scan_limit,
            "scanned": self.scanned,
            "limit_hit": self.limit_hit,
            "policy": self.policy.to_dict(),
            "counts": dict(self.counts),
            "entries": [entry.to_dict() for entry in self.entries],
        }

    def to_json(self, *, indent: int | None = None) -> str:
        """Canonical JSON: sorted keys, ASCII-safe, stable separators."""
        separators = (",", ": ") if indent else (",", ":")
        return json.dumps(self.to_dict(), sort_keys=True, indent=indent, separators=separators)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CleanupPlan:
        if data.get("schema_version") != PLAN_SCHEMA_VERSION:
            raise ValueError(
                f"unsupported plan schema_version {data.get('schema_version')!r}; "
                f"this toolset reads {PLAN_SCHEMA_VERSION!r}"
            )
        return cls(
            root=data["root"],
            now=data["now"],
            policy=CleanupPolicy.from_dict(data["policy"]),
            entries=tuple(CleanupEntry.from_dict(item) for item in data["entries"]),
            scanned=data["scanned"],
            scan_limit=data["scan_limit"],
            limit_hit=data["limit_hit"],
            dry_run=data["dry_run"],
        )

    @classmethod
    def from_json(cls, text: str) -> CleanupPlan:
        return cls.from_dict(json.loads(text))
