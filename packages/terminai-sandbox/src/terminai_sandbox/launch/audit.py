"""Append-only, hash-chained audit ledger (JSON lines).

Each record carries ``prev`` (the previous record's hash) and ``hash`` = sha256 of the
record's canonical JSON without ``hash`` (the chain itself is :mod:`terminai_apts.ledger`,
shared with the executor's audit log and the memory journal). :func:`verify` recomputes
the chain and names the first line that was edited, removed, inserted or reordered.
Secrets never enter the ledger: callers pass redacted argument lists.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from terminai_apts import ledger

from terminai_sandbox.errors import AuditError, PathError
from terminai_sandbox.launch import host_folders

TYPE_CHECKING = False  # not `from typing import ...`: a launch never imports typing (~3 ms)
if TYPE_CHECKING:
    from typing import Any

GENESIS = ledger.GENESIS
CHAIN = ledger.Chain(prev_prefix=False)


def default_path(env: Mapping[str, str]) -> Path:
    return Path(host_folders.state_folder(env)) / "audit.jsonl"


def _now() -> str:
    """UTC time as ``datetime.now(UTC).isoformat()`` writes it (without importing datetime)."""
    now = time.time_ns()
    seconds, micro = divmod(now // 1000, 1_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{micro:06d}+00:00"


class Ledger:
    """The ledger at ``path``. With ``hold``, records wait for :meth:`release` and are written with it.

    A session start holds preflight's records and writes them with the ``run`` record: one
    lock and one fsync before the engine starts, instead of two.
    """

    def __init__(self, path: Path, *, hold: bool = False) -> None:
        self.path = path
        self._held: list[tuple[str, Mapping[str, Any]]] | None = [] if hold else None

    def append(self, event: str, **fields: Any) -> None:
        """Append one record and fsync it (or hold it)."""
        self.extend([(event, fields)])

    def extend(self, entries: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        """Append records in order under one exclusive lock and one fsync (or hold them)."""
        if self._held is not None:
            self._held.extend(entries)
            return
        self._write(entries)

    def release(self, entries: Sequence[tuple[str, Mapping[str, Any]]] = ()) -> None:
        """Write the held records, then ``entries``, under one lock and one fsync; hold nothing more."""
        held, self._held = self._held or [], None
        if held or entries:
            self._write([*held, *entries])

    def _write(self, entries: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        """Append records in order under one exclusive lock and one fsync (concurrent launchers serialise here)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            last = ledger.last_line(fd)
            prev = GENESIS
            if last is not None:
                tail = ledger.parse(last)
                if tail is None or not isinstance(tail.get("hash"), str):
                    raise AuditError(
                        f"the last line of {self.path} is corrupt; refusing to extend the chain",
                        hint="run 'terminai-sandbox audit verify' and investigate",
                    )
                prev = str(tail["hash"])
            records = []
            for event, fields in entries:
                record = CHAIN.seal({"time": _now(), "event": event, **fields}, prev)
                prev = str(record["hash"])
                records.append(record)
            ledger.append(fd, records)
        finally:
            os.close(fd)


def verify(path: Path) -> int:
    """Check the whole chain; return the number of records or raise naming the first bad line."""
    try:
        lines = path.read_bytes().splitlines()
    except FileNotFoundError:
        return 0
    except OSError as exc:
        # A path that cannot be read (XDG_STATE_HOME a file, no permission) is a refused
        # location (exit 3), not a broken chain (15): nothing says the ledger was edited.
        err = PathError.from_os(exc)
        raise PathError(f"cannot read the audit ledger {path}: {exc.strerror}", hint=err.hint) from None
    for link in CHAIN.walk(enumerate(lines, 1)):
        number = link.number
        if link.record is None:
            raise AuditError(f"{path} line {number} is not valid JSON (edited or truncated)")
        if not link.follows:
            raise AuditError(
                f"{path} line {number} does not follow line {number - 1}: a record was removed, inserted or reordered"
            )
        if not link.intact:
            raise AuditError(f"{path} line {number} was {link.problem}")
    return len(lines)
