"""Read connections to an index that take no lock and never mix two versions of it.

SQLite's ordinary readers take POSIX record locks on the database file, and any process
that holds a descriptor to the file can take one itself and keep it: a sandboxed run
holding a read lock for its whole session leaves the host's writer with "database is
locked". Opened ``immutable=1``, SQLite takes no lock at all, so the executor's system
call filter can refuse every locking call to the run (``executor/os_layer/seccomp.py``).

``immutable=1`` also tells SQLite the file never changes: it keeps its page cache for the
life of the connection and reads any page it has not cached from the file as it is now.
If a writer commits meanwhile, answers would be assembled from two versions of the
index. :func:`connect` therefore pins the version it opened (the header's change counter,
the size, the modification and change times and the link count, read through a
descriptor of its own) and
:class:`PinnedConnection` checks it after every statement: once the file has changed,
each result is refused with a clear error instead.

Why that check is enough for an index written in rollback-journal mode (the store's
mode; WAL files are refused): a writer writes the database file only while its journal
exists, and writes a commit's pages in page order, so page 1 with the new change counter
reaches the file before any other page. A version read with no journal present, and
still the same after a statement, means every page the statement read belongs to it. A
writer that dies mid-commit and is rolled back later restores the counter, but not the
modification time. Two changes that are not commits are caught too: a rewrite in place
that restores the modification time (``cp -p``, ``rsync -t``, ``touch -r``) still moves
the change time, which no caller can set; and a new file renamed over the path (a full
rebuild, ``store.build``) leaves the pinned file with no link, where the run would
otherwise go on reading the old index, or SQLite, had it opened the path after the pin,
another file than the one pinned.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from terminai_apts.errors import MemoryStoreError

# How long opening waits for a writer's commit to finish, as SQLite's own busy timeout does.
WRITER_WAIT_SECONDS = 5.0
_POLL_SECONDS = 0.01
_HEADER = 100
_JOURNAL_HEADER = 28  # what SQLite zeroes to retire a persistent journal (zeroJournalHdr)
_WAL_FORMAT = 2  # header bytes 18 and 19: file format write/read version (1 legacy, 2 WAL)
_CHANGED_HINT = "run the program again; it will read the index as it is now"


@dataclass(frozen=True, slots=True)
class Version:
    """What identifies one state of the file."""

    change_counter: bytes
    size: int
    mtime_ns: int
    ctime_ns: int  # moves on every write, and on utime(): a restored mtime cannot hide one
    links: int  # 0 once a new file is renamed over the path (or it is removed)


def _read_version(fd: int) -> tuple[Version, bytes]:
    info = os.fstat(fd)
    header = os.pread(fd, _HEADER, 0)
    version = Version(
        change_counter=header[24:28],
        size=info.st_size,
        mtime_ns=info.st_mtime_ns,
        ctime_ns=info.st_ctime_ns,
        links=info.st_nlink,
    )
    return version, header


def _writer_active(target: Path) -> bool:
    """True while a rollback journal holds a transaction: a commit may be half written.

    A writer in ``journal_mode=PERSIST`` keeps its journal after each commit with the
    first 28 bytes of its header (magic, record count, nonce, original size) zeroed; that
    journal holds nothing, and taking it for a commit would refuse every run. A journal
    still being filled (its header written, not yet synced) counts as a commit: SQLite
    has not touched the database file yet, but waiting for it costs only the wait.
    """
    journal = f"{target}-journal"
    try:
        if os.stat(journal).st_size == 0:  # TRUNCATE mode's resting state
            return False
        with open(journal, "rb") as fh:
            return fh.read(_JOURNAL_HEADER) != bytes(_JOURNAL_HEADER)
    except FileNotFoundError:
        return False
    except OSError:
        return True  # unreadable: assume the worst, as before


class FilePin:
    """A descriptor of the index's own and the version it held when opened."""

    __slots__ = ("_fd", "_path", "_version")

    def __init__(self, target: Path, *, wait_seconds: float = WRITER_WAIT_SECONDS) -> None:
        self._path = target
        try:
            self._fd = os.open(target, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            raise MemoryStoreError(f"cannot open memory index {target}: {exc.strerror}") from None
        try:
            self._version = self._stable_version(wait_seconds)
        except BaseException:
            os.close(self._fd)
            raise

    def _stable_version(self, wait_seconds: float) -> Version:
        deadline = time.monotonic() + wait_seconds
        while True:
            before, header = _read_version(self._fd)
            if len(header) == _HEADER and _WAL_FORMAT in (header[18], header[19]):
                raise MemoryStoreError(
                    f"memory index {self._path} is in WAL mode, which a sandboxed run cannot read safely",
                    hint="switch it back with `PRAGMA journal_mode=DELETE` (the index's own mode)",
                )
            if not _writer_active(self._path) and _read_version(self._fd)[0] == before:
                return before
            if time.monotonic() > deadline:
                raise MemoryStoreError(
                    f"memory index {self._path} is being written and did not settle within {wait_seconds:g} s",
                    hint="try again once the write has finished",
                )
            time.sleep(_POLL_SECONDS)

    def verify(self) -> None:
        """Raise :class:`MemoryStoreError` when the file is no longer the pinned version."""
        try:
            now, _ = _read_version(self._fd)
        except OSError as exc:
            raise MemoryStoreError(f"memory index {self._path} cannot be checked ({exc.strerror})") from None
        if now != self._version:
            raise MemoryStoreError(
                f"memory index {self._path} changed while this program read it; its answers could mix two versions",
                hint=_CHANGED_HINT,
            )

    def digest(self, hasher: Callable[[int], str]) -> str:
        """``hasher`` applied to the pinned descriptor, then the version checked (the bytes hashed are pinned)."""
        value = hasher(self._fd)
        self.verify()
        return value

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class PinnedCursor(sqlite3.Cursor):
    """Rows are returned only while the file is still the pinned version."""

    def fetchall(self) -> list[Any]:
        try:
            rows = super().fetchall()
        except sqlite3.DatabaseError:
            _pin_of(self.connection).verify()  # a torn page: name the cause
            raise
        _pin_of(self.connection).verify()
        return rows

    def fetchone(self) -> Any:
        try:
            row = super().fetchone()
        except sqlite3.DatabaseError:
            _pin_of(self.connection).verify()
            raise
        _pin_of(self.connection).verify()
        return row


class PinnedConnection(sqlite3.Connection):
    """An ``immutable=1`` connection whose statements are checked against a :class:`FilePin`."""

    pin: FilePin | None = None

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        cursor = self.cursor(PinnedCursor)
        try:
            return cursor.execute(sql, parameters)
        except sqlite3.DatabaseError:
            _pin_of(self).verify()
            raise

    def close(self) -> None:
        super().close()
        if self.pin is not None:
            self.pin.close()


def _pin_of(conn: sqlite3.Connection) -> FilePin:
    pin = getattr(conn, "pin", None)
    if not isinstance(pin, FilePin):
        raise MemoryStoreError("memory index connection has no version pin", hint="report this as a bug")
    return pin


def connect(target: Path, *, immutable: bool) -> sqlite3.Connection:
    """A read-only connection to ``target``: ``mode=ro`` (SQLite's shared locks, sees
    commits), or ``immutable=1`` and pinned to the version it opened (no locks)."""
    uri = f"file:{quote(str(target))}?mode=ro"
    if not immutable:
        return sqlite3.connect(uri, uri=True, check_same_thread=False)
    pin = FilePin(target)
    try:
        conn = sqlite3.connect(uri + "&immutable=1", uri=True, check_same_thread=False, factory=PinnedConnection)
    except BaseException:
        pin.close()
        raise
    conn.pin = pin
    return conn
