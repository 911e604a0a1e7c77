"""Walk a folder without following symlinks and without leaving it.

Traversal is iterative and descriptor-relative (``openat`` with ``O_NOFOLLOW``), so a
symlink swapped in for a directory is never entered and deep trees need no recursion
and no long path strings. At most ``max_depth`` directory descriptors are open at once.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
_HASH_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class Found:
    """One object seen by the walk. ``error`` is set when it could not be examined."""

    rel: bytes
    kind: str  # file | symlink | dir | fifo | socket | device | unknown
    size: int | None
    mtime_ns: int | None
    dev: int | None
    ino: int | None
    error: str | None = None


def _kind(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "unknown"


def walk(root_fd: int, *, skip_top: frozenset[bytes], max_depth: int, limit: int) -> Iterator[Found]:
    """Yield every object below ``root_fd`` (directories that could not be entered too).

    Stops after ``limit`` objects; the caller detects that by counting. Names in
    ``skip_top`` are ignored at the top level (the apply workspace).
    """
    # scandir(fd) works on its own duplicate of fd, so closing ours stays our job.
    stack: list[tuple[int, bytes, os._ScandirIterator[str]]] = [(-1, b"", os.scandir(root_fd))]
    seen = 0
    try:
        while stack:
            fd, prefix, entries = stack[-1]
            entry = next(entries, None)
            if entry is None:
                stack.pop()
                entries.close()
                if fd >= 0:
                    os.close(fd)
                continue
            name = os.fsencode(entry.name)
            if not prefix and name in skip_top:
                continue
            rel = prefix + name
            if seen >= limit:
                return
            seen += 1
            parent_fd = root_fd if fd < 0 else fd
            try:
                st = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
            except OSError as exc:
                yield Found(rel, "unknown", None, None, None, None, _describe(exc, "vanished or unreadable"))
                continue
            kind = _kind(st.st_mode)
            found = Found(rel, kind, st.st_size, st.st_mtime_ns, st.st_dev, st.st_ino)
            if kind != "dir":
                yield found
                continue
            if len(stack) > max_depth:
                yield _unentered(found, f"nested deeper than {max_depth} levels; not entered")
                continue
            try:
                child_fd = os.open(name, DIR_FLAGS, dir_fd=parent_fd)
            except OSError as exc:
                yield _unentered(found, _describe(exc, "directory could not be opened"))
                continue
            child_st = os.fstat(child_fd)
            if (child_st.st_dev, child_st.st_ino) != (st.st_dev, st.st_ino):
                os.close(child_fd)
                yield Found(rel, "dir", None, None, None, None, "replaced while planning")
                continue
            try:
                listing = os.scandir(child_fd)
            except OSError as exc:
                os.close(child_fd)
                yield _unentered(found, _describe(exc, "directory could not be listed"))
                continue
            stack.append((child_fd, rel + b"/", listing))
    finally:
        for fd, _prefix, entries in stack:
            entries.close()
            if fd >= 0:
                os.close(fd)


def _unentered(directory: Found, reason: str) -> Found:
    """A directory the walk saw but did not enter, with the reason (reported as UNKNOWN)."""
    return Found(directory.rel, "dir", None, directory.mtime_ns, directory.dev, directory.ino, reason)


def _describe(exc: OSError, fallback: str) -> str:
    if exc.errno == errno.ENOENT:
        return "vanished while planning"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    return f"{fallback} ({errno.errorcode.get(exc.errno or 0, 'error')})"


def open_nofollow(root_fd: int, rel: bytes) -> int:
    """Open ``rel`` below ``root_fd`` read-only, refusing a symlink in any component."""
    parts = rel.split(b"/")
    fd = os.dup(root_fd)
    try:
        for part in parts[:-1]:
            next_fd = os.open(part, DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = next_fd
        return os.open(parts[-1], _FILE_FLAGS, dir_fd=fd)
    finally:
        os.close(fd)


def sha256_of(root_fd: int, rel: bytes, *, expect: tuple[int, int, int, int] | None = None) -> str:
    """Stream-hash ``rel``; with ``expect`` = (dev, ino, size, mtime_ns) refuse a changed file.

    Raises ``OSError`` when the file cannot be read and ``ChangedError`` when it is not
    the object the walk saw.
    """
    fd = open_nofollow(root_fd, rel)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ChangedError("no longer a regular file")
        if expect is not None and (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns) != expect:
            raise ChangedError("changed while planning")
        digest = hashlib.sha256()
        while chunk := os.read(fd, _HASH_CHUNK):
            digest.update(chunk)
        return digest.hexdigest()
    finally:
        os.close(fd)


class ChangedError(Exception):
    """The object on disk is not the one that was examined earlier."""
