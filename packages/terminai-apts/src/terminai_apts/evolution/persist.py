"""Crash-safe JSON persistence: write a temp file, fsync it, atomically replace, fsync the dir."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from terminai_apts.errors import EvolutionError


def write_json_atomic(path: Path, data: Any) -> None:
    """Replace ``path`` with ``data`` so a crash leaves either the old or the new file whole."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    payload = json.dumps(data, indent=2, sort_keys=True).encode("utf-8")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, payload)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        # The rename itself is durable only once the directory entry is flushed.
        dfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise EvolutionError(
            f"could not persist {path.name}: {exc.strerror or exc}",
            hint=f"check that {path.parent} is writable and has free space",
        ) from exc


def read_json(path: Path, default: Any) -> Any:
    """Load ``path`` or return ``default`` when it does not exist yet."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return default
    except (OSError, ValueError) as exc:
        raise EvolutionError(f"cannot read {path}: {exc}", hint="restore the store directory from a backup") from exc
