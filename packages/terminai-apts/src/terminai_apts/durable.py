"""Crash-safe file replacement: the one atomic-write helper of the toolset.

A reader sees either the old file or the new one, whole, whatever instant the writer dies
at: the data goes to a temporary file in the same directory, is fsync'd, renamed over the
target, and the directory is fsync'd so the rename itself survives a power loss. Used by
the memory journal, the SQLite index builder, the evolution store and the cleanup mover.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

# Temporary files handed out by temp_path and not yet renamed into place. A command-line
# boundary removes what is left here when a command fails or is interrupted (a writer that
# dies between temp_path and replace would otherwise leave a hidden sibling behind).
_pending: set[Path] = set()


@dataclass(slots=True)
class Change:
    """A file this process changed while tracking: its ``os.stat`` before the first change
    (None: it did not exist) and how many changes followed."""

    before: os.stat_result | None
    times: int = 1


# Files changed while a journal writer holds its lock (see memory.state).
_tracking: list[dict[Path, Change]] = []


def track() -> dict[Path, Change]:
    """Start recording the changes :func:`replace` and :func:`changing` report; returns the record."""
    _tracking.append({})
    return _tracking[-1]


def untrack() -> None:
    _tracking.clear()


def changing(path: Path) -> None:
    """Note, before it happens, that this process changes ``path`` (an append, an SQLite update)."""
    if not _tracking:
        return
    seen = _tracking[-1].get(path)
    if seen is not None:
        seen.times += 1
        return
    try:
        before: os.stat_result | None = os.stat(path)
    except FileNotFoundError:
        before = None
    _tracking[-1][path] = Change(before)


def fsync_dir(path: str | bytes | os.PathLike[str]) -> None:
    """Flush a directory's entries (a rename or link is durable only after this)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def temp_path(path: Path) -> Path:
    """The hidden sibling a writer of ``path`` prepares its new content in."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    _pending.add(tmp)
    return tmp


def discard_pending() -> None:
    """Remove every temporary file (and SQLite's sidecars of it) not renamed into place yet."""
    while _pending:
        tmp = _pending.pop()
        for leftover in (tmp, *(tmp.with_name(tmp.name + s) for s in ("-journal", "-wal", "-shm"))):
            with contextlib.suppress(OSError):  # a read-only or vanished directory: nothing was written there
                leftover.unlink(missing_ok=True)


def remove_leftovers(path: Path) -> list[Path]:
    """Remove what killed writers of ``path`` left behind; returns the removed files.

    A writer killed before its rename (``kill -9`` during a memory index build) leaves its
    :func:`temp_path` and SQLite's ``-journal`` beside it, up to the size of a whole new
    file, and nothing else would ever remove them. A leftover is a file of that name
    whose process is gone; files of a writer still running (another build) are kept.
    """
    prefix = f".{path.name}."
    removed: list[Path] = []
    try:
        names = os.listdir(path.parent)
    except OSError:
        return removed
    for name in names:
        if not name.startswith(prefix):
            continue
        pid, dot, rest = name[len(prefix) :].partition(".")
        if not (pid.isdigit() and dot and rest in ("tmp", "tmp-journal")):
            continue
        if int(pid) != os.getpid() and _running(int(pid)):
            continue
        leftover = path.parent / name
        leftover.unlink(missing_ok=True)
        removed.append(leftover)
    return removed


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # someone else's process (or a number no process can have: kept, to be safe)
    return True


def replace(tmp: Path, path: Path, *, directory: bool = True) -> None:
    """Make the finished file ``tmp`` become ``path``: flush it, rename it, fsync the directory.

    ``fdatasync``, not ``fsync``: it flushes the data and the size that reading it back
    needs, and leaves out only the times, which nothing restored after a crash relies on
    (a reader that finds other times runs the whole check, see ``memory.state``).
    ``directory=False`` leaves the rename to the filesystem's next commit: only for a file
    derived from one already durable, so a lost rename leaves its previous version whole.
    """
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fdatasync(fd)
    finally:
        os.close(fd)
    changing(path)
    os.replace(tmp, path)
    _pending.discard(tmp)
    if directory:
        fsync_dir(path.parent)


def write(path: Path, data: bytes, *, mode: int = 0o666, directory: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically and durably (``mode`` before the umask).

    The parent directory must exist; the temporary file is removed if anything fails, and
    the error propagates. ``directory``: see :func:`replace`.
    """
    tmp = temp_path(path)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        replace(tmp, path, directory=directory)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            name_in(exc, path)
        raise


def name_in(exc: OSError, path: Path) -> OSError:
    """``exc`` naming ``path`` when it names no file itself (``os.write`` on a full device
    names none): the error a user sees then says which file could not be written."""
    if exc.filename is None:
        exc.filename = os.fspath(path)
    return exc


def pending_target() -> Path | None:
    """The file a writer was preparing when it failed, if one only: what an error without a
    file name of its own is about (the hidden ``.NAME.PID.tmp`` sibling names it)."""
    if len(_pending) != 1:
        return None
    tmp = next(iter(_pending))
    name = tmp.name.removeprefix(".").removesuffix(".tmp")
    return tmp.with_name(name.rsplit(".", 1)[0])
