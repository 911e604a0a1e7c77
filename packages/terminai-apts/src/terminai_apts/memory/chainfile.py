"""Appending to a hash-chained JSONL file in constant time, and never onto a torn line.

The chain's head is the ``hash`` of the file's last line, read by seeking back from the
end (a few kilobytes whatever the file's length), so an append costs the same at the
first entry and the millionth. A line cut short by a crash or a power loss (the file
does not end in a newline) is dealt with before anything is appended: a whole record
that only lost its newline gets it back; anything else is written to the quarantine
chain with its byte offset and cut off, so the next record is never glued to it. A
complete last line that is not a record is refused: it is history someone changed, and
``terminai-apts memory compact`` quarantines it deliberately.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from terminai_apts import durable, ledger
from terminai_apts.errors import JournalError
from terminai_apts.memory import keyed

GENESIS = ledger.GENESIS
# sha256 over the canonical JSON without ``hash``: the scheme the launcher's audit ledger uses.
CHAIN = ledger.Chain(prev_prefix=False)
_WINDOW = 8192


@dataclass(frozen=True, slots=True)
class Tail:
    """The last non-blank line of a file: where it starts, its bytes and whether a newline ends it."""

    start: int
    line: bytes
    terminated: bool


def read_tail(fd: int) -> Tail:
    """The last non-blank line of the open file ``fd``, reading backwards from its end."""
    size = os.fstat(fd).st_size
    window = _WINDOW
    while True:
        start = max(0, size - window)
        chunk = os.pread(fd, size - start, start)
        body = chunk.rstrip(b"\n\r\t ")
        cut = body.rfind(b"\n")
        if cut >= 0 or start == 0:
            line = body[cut + 1 :]
            return Tail(start=start + cut + 1, line=line, terminated=chunk.endswith(b"\n") or not line)
        window *= 4


def tail_records(path: Path, count: int) -> list[dict[str, object]]:
    """The last ``count`` records of a chained file, oldest first (reads back from the end)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return []
    try:
        size = os.fstat(fd).st_size
        window = _WINDOW
        while True:
            start = max(0, size - window)
            lines = [x for x in os.pread(fd, size - start, start).split(b"\n") if x.strip()]
            if start > 0:
                lines = lines[1:]  # the first piece may be the end of a longer line
            if len(lines) >= count or start == 0:
                records = [ledger.parse(x) for x in lines[-count:]] if count else []
                return [r for r in records if r is not None]
            window *= 4
    finally:
        os.close(fd)


def head_of(fd: int, path: Path, genesis: Callable[[], str]) -> str:
    """The hash a new record must link to: the last line's, or ``genesis()`` for an empty file."""
    tail = read_tail(fd)
    if not tail.line:
        return genesis()
    record = ledger.parse(tail.line)
    if record is None or not isinstance(record.get("hash"), str):
        raise JournalError(
            f"the last line of {path} is not a journal entry; nothing is appended after it",
            hint=f"run `terminai-apts memory verify {path.parent}` and `terminai-apts memory compact` to quarantine it",
        )
    return str(record["hash"])


def repair_torn_tail(fd: int, on_torn: Callable[[int, bytes], None]) -> bool:
    """Make the file end in a newline; True when a torn line was quarantined and cut off.

    ``on_torn(offset, raw)`` records the torn bytes (durably) before they are cut off: a
    crash between the two quarantines them twice, never loses them.
    """
    tail = read_tail(fd)
    if tail.terminated:
        return False
    record = ledger.parse(tail.line)
    if record is not None and record.get("hash") == CHAIN.digest(record):
        os.write(fd, b"\n")  # a whole record that lost only its newline
        os.fsync(fd)
        return False
    on_torn(tail.start, tail.line)
    os.ftruncate(fd, tail.start)
    os.fsync(fd)
    return True


def append(
    path: Path,
    body: Mapping[str, object],
    *,
    genesis: Callable[[], str] = lambda: GENESIS,
    on_torn: Callable[[int, bytes], None],
) -> dict[str, object]:
    """Seal ``body`` onto the chain in ``path`` and append it durably; the caller holds the lock."""
    secret = keyed.key()  # a bad key setting is refused before anything is written
    path.parent.mkdir(parents=True, exist_ok=True)
    durable.changing(path)
    created = not path.exists()
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o666)
    try:
        repair_torn_tail(fd, on_torn)
        prev = head_of(fd, path, genesis)
        if secret is not None:
            body = {**body, "prev": prev}
            body["mac"] = keyed.mac(secret, body)
        try:
            entry, line = CHAIN.seal_line(body, prev)
        except ValueError as exc:
            raise JournalError(f"not appended to {path}: {exc}", hint="record less text in one entry") from None
        os.write(fd, line)
        # The line and the file's new size; not the times (see durable.replace). The file
        # existed before, or its directory entry was flushed when it was created below.
        os.fdatasync(fd)
        if created:
            durable.fsync_dir(path.parent)
    finally:
        os.close(fd)
    return entry
