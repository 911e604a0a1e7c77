"""Layer 8: the audit log — one hash-chained JSON line per attempt, bounded rotation.

Each line carries ``seq`` and ``prev`` (the previous line's hash) and ``hash`` =
sha256(prev + canonical JSON of the entry). ``verify`` detects an edited, inserted or
removed line; it cannot detect truncation of the newest lines without an external anchor
(keep the last hash elsewhere for that).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from terminai_apts.errors import IntegrityError, JournalError

GENESIS = "0" * 64


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditEntry:
    caller: str
    code: str
    mode: str
    verdict: str  # "ok" | "refused" | "failed"
    guard: str | None
    limits_hit: tuple[str, ...]
    duration_ms: float


def _digest(prev: str, body: dict[str, object]) -> str:
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256((prev + canonical).encode()).hexdigest()


def _last(path: Path) -> tuple[int, str]:
    if not path.exists() or path.stat().st_size == 0:
        rotated = path.with_name(path.name + ".1")
        if rotated.exists() and rotated.stat().st_size:
            return _last(rotated)
        return 0, GENESIS
    with path.open("rb") as fh:
        fh.seek(max(0, path.stat().st_size - 65_536))
        line = fh.read().splitlines()[-1]
    data = json.loads(line)
    return int(data["seq"]), str(data["hash"])


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
            "prev": prev,
        }
        body["hash"] = _digest(prev, body)
        with target.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(body, sort_keys=True) + "\n")


def verify(path: str | os.PathLike[str]) -> int:
    """Check one log file's chain; returns the number of entries or raises IntegrityError."""
    target = Path(path)
    if not target.exists():
        raise JournalError(f"audit log {target} does not exist", hint="check the path")
    prev: str | None = None
    seq: int | None = None
    count = 0
    for number, line in enumerate(target.read_text(encoding="utf-8").splitlines(), 1):
        try:
            body = json.loads(line)
            claimed = body.pop("hash")
        except (ValueError, KeyError, AttributeError) as exc:
            raise IntegrityError(f"audit line {number} is not a valid entry", hint="the log was edited") from exc
        if prev is not None and (body.get("prev") != prev or body.get("seq") != seq):
            raise IntegrityError(
                f"audit chain broken at line {number}", hint="a line was removed, inserted or reordered"
            )
        if _digest(str(body.get("prev")), body) != claimed:
            raise IntegrityError(f"audit line {number} does not match its hash", hint="the line was edited")
        prev, seq = claimed, int(body["seq"]) + 1
        count += 1
    return count
