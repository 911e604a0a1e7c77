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

import hashlib
import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from terminai_apts import ledger
from terminai_apts.errors import MemoryStoreError
from terminai_apts.memory import chainfile, store
from terminai_apts.memory.journal_files import now
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
    root: Path, rel: str, sha256: str | None, on_torn: Callable[[int, bytes], None], *, size: int | None = None
) -> None:
    """Append the seal of ``root/rel`` (the caller holds the journal's lock).

    ``size`` seals an append-only file's first ``size`` bytes: it may grow, never change.
    """
    body: dict[str, object] = {"kind": "seal", "file": rel, "sha256": sha256, "ts": now()}
    if size is not None:
        body["size"] = size
    chainfile.append(root / SEALS, body, on_torn=on_torn)


def seal_file(root: Path, rel: str, on_torn: Callable[[int, bytes], None], *, prefix: bool = False) -> None:
    """Record the current content of ``root/rel`` (``prefix``: as the start of an append-only file)."""
    size = (root / rel).stat().st_size if prefix else None
    record(root, rel, digest_file(root / rel, size), on_torn, size=size)


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
    """The digest the newest intact seal of ``rel`` records (None: no such seal).

    Reads the seal file once and parses only the lines that name ``rel``: cheap enough
    to run on every open of a sealed shard.
    """
    try:
        raw = (root / SEALS).read_bytes()
    except FileNotFoundError:
        return None
    needle = ('"file": "' + rel + '"').encode()
    end = len(raw)
    while (at := raw.rfind(needle, 0, end)) >= 0:
        start = raw.rfind(b"\n", 0, at) + 1
        stop = raw.find(b"\n", at)
        data = ledger.parse(raw[start : stop if stop >= 0 else len(raw)])
        if data is not None and data.get("file") == rel and data.get("hash") == chainfile.CHAIN.digest(data):
            digest = data.get("sha256")
            return str(digest) if digest else None
        end = start
    return None


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
