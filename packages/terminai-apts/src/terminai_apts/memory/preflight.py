"""Checks a memory path before a sandboxed run depends on it.

The executor opens ``thermal`` inside the hardened child, where a failure can only read
"injected API unavailable". The host side calls :func:`check_openable` first so the user
learns what the file is and the exact command that fixes it.
"""

from __future__ import annotations

import os
import shlex
import tempfile
from collections.abc import Callable
from pathlib import Path

from terminai_apts.errors import MemoryStoreError
from terminai_apts.memory import store
from terminai_apts.memory.api import open_memory


def _writable(folder: Path) -> bool:
    return os.access(folder, os.W_OK)


def index_path(archive: Path, *, writable: Callable[[Path], bool] = _writable) -> Path:
    """Where to put an archive's index: next to it, or in the temp directory when that is read-only."""
    folder = archive.parent if writable(archive.parent) else Path(tempfile.gettempdir())
    return folder / f"{archive.stem}.index.sqlite"


def import_command(archive: Path) -> str:
    """The command that turns an archive in the original schema into an index (see :func:`index_path`)."""
    index = index_path(archive)
    return f"terminai-apts memory index {shlex.quote(str(index))} --archive {shlex.quote(str(archive))}"


def check_openable(path: str | Path) -> None:
    """Open (and close) the memory at ``path`` as the child will, or raise a MemoryStoreError saying why.

    An archive in the original schema (``memories(id, date, title, ...)`` without the
    index tables) is named as such, with the import command to run.
    """
    target = Path(path)
    if target.is_file() and store.is_legacy_archive(target):
        index = index_path(target)
        raise MemoryStoreError(
            f"{target} is an archive in the original schema; the sandbox reads a memory index",
            hint=f"import it once, then pass the index: {import_command(target)} && "
            f"terminai-apts exec --db {shlex.quote(str(index))}",
        )
    open_memory(target).close()
