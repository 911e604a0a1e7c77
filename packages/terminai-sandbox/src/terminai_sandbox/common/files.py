"""Read an input file only when it is what it claims to be: a regular file of bounded size.

``Path.read_text`` on a FIFO waits for a writer forever, on ``/dev/zero`` it fills memory,
and on a directory it fails with a message that does not say which input was wrong. The
build's inputs (``image.toml``, the locks, ``layers.lock``) and the user's settings file are
read here instead: the file is opened without blocking, checked with ``fstat`` on the
descriptor that is then read (so a swap between check and read changes nothing), and read
up to a limit.

:func:`read_regular` refuses with an :class:`OSError` naming the path; :func:`read_input`
turns every refusal into one :class:`~terminai_sandbox.errors.PathError` (exit 3, as
docs/EXIT_CODES.md has it for a directory where a file is expected), so every input says
which file it is, what is wrong with it and what to do, in the same words.
Standard library only: the launch kernel reads the settings file through it.
"""

from __future__ import annotations

import errno
import os
import stat

from terminai_sandbox.errors import PathError, SandboxError

TYPE_CHECKING = False  # not `from typing import ...`: a launch never imports typing
if TYPE_CHECKING:
    from pathlib import Path

#: The largest input read by default. The biggest real one, layers.lock, is ~2 MB.
DEFAULT_LIMIT = 64 << 20


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words a message can use."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def read_regular(path: Path, *, limit: int = DEFAULT_LIMIT) -> bytes:
    """The bytes of the regular file at ``path`` (symbolic links followed), at most ``limit``.

    Raises :class:`FileNotFoundError` when it is missing, :class:`IsADirectoryError` for a
    directory, and an :class:`OSError` (``EINVAL``) naming what it is for a FIFO, socket or
    device, (``EFBIG``) when it is larger than ``limit``; each names ``path``.
    """
    # O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting for one.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, f"{kind_of(mode)}, not a regular file", str(path))
        chunks: list[bytes] = []
        size = 0
        while size <= limit and (block := os.read(fd, min(1 << 20, limit + 1 - size))):
            chunks.append(block)
            size += len(block)
        if size > limit:
            shown = f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit >> 10} KiB"
            raise OSError(errno.EFBIG, f"larger than {shown}, too large for this input", str(path))
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_regular_text(path: Path, *, limit: int = DEFAULT_LIMIT) -> str:
    """:func:`read_regular` decoded as UTF-8 (:class:`UnicodeDecodeError` when it is not)."""
    return read_regular(path, limit=limit).decode("utf-8")


_HINTS = {
    "a directory": "pass a file, not a directory",
    "a FIFO": "pass a regular file, not a FIFO",
    "a socket": "pass a regular file",
    "a device": "pass a regular file",
}


def read_input(path: Path, *, what: str, missing: SandboxError | None = None, limit: int = DEFAULT_LIMIT) -> str:
    """The UTF-8 text of the input ``what`` (``"the image spec"``) at ``path``.

    A missing file raises ``missing`` when given (a caller with a better remedy, such as
    "create it with ..."), else a :class:`PathError`; a directory, FIFO, socket, device, an
    unreadable or oversized file, or bytes that are not UTF-8 raise a :class:`PathError`
    whose message names ``what`` and ``path``.
    """
    try:
        raw = read_regular(path, limit=limit)
    except FileNotFoundError:
        if os.path.lexists(path):  # a link to nothing is a mistake of its own, not an absent input
            raise PathError(
                f"{what} {path} is a symbolic link to a missing file",
                hint="restore the file it points to, or replace the link with the file",
            ) from None
        if missing is not None:
            raise missing from None
        raise PathError(
            f"{what} {path} does not exist", hint="check the path; the parent directory must exist"
        ) from None
    except OSError as exc:
        try:
            kind = kind_of(os.stat(path).st_mode)
        except OSError:
            kind = ""
        if kind in _HINTS:
            raise PathError(f"{what} {path} is {kind}, not a file", hint=_HINTS[kind]) from None
        refused = PathError.from_os(exc)
        raise PathError(f"{what} {path} cannot be read: {exc.strerror or exc}", hint=refused.hint) from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PathError(
            f"{what} {path} is not UTF-8 text (byte at offset {exc.start})", hint="save it as UTF-8"
        ) from None
