"""Writing a command's output file: whole or not at all, ``-`` for stdout.

A file the user names on a command line (an SBOM, a provenance predicate, keys) goes
through :func:`write`: the bytes go to a hidden temporary sibling that is renamed over the
target by ``terminai_apts.durable``, the package's one atomic writer, so a full disk, a
read-only directory or Ctrl-C leaves the old file or none, never a truncated one. Files
the tool places itself (the release directory, the verify cache, ``kube``'s folder) call
``durable.write`` directly: they have no ``-`` and no user-chosen name to check. Text is
encoded strictly: a lone surrogate (from non-UTF-8 input) is refused rather than written.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from terminai_apts import durable

from terminai_sandbox.errors import ConfigError

STDOUT = "-"


def is_stdout(path: Path | str) -> bool:
    return str(path) == STDOUT


def encode(text: str, what: str) -> bytes:
    """``text`` as UTF-8, refusing lone surrogates (non-UTF-8 bytes that came in through a path or argument)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ConfigError(
            f"{what} would contain text that is not valid UTF-8 ({exc.reason} at position {exc.start})",
            hint="an argument, file or environment variable holds bytes that are not UTF-8; pass UTF-8 text",
        ) from None


def write(path: Path | str, data: bytes | str, *, what: str = "the output", mode: int = 0o666) -> None:
    """Replace ``path`` with ``data`` atomically (``-``: write to stdout instead)."""
    body = encode(data, what) if isinstance(data, str) else data
    if is_stdout(path):
        sys.stdout.buffer.write(body)
        sys.stdout.flush()
        return
    target = Path(path)
    if target.is_dir():
        raise ConfigError(f"{target} is a directory", hint=f"name a file to write {what} to")
    durable.write(target, body, mode=mode)


def create(path: Path, data: bytes, *, what: str = "the output", mode: int = 0o666) -> None:
    """Write a new file ``path`` whole, refusing to replace one that exists (a key, say).

    The bytes are complete on disk before the name appears (written to a temporary sibling,
    then hard-linked to ``path``, which fails if ``path`` exists); a failure or Ctrl-C at
    any point leaves no file, not even an empty one.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.new")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise ConfigError(f"{path} already exists; refusing to overwrite {what}") from None
        durable.fsync_dir(path.parent)
    except OSError as exc:
        raise durable.name_in(exc, path) from None
    finally:
        tmp.unlink(missing_ok=True)
