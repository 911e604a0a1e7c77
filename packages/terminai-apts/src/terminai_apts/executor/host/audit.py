"""Layer 8: the audit log — one hash-chained JSON line per attempt, bounded rotation.

Each line carries ``seq`` and ``prev`` (the previous line's hash) and ``hash`` =
sha256(prev + canonical JSON of the entry) (the chain is :mod:`terminai_apts.ledger`,
``Chain(prev_prefix=True)``; this log keeps that scheme so old logs still verify).
``verify`` detects an edited, inserted or removed line; it cannot detect truncation of the
newest lines without an external anchor (keep the last hash elsewhere for that).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

from terminai_apts import ledger
from terminai_apts.errors import IntegrityError, JournalError

GENESIS = ledger.GENESIS
CHAIN = ledger.Chain(prev_prefix=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditEntry:
    caller: str
    code: str
    mode: str
    verdict: str  # "ok" | "refused" | "failed"
    guard: str | None
    limits_hit: tuple[str, ...]
    duration_ms: float


def _last(path: Path) -> tuple[int, str]:
    if not path.exists() or path.stat().st_size == 0:
        rotated = path.with_name(path.name + ".1")
        if rotated.exists() and rotated.stat().st_size:
            return _last(rotated)
        return 0, GENESIS
    fd = os.open(path, os.O_RDONLY)
    try:
        line = ledger.last_line(fd)
    finally:
        os.close(fd)
    data = ledger.parse(line or b"")
    seq = None if data is None else data.get("seq")
    if data is None or not isinstance(seq, int) or "hash" not in data:
        raise IntegrityError(f"the last line of {path} is not a valid entry", hint="the log was edited")
    return seq, str(data["hash"])


def record(path: str | os.PathLike[str], entry: AuditEntry, *, max_bytes: int = 10_000_000, backups: int = 3) -> None:
    """Append one entry (file-locked so concurrent runs keep the chain intact)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(str(target) + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.exists() and target.stat().st_size > max_bytes:
            for i in range(backups - 1, 0, -1):
                src = target.with_name(f"{target.name}.{i}")
                if src.exists():
                    src.replace(target.with_name(f"{target.name}.{i + 1}"))
            target.replace(target.with_name(target.name + ".1"))
        seq, prev = _last(target)
        body: dict[str, object] = {
            "seq": seq + 1,
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "caller": entry.caller,
            "code_sha256": hashlib.sha256(entry.code.encode("utf-8", "replace")).hexdigest(),
            "preview": entry.code[:120],
            "mode": entry.mode,
            "verdict": entry.verdict,
            "guard": entry.guard,
            "limits_hit": list(entry.limits_hit),
            "duration_ms": round(entry.duration_ms, 3),
        }
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)
        try:
            # Not fsync'd per entry: an attempt is audited on every exec, and the lock
            # already keeps concurrent writers' chains intact.
            ledger.append(fd, [CHAIN.seal(body, prev)], durable=False)
        finally:
            os.close(fd)


def verify(path: str | os.PathLike[str]) -> int:
    """Check one log file's chain; returns the number of entries or raises IntegrityError."""
    target = Path(path)
    if not target.exists():
        raise JournalError(f"audit log {target} does not exist", hint="check the path")
    seq: int | None = None
    count = 0
    lines = enumerate(target.read_bytes().splitlines(), 1)
    # The first line of a rotated file links to a record in the previous file: not checked.
    for link in CHAIN.walk(lines, prev=None):
        body = link.record
        if body is None or "hash" not in body:
            raise IntegrityError(f"audit line {link.number} is not a valid entry", hint="the log was edited")
        if not link.follows or (seq is not None and body.get("seq") != seq):
            raise IntegrityError(
                f"audit chain broken at line {link.number}", hint="a line was removed, inserted or reordered"
            )
        if not link.intact:
            raise IntegrityError(f"audit line {link.number} was {link.problem}", hint="the line was edited")
        seq = _seq(body, link.number) + 1
        count += 1
    return count


def _seq(body: dict[str, object], number: int) -> int:
    seq = body.get("seq")
    if not isinstance(seq, int):
        raise IntegrityError(f"audit line {number} is not a valid entry", hint="the log was edited")
    return seq
