"""Crash-safe JSON persistence: write a temp file, fsync it, atomically replace, fsync the dir."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from terminai_apts import durable
from terminai_apts.errors import EvolutionError, PathError


class PersistError(PathError, EvolutionError):
    """The store could not be written (read-only, full): exit 3 like any unusable location,
    and still an :class:`EvolutionError`, which the store catches to undo its in-memory change."""


def write_json_atomic(path: Path, data: Any) -> None:
    """Replace ``path`` with ``data`` so a crash leaves either the old or the new file whole."""
    payload = json.dumps(data, indent=2, sort_keys=True).encode("utf-8")
    try:
        durable.write(path, payload, mode=0o600)
    except OSError as exc:
        raise PersistError(
            f"could not write {path}: {exc.strerror or exc}",
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
