"""Snapshot store and rollback: every deployed version, hash-checked and optionally HMAC-signed."""

from __future__ import annotations

import hashlib
import hmac
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from terminai_apts.errors import EvolutionError, IntegrityError
from terminai_apts.evolution.persist import read_json, write_json_atomic

HMAC_ENV = "TERMINAI_EVOLUTION_HMAC_KEY"
SNAPSHOTS_FILE = "snapshots.json"


def sha256_hex(code: str) -> str:
    return hashlib.sha256(code.encode("utf-8")).hexdigest()


@dataclass(slots=True, kw_only=True)
class Snapshot:
    """One deployed version. Mutable on purpose: rollback re-verifies it, so in-memory edits are caught."""

    version: int
    code: str
    sha256: str
    parent: int | None
    created_at: float
    approver: str
    metadata: dict[str, str] = field(default_factory=dict)
    mac: str | None = None

    def signed_bytes(self) -> bytes:
        # Everything that identifies the version is covered, not just the code.
        return "\n".join(
            [str(self.version), self.sha256, str(self.parent), repr(self.created_at), self.approver]
        ).encode("utf-8")

    def to_json(self) -> dict[str, object]:
        return {
            "version": self.version,
            "code": self.code,
            "sha256": self.sha256,
            "parent": self.parent,
            "created_at": self.created_at,
            "approver": self.approver,
            "metadata": dict(self.metadata),
            "mac": self.mac,
        }

    @classmethod
    def from_json(cls, d: dict[str, object]) -> Snapshot:
        parent = d.get("parent")
        meta = d.get("metadata") or {}
        mac = d.get("mac")
        return cls(
            version=int(str(d["version"])),
            code=str(d["code"]),
            sha256=str(d["sha256"]),
            parent=None if parent is None else int(str(parent)),
            created_at=float(str(d["created_at"])),
            approver=str(d["approver"]),
            metadata={str(k): str(v) for k, v in dict(meta).items()} if isinstance(meta, dict) else {},
            mac=None if mac is None else str(mac),
        )


def load_hmac_key(key_file: Path | None = None) -> bytes | None:
    """The HMAC key from ``TERMINAI_EVOLUTION_HMAC_KEY`` or ``key_file``; None when neither is set."""
    env = os.environ.get(HMAC_ENV)
    if env:
        return env.encode("utf-8")
    if key_file is not None:
        try:
            key = key_file.read_bytes().strip()
        except OSError as exc:
            raise EvolutionError(
                f"cannot read HMAC key file {key_file}: {exc.strerror}",
                hint=f"fix the path or set {HMAC_ENV}",
            ) from exc
        if not key:
            raise EvolutionError(f"HMAC key file {key_file} is empty", hint="write a random key into it")
        return key
    return None


class RollbackManager:
    """Persists snapshots under ``store_dir`` and restores verified versions."""

    def __init__(self, store_dir: Path, *, hmac_key: bytes | None = None) -> None:
        self.store_dir = store_dir
        self._key = hmac_key
        store_dir.mkdir(parents=True, exist_ok=True)
        raw = read_json(store_dir / SNAPSHOTS_FILE, {"current": None, "snapshots": []})
        self.snapshots: list[Snapshot] = [Snapshot.from_json(s) for s in raw["snapshots"]]
        current = raw.get("current")
        self.current: int | None = None if current is None else int(current)
        bad = self.verify_integrity()
        if bad:
            raise IntegrityError(
                "snapshot store failed integrity check: " + "; ".join(bad),
                hint="restore the store from a backup; do not deploy from it",
            )

    # -- integrity -------------------------------------------------------------------------
    def _mac(self, snap: Snapshot) -> str:
        assert self._key is not None
        return hmac.new(self._key, snap.signed_bytes(), hashlib.sha256).hexdigest()

    def problem(self, snap: Snapshot) -> str | None:
        """Why ``snap`` is untrustworthy, or None when it verifies."""
        if sha256_hex(snap.code) != snap.sha256:
            return f"snapshot v{snap.version}: sha256 mismatch (code was modified)"
        if self._key is not None:
            if snap.mac is None:
                return f"snapshot v{snap.version}: missing HMAC while a key is configured"
            if not hmac.compare_digest(snap.mac, self._mac(snap)):
                return f"snapshot v{snap.version}: HMAC mismatch (tampered or wrong key)"
        elif snap.mac is not None:
            # Fail closed: a signed store opened without its key cannot be trusted blindly.
            return f"snapshot v{snap.version}: signed but no HMAC key configured ({HMAC_ENV})"
        return None

    def verify_integrity(self) -> list[str]:
        """Every problem in the store, one line per bad snapshot (empty list: all good)."""
        return [p for p in (self.problem(s) for s in self.snapshots) if p is not None]

    # -- versions --------------------------------------------------------------------------
    def get(self, version: int) -> Snapshot:
        for snap in self.snapshots:
            if snap.version == version:
                return snap
        known = ", ".join(str(s.version) for s in self.snapshots) or "none"
        raise EvolutionError(f"no snapshot v{version}", hint=f"known versions: {known}")

    def current_code(self) -> str | None:
        return None if self.current is None else self.get(self.current).code

    def deploy(self, code: str, *, approver: str, metadata: dict[str, str] | None = None) -> Snapshot:
        """Store ``code`` as the new current version and persist crash-safely."""
        snap = Snapshot(
            version=max((s.version for s in self.snapshots), default=0) + 1,
            code=code,
            sha256=sha256_hex(code),
            parent=self.current,
            created_at=time.time(),
            approver=approver,
            metadata=dict(metadata or {}),
        )
        if self._key is not None:
            snap.mac = self._mac(snap)
        self.snapshots.append(snap)
        previous = self.current
        self.current = snap.version
        try:
            self._persist()
        except EvolutionError:
            self.snapshots.pop()
            self.current = previous
            raise
        return snap

    def rollback_to(self, version: int) -> Snapshot:
        """Make ``version`` current again, refusing a target that no longer verifies."""
        snap = self.get(version)
        problem = self.problem(snap)
        if problem is not None:
            raise IntegrityError(
                f"refusing rollback: {problem}", hint="run `terminai-apts evolve verify` and restore the store"
            )
        previous = self.current
        self.current = version
        try:
            self._persist()
        except EvolutionError:
            self.current = previous
            raise
        return snap

    def _persist(self) -> None:
        write_json_atomic(
            self.store_dir / SNAPSHOTS_FILE,
            {"current": self.current, "snapshots": [s.to_json() for s in self.snapshots]},
        )
