"""Read the proxy's input files (the policy JSON, a test hosts file) only when they are regular files.

The host's reader (``terminai_sandbox.common.files``) is not importable in the image; this
is the same refusal in fewer words: opened without blocking (a FIFO never hangs the
proxy), checked with ``fstat`` on the descriptor that is then read, bounded, UTF-8.
"""

from __future__ import annotations

import os
import stat

from terminai_apts.egress.errors import PathError

TYPE_CHECKING = False  # not `from typing import ...`: a launch never imports typing
if TYPE_CHECKING:
    from pathlib import Path

LIMIT = 4 << 20  # a policy of thousands of patterns is a few hundred kilobytes


def read_input(path: Path, *, what: str, limit: int = LIMIT) -> str:
    """The UTF-8 text of ``what`` at ``path``, or a :class:`PathError` naming both."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except FileNotFoundError:
        raise PathError(f"{what} {path} does not exist", hint="check the path") from None
    except OSError as exc:
        raise PathError(f"{what} {path} cannot be read: {exc.strerror or exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise PathError(f"{what} {path} is not a regular file", hint="pass a regular file")
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(fd, 1 << 16):
            size += len(chunk)
            if size > limit:
                raise PathError(f"{what} {path} is larger than {limit} bytes", hint="pass the file the tool wrote")
            chunks.append(chunk)
    except OSError as exc:
        raise PathError(f"{what} {path} cannot be read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PathError(
            f"{what} {path} is not UTF-8 text (byte at offset {exc.start})", hint="save it as UTF-8"
        ) from None
