"""Append-only, hash-chained audit ledger (JSON lines).

Each record carries ``prev`` (the previous record's hash) and ``hash`` = sha256 of the
record's canonical JSON without ``hash``. :func:`verify` recomputes the chain and names
the first line that was edited, removed, inserted or reordered. Secrets never enter the
ledger: callers pass redacted argument lists.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from terminai_sandbox.errors import AuditError

TYPE_CHECKING = False  # not `from typing import ...`: a launch never imports typing (~3 ms)
if TYPE_CHECKING:
    from typing import Any

GENESIS = "0" * 64


def default_path(env: Mapping[str, str]) -> Path:
    state = env.get("XDG_STATE_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".local" / "state")
    return Path(state) / "terminai-sandbox" / "audit.jsonl"


def _now() -> str:
    """UTC time as ``datetime.now(UTC).isoformat()`` writes it (without importing datetime)."""
    now = time.time_ns()
    seconds, micro = divmod(now // 1000, 1_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{micro:06d}+00:00"


def _digest(record: Mapping[str, Any]) -> str:
    body = {k: v for k, v in record.items() if k != "hash"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


class Ledger:
    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, event: str, **fields: Any) -> dict[str, Any]:
        """Append one record and fsync it."""
        return self.extend([(event, fields)])[0]

    def extend(self, entries: Sequence[tuple[str, Mapping[str, Any]]]) -> list[dict[str, Any]]:
        """Append records in order under one exclusive lock and one fsync (concurrent launchers serialise here)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            last = _last_line(fd)
            prev = GENESIS
            if last is not None:
                try:
                    prev = json.loads(last)["hash"]
                except (ValueError, KeyError):
                    raise AuditError(
                        f"the last line of {self.path} is corrupt; refusing to extend the chain",
                        hint="run 'terminai-sandbox audit verify' and investigate",
                    ) from None
            records, lines = [], []
            for event, fields in entries:
                record: dict[str, Any] = {"time": _now(), "event": event, **fields, "prev": prev}
                record["hash"] = prev = _digest(record)
                records.append(record)
                lines.append(json.dumps(record, sort_keys=True) + "\n")
            os.write(fd, "".join(lines).encode())
            os.fsync(fd)
            return records
        finally:
            os.close(fd)


def _last_line(fd: int, window: int = 65536) -> bytes | None:
    """The ledger's last non-empty line, reading only the tail (the ledger grows with every launch)."""
    size = os.fstat(fd).st_size
    start = size
    while start > 0:
        start = max(0, start - window)
        tail = os.pread(fd, size - start, start)
        lines = tail.rstrip(b"\n").split(b"\n")
        # The first piece may be a partial line unless the read reached the file's start.
        if len(lines) > 1 or start == 0:
            return lines[-1] if lines[-1] else None
        window *= 2
    return None


def verify(path: Path) -> int:
    """Check the whole chain; return the number of records or raise naming the first bad line."""
    try:
        lines = path.read_bytes().splitlines()
    except FileNotFoundError:
        return 0
    except OSError as exc:
        raise AuditError(f"cannot read the audit ledger {path}: {exc.strerror}") from None
    prev = GENESIS
    for number, line in enumerate(lines, 1):
        try:
            record = json.loads(line)
        except ValueError:
            raise AuditError(f"{path} line {number} is not valid JSON (edited or truncated)") from None
        if record.get("prev") != prev:
            raise AuditError(
                f"{path} line {number} does not follow line {number - 1}: a record was removed, inserted or reordered"
            )
        if record.get("hash") != _digest(record):
            raise AuditError(f"{path} line {number} was edited (its hash does not match its content)")
        prev = record["hash"]
    return len(lines)
