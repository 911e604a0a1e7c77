"""What a path named on the command line must be, checked by ``stat`` before any work starts.

Shared by the click parameter types (:mod:`terminai_sandbox.cli.params`) and the launch
kernel's own option parser (:mod:`terminai_sandbox.launch.options`), so ``run --key FIFO``
and ``verify --key FIFO`` are refused alike. Standard library only (``os`` loads ``stat``):
a session start imports it. Nothing here opens a path, so a FIFO nobody writes cannot block.
A missing path is left to the caller, which knows whether it may be created.
"""

from __future__ import annotations

import os
import stat

from terminai_sandbox.errors import PathError

# How an empty path and '-' are refused, worded once for click's types and the kernel's parser.
EMPTY = "the path is empty ('')"
DASH = "'-' is not a file here: this option reads no standard input and writes no standard output"

SPECIAL = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}


def check_input(text: str, want: str = "file") -> None:
    """Refuse ``text`` unless it is missing or what the reader wants: a regular file
    (``want="file"``), a directory (``"dir"``) or either (``"any"``), and readable."""
    try:
        mode = os.stat(text).st_mode
    except FileNotFoundError:
        if os.path.islink(text):
            raise PathError(f"{text}: a symbolic link to a missing file", hint="point the link at a file") from None
        return
    except OSError as exc:
        raise PathError.from_os(exc) from None
    kind = stat.S_IFMT(mode)
    noun = "directory" if want == "dir" else "regular file"
    if kind in SPECIAL:
        raise PathError(f"{text} is {SPECIAL[kind]}, not a {noun}", hint=f"pass a {noun}")
    if want == "file" and stat.S_ISDIR(mode):
        raise PathError(f"{text} is a directory, not a file", hint="pass a file, not a directory")
    if want == "dir" and not stat.S_ISDIR(mode):
        raise PathError(f"{text} is a file, not a directory", hint="pass a directory")
    if not os.access(text, os.R_OK | (os.X_OK if stat.S_ISDIR(mode) else 0)):
        raise PathError(f"{text}: permission denied", hint="choose a location you may read")


def check_output(text: str) -> None:
    """Refuse ``text`` as a file to write: an existing directory, FIFO, socket or device, or
    a path whose directory does not exist."""
    try:
        mode: int | None = os.stat(text).st_mode
    except OSError:
        mode = None
    if mode is not None and stat.S_ISDIR(mode):
        raise PathError(f"{text} is a directory", hint="name a file to write, not a directory")
    if mode is not None and stat.S_IFMT(mode) in SPECIAL:
        raise PathError(f"{text} is {SPECIAL[stat.S_IFMT(mode)]}", hint="name a regular file to write")
    parent = os.path.dirname(text) or "."
    if not os.path.isdir(parent):
        raise PathError(f"{text}: its directory {parent} does not exist", hint="create the directory first")


def check_output_dir(text: str) -> None:
    """Refuse ``text`` as a directory to write into: an existing file, FIFO, socket or device,
    or a symbolic link to nothing (a missing directory is made by the caller)."""
    try:
        mode: int | None = os.stat(text).st_mode
    except OSError:
        mode = None
    if mode is not None and not stat.S_ISDIR(mode):
        what = SPECIAL.get(stat.S_IFMT(mode), "a file")
        raise PathError(f"{text} is {what}, not a directory", hint="name a directory to write into")
    if mode is None and os.path.islink(text):
        raise PathError(f"{text}: a symbolic link to nothing", hint="name a directory to write into")
