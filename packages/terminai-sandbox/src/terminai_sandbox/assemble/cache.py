"""A content-addressed cache of stage outputs, keyed by the plan's stage keys.

An entry is ``<stage>-<key>.tar`` in the cache directory; a key is a digest of everything
the stage declared (see :mod:`~terminai_sandbox.assemble.plan`), so an entry is valid as
long as it exists. Entries appear atomically and durably (``terminai_apts.durable``): a
build killed halfway leaves no half-written entry behind for the next one to trust.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from terminai_apts import durable

from terminai_sandbox.assemble.plan import Stage


class StageCache:
    """Stage outputs under ``root``; with ``root=None`` nothing is read or kept (``--no-cache``)."""

    def __init__(self, root: Path | None) -> None:
        self.root = root

    @property
    def enabled(self) -> bool:
        return self.root is not None

    def entry(self, stage: Stage) -> Path | None:
        """Where the output of ``stage`` lives (or will), or None when caching is off."""
        return None if self.root is None else self.root / f"{stage.name}-{stage.key}.tar"

    def lookup(self, stage: Stage) -> Path | None:
        entry = self.entry(stage)
        return entry if entry is not None and entry.is_file() else None

    def store(self, stage: Stage, produced: Path) -> Path:
        """Move ``produced`` into the cache as the output of ``stage``; return where it is now."""
        entry = self.entry(stage)
        if entry is None:
            return produced
        entry.parent.mkdir(parents=True, exist_ok=True)
        tmp = durable.temp_path(entry)
        try:
            shutil.move(produced, tmp)
            durable.replace(tmp, entry)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        return entry

    def scratch(self, work: Path, name: str) -> Path:
        """A directory for reusable downloads (wheelhouse, blobs): in the cache, else in ``work``."""
        where = (self.root if self.root is not None else work) / name
        where.mkdir(parents=True, exist_ok=True)
        return where
