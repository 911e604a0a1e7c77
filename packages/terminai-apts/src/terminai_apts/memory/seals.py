"""Seal records: the sha256 of every derived file a query can read, kept in a hash chain.

``warm/seals.jsonl`` is a chain like the decision chain (same hash scheme). Each record
names one file by its path under the journal root and its sha256 (``null``: the file was
given up, see :func:`abandon`). The newest record of a file is what it must hold:
``terminai-apts memory verify`` compares every sealed file with it, and a sealed quarter
shard is compared with it each time it is opened (:func:`check_shard`), through the
descriptor the reader pins, so the bytes checked are the bytes SQLite reads.

Sealed files are compared byte for byte, SQLite files included: nothing writes a sealed
shard after compaction, and the live index is written only by ``memory index`` (which
records its new digest); a read-only reader never changes the file, and a rolled-back
transaction restores the very bytes it replaced.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import sqlite3
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from terminai_apts import ledger
from terminai_apts.errors import IntegrityError, MemoryStoreError
from terminai_apts.memory import chainfile, keyed, store
from terminai_apts.memory.journal_files import fingerprint, now
from terminai_apts.memory.pinned import FilePin

SEALS = Path("warm/seals.jsonl")
# Written into the ``meta`` table of every index a journal seals: a journal whose seal chain
# is gone, but whose index files carry this, had one (it was removed, not never kept).
SEALED_META = {"sealed_in": str(SEALS)}
_READ = 1 << 20

# (device, inode, size, mtime, ctime, prefix) -> sha256: a file is hashed once per process and version.
_DIGESTS: dict[tuple[int, int, int, int, int, int], str] = {}


@dataclass(frozen=True, slots=True)
class Seal:
    """The newest record of one file: its digest (None: given up) and the record's line."""

    file: str
    sha256: str | None
    line: int
    size: int | None = None  # set for append-only files: the digest covers this many first bytes


def digest_fd(fd: int, size: int | None = None) -> str:
    """sha256 of an open file's content (its first ``size`` bytes if given), read with ``pread``.

    A file shorter than ``size`` gets the digest of an impossible value, never a match.
    """
    info = os.fstat(fd)
    limit = info.st_size if size is None else size
    if limit > info.st_size:
        return "short:" + str(info.st_size)
    key = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns, limit)
    known = _DIGESTS.get(key)
    if known is not None:
        return known
    sha = hashlib.sha256()
    offset = 0
    while offset < limit and (chunk := os.pread(fd, min(_READ, limit - offset), offset)):
        sha.update(chunk)
        offset += len(chunk)
    after = os.fstat(fd)
    if (after.st_size, after.st_mtime_ns, after.st_ctime_ns) == key[2:5]:
        _DIGESTS[key] = sha.hexdigest()  # only a version that held still while it was read
    return sha.hexdigest()


def digest_file(path: Path, size: int | None = None) -> str:
    fd = os.open(path, os.O_RDONLY)
    try:
        return digest_fd(fd, size)
    finally:
        os.close(fd)


def record(
    root: Path,
    rel: str,
    sha256: str | None,
    on_torn: Callable[[int, bytes], None],
    *,
    size: int | None = None,
    stat: list[int] | None = None,
) -> None:
    """Append the seal of ``root/rel`` (the caller holds the journal's lock).

    ``size`` seals an append-only file's first ``size`` bytes: it may grow, never change.
    ``stat`` is the file's :func:`fingerprint` when it was sealed (see :func:`check_index`).
    """
    body: dict[str, object] = {"kind": "seal", "file": rel, "sha256": sha256, "ts": now()}
    if size is not None:
        body["size"] = size
    if stat is not None:
        body["stat"] = stat
    chainfile.append(root / SEALS, body, on_torn=on_torn)


def seal_file(root: Path, rel: str, on_torn: Callable[[int, bytes], None], *, prefix: bool = False) -> None:
    """Record the current content of ``root/rel`` (``prefix``: as the start of an append-only file)."""
    size = (root / rel).stat().st_size if prefix else None
    stat = None if prefix else fingerprint(root / rel)
    record(root, rel, digest_file(root / rel, size), on_torn, size=size, stat=stat)


def latest(root: Path) -> dict[str, Seal]:
    """The newest seal of every file (records that do not parse are the chain check's business)."""
    out: dict[str, Seal] = {}
    try:
        raw = (root / SEALS).read_bytes()
    except FileNotFoundError:
        return out
    for number, line in enumerate(raw.splitlines(), start=1):
        data = ledger.parse(line)
        if data is None or not isinstance(data.get("file"), str):
            continue
        digest, size = data.get("sha256"), data.get("size")
        out[str(data["file"])] = Seal(
            file=str(data["file"]),
            sha256=str(digest) if digest else None,
            line=number,
            size=size if isinstance(size, int) else None,
        )
    return out


def sealed_digest(root: Path, rel: str) -> str | None:
    """The digest the newest intact seal of ``rel`` records (None: no such seal)."""
    found = sealed_record(root, rel)
    digest = found[1].get("sha256") if found else None
    return str(digest) if digest else None


def sealed_record(root: Path, rel: str) -> tuple[int, dict[str, object]] | None:
    """The newest intact seal record of ``rel`` and its line number (None: no such seal).

    Reads the seal file once and parses only the lines that name ``rel``: cheap enough
    to run on every open of a sealed shard.
    """
    secret = keyed.key()  # with the journal key, only a signed seal counts
    try:
        raw = (root / SEALS).read_bytes()
    except FileNotFoundError:
        return None
    needle = ('"file": "' + rel + '"').encode()
    end = len(raw)
    while (at := raw.rfind(needle, 0, end)) >= 0:
        start = raw.rfind(b"\n", 0, at) + 1
        stop = raw.find(b"\n", at)
        line = raw[start : stop if stop >= 0 else len(raw)]
        data = ledger.parse(line)
        if (
            data is not None
            and data.get("file") == rel
            and data.get("hash") == chainfile.CHAIN.digest(data)
            and not ledger.spelling(line, data)
            and (secret is None or keyed.signed(secret, data))
        ):
            return raw.count(b"\n", 0, start) + 1, data
        end = start
    return None


def check_index(root: Path, rel: str) -> Callable[[sqlite3.Connection], None]:
    """An open-time check for the live index ``root/rel``: what ``verify`` says of it, or nothing.

    Cheap on every open: the file's :func:`fingerprint` against the one its seal recorded,
    and a full sha256 only when they differ (a copied journal, a changed file). A writer
    re-indexing meanwhile withdraws the seal until it has written the new index: a failed
    check is repeated once that writer has released the journal's lock.
    """

    def check(_conn: sqlite3.Connection) -> None:
        problem = index_problem(root, rel)
        if problem and writer_done(root):
            problem = index_problem(root, rel)
        if problem:
            raise IntegrityError(
                f"{root / rel}: {problem}",
                hint=f"rebuild it: terminai-apts memory index {root} --rebuild"
                f" (`terminai-apts memory verify {root}` lists every changed file)",
            )

    return check


def index_problem(root: Path, rel: str) -> str | None:
    """Why the live index must not be read (verify's words), or None."""
    path = root / rel
    if not (root / SEALS).exists():
        # A journal from before seals has none to compare with (verify reports it as pending).
        return f"{SEALS} was removed, but this index was sealed in it" if carries_seal_mark(path) else None
    found = sealed_record(root, rel)
    if found is None:
        return "not sealed: added or replaced outside the journal's API"
    line, data = found
    if not data.get("sha256"):
        return "an index write was cut short"
    if data.get("stat") == fingerprint(path):
        return None
    if digest_file(path) != data["sha256"]:
        return f"changed since it was sealed ({SEALS}:{line})"
    return None


def writer_done(root: Path, timeout: float = 30.0) -> bool:
    """Wait (bounded) until no writer holds ``root/.lock``; False when there is no lock or it stays taken."""
    try:
        fd = os.open(root / ".lock", os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False  # not a lock any writer takes (a FIFO would block a reader)
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.05)
                continue
            except OSError:
                return False  # locking refused (a sandboxed reader): nothing to wait for
            fcntl.flock(fd, fcntl.LOCK_UN)
            return True
    finally:
        os.close(fd)


def carries_seal_mark(path: Path) -> bool:
    """True when the SQLite index at ``path`` says a journal sealed it (see :data:`SEALED_META`)."""
    return store.meta_value(path, "sealed_in") is not None


def is_journal(base: Path) -> bool:
    """True for a journal directory (its sealed shards must match their seals), not a folder of shards."""
    return any((base / name).exists() for name in ("hot", "warm")) or any(base.glob("cold/*/*.jsonl"))


def check_shard(root: Path, rel: str) -> Callable[[sqlite3.Connection], None]:
    """An open-time check for the sealed shard ``root/rel``: its pinned bytes match its seal."""

    def check(conn: sqlite3.Connection) -> None:
        pin = getattr(conn, "pin", None)
        if not isinstance(pin, FilePin):
            raise MemoryStoreError(f"sealed shard {rel} was not opened pinned", hint="report this as a bug")
        expected = sealed_digest(root, rel)
        if expected is None:
            raise MemoryStoreError(
                f"sealed shard {root / rel} has no seal in {root / SEALS}: it is not bound to the journal's chain",
                hint=f"run `terminai-apts memory verify {root}`",
            )
        actual = pin.digest(digest_fd)
        if actual != expected:
            raise MemoryStoreError(
                f"sealed shard {root / rel} does not match its seal (sha256 {actual[:12]}…, sealed {expected[:12]}…):"
                " it was changed after compaction sealed it",
                hint=f"restore it from backup; `terminai-apts memory verify {root}` lists every changed file",
            )

    return check
