"""``shutil.which`` for POSIX, without importing :mod:`shutil`.

:mod:`shutil` imports ``fnmatch``, ``bz2``, ``lzma`` and ``zlib`` for its archive helpers,
~2.5 ms of CPU on every session start, where the launch kernel only looks commands up on
PATH (the engine CLI, ``runsc``). The rules are ``shutil.which``'s on POSIX, which a unit
test holds it to: a name with a directory part is checked as it is; otherwise each PATH
entry in order (an empty entry is the current directory, an empty PATH finds nothing), the
first existing, executable, non-directory file.

Part of the launch kernel: standard library only.
"""

from __future__ import annotations

import os


def which(cmd: str, path: str | None = None) -> str | None:
    """The file ``cmd`` names on ``path`` (default: the process's PATH), as ``shutil.which`` finds it."""
    if os.path.dirname(cmd):
        return cmd if _executable(cmd) else None
    if path is None:
        path = os.environ.get("PATH")
        if path is None:
            try:
                path = os.confstr("CS_PATH")
            except (AttributeError, ValueError):
                path = os.defpath
    if not path:  # PATH='' finds nothing; PATH=':' looks in the current directory
        return None
    seen: set[str] = set()
    for entry in os.fsdecode(path).split(os.pathsep):
        if entry in seen:
            continue
        seen.add(entry)
        name = os.path.join(entry, cmd)
        if _executable(name):
            return name
    return None


def _executable(name: str) -> bool:
    return os.path.exists(name) and os.access(name, os.F_OK | os.X_OK) and not os.path.isdir(name)
