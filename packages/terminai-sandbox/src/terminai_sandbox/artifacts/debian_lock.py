"""``images/sandbox/debian.lock``: every Debian package of the image by exact version and sha256.

The lock is JSON (format 1) written by ``terminai-sandbox lock``: the suite, architecture
and mirrors it was resolved against, the SOURCE_DATE_EPOCH of the build (the newest
archive Release date) and one entry per installed package (name, version, architecture,
source package, the archive index's sha256 and size of the ``.deb``, its pool filename).

:meth:`DebianLock.load` parses it strictly: an unknown or missing key, a wrong type, a
sha256 that is not 64 hex digits or a package listed twice is a
:class:`~terminai_sandbox.errors.LockError` naming the key; a lock that is a directory, a FIFO
or a device, or not UTF-8, is a :class:`~terminai_sandbox.errors.PathError` (exit 3). :meth:`DebianLock.to_dict`
gives back exactly the document that was read, so a cache key derived from it does not
change with this type.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from terminai_sandbox.common.files import read_input
from terminai_sandbox.errors import LockError

LOCK_FORMAT = 1
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
# Debian policy 5.6.12: [epoch:]upstream[-revision], starting with a digit.
_VERSION = re.compile(r"^(?:[0-9]+:)?[0-9][A-Za-z0-9.+~:-]*$")
_NAME = re.compile(r"^[a-z0-9][a-z0-9+.-]*$")  # Debian policy 5.6.1 (and its one-letter test names)
_HINT = "regenerate it with 'terminai-sandbox lock'"
_TOP = ("format", "suite", "architecture", "mirrors", "source_date_epoch", "packages")
_PACKAGE = ("name", "version", "architecture", "source", "sha256", "size", "filename")


@dataclass(frozen=True, slots=True, kw_only=True)
class DebianPackage:
    """One locked ``.deb``."""

    name: str
    version: str
    architecture: str
    source: str
    sha256: str  # hex, as the signed archive index gives it
    size: int
    filename: str

    def to_dict(self) -> dict[str, Any]:
        return {key: getattr(self, key) for key in _PACKAGE}


@dataclass(frozen=True, slots=True, kw_only=True)
class DebianLock:
    """The whole lock: where it was resolved and every package, sorted by name."""

    suite: str
    architecture: str
    mirrors: tuple[str, ...]
    source_date_epoch: int
    packages: tuple[DebianPackage, ...]

    @classmethod
    def load(cls, path: Path) -> DebianLock:
        """Read and strictly parse the lock at ``path``."""
        text = read_input(
            path,
            what="the Debian lock",
            missing=LockError(f"no Debian lock at {path}", hint="run 'terminai-sandbox lock' to create it"),
        )
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise LockError(f"{path} is not valid JSON: {exc}", hint=_HINT) from None
        return cls.from_dict(data, where=str(path))

    @classmethod
    def from_dict(cls, data: object, *, where: str = "the Debian lock") -> DebianLock:
        """Strictly parse a lock document (as :meth:`to_dict` gives it)."""
        if not isinstance(data, Mapping) or data.get("format") != LOCK_FORMAT:
            raise LockError(f"{where} is not a format-{LOCK_FORMAT} Debian lock", hint=_HINT)
        _exact_keys(data, _TOP, where)
        mirrors = data["mirrors"]
        if not isinstance(mirrors, list) or not mirrors or not all(isinstance(m, str) and m for m in mirrors):
            raise LockError(f"{where}: 'mirrors' must be a non-empty list of sources.list lines", hint=_HINT)
        raw = data["packages"]
        if not isinstance(raw, list):
            raise LockError(f"{where}: 'packages' must be a list", hint=_HINT)
        packages = tuple(_package(item, f"{where}: packages[{n}]") for n, item in enumerate(raw))
        names = [p.name for p in packages]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise LockError(f"{where}: packages listed more than once: {', '.join(twice)}", hint=_HINT)
        return cls(
            suite=_text(data, "suite", where),
            architecture=_text(data, "architecture", where),
            mirrors=tuple(mirrors),
            source_date_epoch=_count(data, "source_date_epoch", where, minimum=1),
            packages=packages,
        )

    def to_dict(self) -> dict[str, Any]:
        """The lock document (what ``debian.lock`` holds)."""
        return {
            "format": LOCK_FORMAT,
            "suite": self.suite,
            "architecture": self.architecture,
            "mirrors": list(self.mirrors),
            "source_date_epoch": self.source_date_epoch,
            "packages": [p.to_dict() for p in self.packages],
        }

    def dumps(self) -> str:
        """The lock file's text: stable key order and indentation, so diffs stay readable."""
        return json.dumps(self.to_dict(), indent=1, sort_keys=True) + "\n"

    def by_name(self) -> dict[str, DebianPackage]:
        return {p.name: p for p in self.packages}


def _exact_keys(data: Mapping[str, Any], keys: tuple[str, ...], where: str) -> None:
    unknown = sorted(set(data) - set(keys))
    missing = [k for k in keys if k not in data]
    if unknown or missing:
        parts = [f"unknown key(s) {', '.join(map(repr, unknown))}"] if unknown else []
        parts += [f"missing key(s) {', '.join(map(repr, missing))}"] if missing else []
        raise LockError(f"{where}: {'; '.join(parts)}", hint=_HINT)


def _text(data: Mapping[str, Any], key: str, where: str) -> str:
    value = data[key]
    if not isinstance(value, str) or not value:
        raise LockError(f"{where}: {key!r} must be a non-empty string, got {value!r}", hint=_HINT)
    return value


def _count(data: Mapping[str, Any], key: str, where: str, *, minimum: int = 0) -> int:
    value = data[key]
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise LockError(f"{where}: {key!r} must be an integer of at least {minimum}, got {value!r}", hint=_HINT)
    return value


def _package(item: object, where: str) -> DebianPackage:
    if not isinstance(item, Mapping):
        raise LockError(f"{where} is not a JSON object", hint=_HINT)
    _exact_keys(item, _PACKAGE, where)
    sha256 = _text(item, "sha256", where)
    if not _SHA256.match(sha256):
        raise LockError(f"{where}: 'sha256' must be 64 lowercase hex digits, got {sha256!r}", hint=_HINT)
    name, version = _text(item, "name", where), _text(item, "version", where)
    if not _NAME.match(name):
        raise LockError(f"{where}: 'name' {name!r} is not a Debian package name", hint=_HINT)
    if not _VERSION.match(version):
        raise LockError(f"{where}: 'version' {version!r} of {name} is not a Debian version", hint=_HINT)
    return DebianPackage(
        name=name,
        version=version,
        architecture=_text(item, "architecture", where),
        source=_text(item, "source", where),
        sha256=sha256,
        size=_count(item, "size", where),
        filename=_text(item, "filename", where),
    )
