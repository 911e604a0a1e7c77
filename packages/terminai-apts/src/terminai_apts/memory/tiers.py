"""Which shards a memory path names: one index file, or a journal's live index and sealed quarters.

Quarterly compaction seals each closed quarter into ``cold/YYYY-Qn/shard.sqlite`` (ids
from :func:`store.shard_base`, so an id names its file, and dates inside the quarter); the
live index ``ROOT/index.sqlite`` holds the open quarters (ids below ``2**32``) and every
summary, whatever its date. Sealed quarters open ``immutable=1`` and pinned; in a journal
(a directory with ``hot/``, ``warm/`` or archived chains) each is compared with its seal
(:mod:`terminai_apts.memory.seals`) when opened.
"""

from __future__ import annotations

import re
from pathlib import Path

from terminai_apts.errors import MemoryStoreError
from terminai_apts.memory import checks, seals, store
from terminai_apts.memory.shard import Shard

LIVE_INDEX = "index.sqlite"
_QUARTER = re.compile(r"\d{4}-Q[1-4]")
_OPEN_ATTEMPTS = 3


def quarter_end(quarter: str) -> str:
    """The first instant after a ``YYYY-Qn`` quarter, as an ISO timestamp prefix."""
    year, q = int(quarter[:4]), int(quarter[-1])
    return f"{year + q // 4}-{q % 4 * 3 + 1:02d}-01"


def sealed_shards(base: Path) -> list[Path]:
    """The sealed quarter shards under a journal directory, newest first."""
    return sorted(base.glob("cold/*/shard.sqlite"), reverse=True)


def open_shards(path: str | Path, *, immutable: bool = False) -> list[Shard]:
    """The shards behind ``path``, newest first: the file itself, or a journal directory's tiers.

    ``immutable=True`` opens the live index like the sealed quarters (pinned, no locks).
    Compaction seals a quarter into a new shard, then rebuilds the live index without it:
    opened between the two, the live index and a listing taken before would both miss the
    quarter. A listing unchanged once every file is open (and each file pinned or locked
    from then on) names one state of the journal; it is taken again up to
    ``_OPEN_ATTEMPTS`` times, then the journal is reported as changing.
    """
    base = Path(path)
    if not base.is_dir():
        return [Shard(base, immutable=immutable)]
    for _attempt in range(_OPEN_ATTEMPTS):
        sealed = sealed_shards(base)
        shards = _open_tiers(base, sealed, immutable=immutable)
        if sealed_shards(base) == sealed:
            return shards
        _close(shards)
    raise MemoryStoreError(
        f"{base} kept changing while its tiers were opened (quarters being sealed)",
        hint="try again once the compaction has finished",
    )


def _open_tiers(base: Path, sealed: list[Path], *, immutable: bool) -> list[Shard]:
    live = base / LIVE_INDEX
    if not live.is_file() and not sealed:
        raise MemoryStoreError(
            f"{base} has no live index and no sealed quarter shards",
            hint=f"build the live index: terminai-apts memory index {base}",
        )
    shards: list[Shard] = []
    journal = seals.is_journal(base)
    if journal:
        checks.refuse_changed(base)  # a query never answers from a journal verify refuses
    try:
        if live.is_file():
            check = seals.check_index(base, LIVE_INDEX) if journal else None
            shards.append(Shard(live, name="live", immutable=immutable, block=0, check=check))
        for file in sealed:
            quarter = file.parent.name
            if not _QUARTER.fullmatch(quarter):
                raise MemoryStoreError(
                    f"{file} is not in a quarter folder (cold/YYYY-Qn/)", hint="move it out of the journal's cold/"
                )
            block = store.shard_base(quarter) >> store.SHARD_ID_BITS
            check = seals.check_shard(base, f"cold/{quarter}/{file.name}") if journal else None
            shards.append(
                Shard(file, name=quarter, immutable=True, block=block, newest=quarter_end(quarter), check=check)
            )
    except Exception:
        _close(shards)
        raise
    return shards


def _close(shards: list[Shard]) -> None:
    for shard in shards:
        shard.close()
