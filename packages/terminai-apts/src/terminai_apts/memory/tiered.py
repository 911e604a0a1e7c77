"""``TieredMemory``: one read-only archive over a journal's live index and its sealed quarters.

Quarterly compaction seals each closed quarter into ``cold/YYYY-Qn/shard.sqlite`` (ids
from :func:`store.shard_base`, so an id names its file); the live index
``ROOT/index.sqlite`` holds the open quarters. Every shard is opened ``immutable=1`` and
read-only like the live index; a call fans out to each file, newest first, and merges.

Merging is exact for counts, chronological orders, regex and substring search. Relevance
merges bm25 scores from separate files, whose term statistics differ, so the order across
files is a close approximation of one big index; ``plan`` names every file's plan.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from terminai_apts.errors import MemoryNotFound, MemoryQueryError, MemoryStoreError
from terminai_apts.memory import inputs, store
from terminai_apts.memory.api import MAX_ROWS, ThermalMemory, _Interrupted, digest, rank_cap
from terminai_apts.memory.records import Batch, Facet, Hit, Memory, Provenance, Results

LIVE_INDEX = "index.sqlite"
_OPEN_ATTEMPTS = 3
_Key = Callable[[Hit], tuple[object, ...]]
_ORDER_KEYS: dict[str, tuple[_Key, bool]] = {
    "relevance": (lambda h: (h.score, -h.id), False),
    "newest": (lambda h: (h.memory.date, h.id), True),
    "oldest": (lambda h: (h.memory.date, h.id), False),
}


def _sealed_shards(base: Path) -> list[Path]:
    """The sealed quarter shards under a journal directory, newest first."""
    return sorted(base.glob("cold/*/shard.sqlite"), reverse=True)


def _quarter_end(quarter: str) -> str:
    """The first instant after a ``YYYY-Qn`` quarter, as an ISO timestamp prefix."""
    year, q = int(quarter[:4]), int(quarter[-1])
    return f"{year + q // 4}-{q % 4 * 3 + 1:02d}-01"


class TieredMemory:
    """``TieredMemory(journal_root)``: the methods of :class:`ThermalMemory` over every tier.

    ``immutable=True`` opens the live index like the sealed shards (``memory/pinned.py``).
    """

    __slots__ = ("_budget_ms", "_sources")

    def __init__(self, root: str | Path, *, budget_ms: int = 2000, immutable: bool = False) -> None:
        base = Path(root)
        live = base / LIVE_INDEX
        self._budget_ms = budget_ms
        self._sources: list[tuple[str, ThermalMemory]] = []
        # Compaction seals a quarter into a new shard, then the live index is rebuilt
        # without it: opened between the two, the live index and a listing taken before
        # would both miss the quarter. A listing unchanged once every file is open (and
        # each file pinned or locked from then on) names one state of the journal.
        for _attempt in range(_OPEN_ATTEMPTS):
            shards = _sealed_shards(base)
            if not live.is_file() and not shards:
                raise MemoryStoreError(
                    f"{base} has no live index and no sealed quarter shards",
                    hint=f"build the live index: terminai-apts memory index {base}",
                )
            try:
                if live.is_file():
                    self._sources.append(("live", ThermalMemory(live, immutable=immutable, budget_ms=budget_ms)))
                for shard in shards:
                    self._sources.append((shard.parent.name, ThermalMemory(shard, immutable=True, budget_ms=budget_ms)))
            except Exception:
                self.close()
                raise
            if _sealed_shards(base) == shards:
                return
            self.close()
            self._sources = []
        raise MemoryStoreError(
            f"{base} kept changing while its tiers were opened (quarters being sealed)",
            hint="try again once the compaction has finished",
        )

    # ----------------------------------------------------------------- plumbing
    def _left(self, start: float, budget_ms: int | None) -> int:
        spent = (time.monotonic() - start) * 1000
        budget = self._budget_ms if budget_ms is None else inputs.number(budget_ms, "budget_ms")
        if budget is None or budget < 0:
            raise MemoryQueryError(f"budget_ms must not be negative, not {budget_ms}")
        return max(1, int(budget - spent))

    def _owner(self, memory_id: int) -> ThermalMemory | None:
        block = inputs.integer(memory_id, "memory id") >> store.SHARD_ID_BITS
        for name, mem in self._sources:
            if (name == "live" and block == 0) or (
                name != "live" and store.shard_base(name) >> store.SHARD_ID_BITS == block
            ):
                return mem
        return None

    @staticmethod
    def _merged(
        parts: list[tuple[str, Results]],
        hits: Sequence[Hit],
        start: float,
        *,
        total: int | None = None,
        truncated: bool = False,
        offset: int = 0,
    ) -> Results:
        totals = [r.total for _n, r in parts]
        summed = -1 if any(t < 0 for t in totals) else sum(totals)
        total = summed if total is None else total
        return Results(
            hits=tuple(hits),
            total=total,
            truncated=truncated or total < 0 or offset + len(hits) < total,
            elapsed_ms=round((time.monotonic() - start) * 1000, 3),
            plan="; ".join(f"{name}: {r.plan}" for name, r in parts),
            scanned_fraction=min((r.scanned_fraction for _n, r in parts), default=1.0),
        )

    # ----------------------------------------------------------------- queries
    def search(
        self,
        query: str,
        date_range: Sequence[str] | None = None,
        tags: Sequence[str] | str | None = None,
        limit: int = 20,
        offset: int = 0,
        *,
        order: str = "relevance",
        since: str | None = None,
        until: str | None = None,
        raw: bool = False,
        exhaustive: bool = False,
        budget_ms: int | None = None,
    ) -> Results:
        """:meth:`ThermalMemory.search` over every tier, merged; records are read for the survivors only."""
        order = inputs.order(order, tuple(_ORDER_KEYS))
        query = str(inputs.text(query, "query", nul_ok=True))
        tags = inputs.tags(tags)
        start = time.monotonic()
        lo, size = inputs.integer(offset, "offset"), inputs.limit(limit, MAX_ROWS)
        want = min(MAX_ROWS, lo + size)
        found: list[tuple[tuple[object, ...], int, int, float]] = []  # (sort key, tier, id, score)
        totals: list[int] = []
        plans: list[str] = []
        matches: list[str] = []
        # One ranking cap for the whole archive, spent newest tier first, as one index would.
        cap: int | None = None if exhaustive else rank_cap(str(query), raw)
        for tier, (name, mem) in enumerate(self._sources):
            mem._start(self._left(start, budget_ms))
            # Newest first: once `want` hits are newer than anything this sealed quarter can
            # hold, it only needs counting (the live index comes first and may hold old summaries).
            enough = (
                order == "newest"
                and name != "live"
                and sum(1 for f in found if str(f[0][0]) >= _quarter_end(name)) >= want
            )
            try:
                page, total, plan, match = mem._ranked(
                    str(query), date_range, tags, 0 if enough else want, 0, order, since, until, raw, exhaustive, cap
                )
                if cap is not None and order == "relevance":
                    cap = max(0, cap - total)
                dates = mem._dates([i for i, _s in page]) if order != "relevance" else {}
            except _Interrupted:
                page, total, plan, match, dates = [], -1, "budget", "", {}
            totals.append(total)
            plans.append(f"{name}: {plan}")
            matches.append(match)
            for mid, score in page:
                key = (float(score), -mid) if order == "relevance" else (dates.get(mid, ""), mid)
                found.append((key, tier, mid, float(score)))
        found.sort(key=lambda f: f[0], reverse=order == "newest")
        chosen = found[lo : lo + size]
        by_tier: dict[int, list[tuple[int, float]]] = {}
        for _key, tier, mid, score in chosen:
            by_tier.setdefault(tier, []).append((mid, score))
        hits: dict[tuple[int, int], Hit] = {}
        for tier, page in by_tier.items():
            mem = self._sources[tier][1]
            mem._start(self._left(start, budget_ms))
            try:
                hits.update(((tier, h.id), h) for h in mem._hits(matches[tier], page))
            except _Interrupted:
                totals[tier] = -1
        ordered = [hits[(tier, mid)] for _k, tier, mid, _s in chosen if (tier, mid) in hits]
        total = -1 if any(t < 0 for t in totals) else sum(totals)
        return Results(
            hits=tuple(ordered),
            total=total,
            truncated=total < 0 or lo + len(ordered) < total,
            elapsed_ms=round((time.monotonic() - start) * 1000, 3),
            plan="; ".join(f"{p} order={order}" for p in plans),
        )

    def count(
        self,
        query: str | None = None,
        *,
        since: str | None = None,
        until: str | None = None,
        tags: Sequence[str] | str | None = None,
        raw: bool = False,
        budget_ms: int | None = None,
    ) -> int:
        """Exact matches across every tier (-1 when the budget ran out)."""
        start = time.monotonic()
        counts = [
            mem.count(query, since=since, until=until, tags=tags, raw=raw, budget_ms=self._left(start, budget_ms))
            for _n, mem in self._sources
        ]
        return -1 if any(c < 0 for c in counts) else sum(counts)

    def _newest_first(
        self, call: Callable[[ThermalMemory, int, int], Results], limit: int, budget_ms: int | None
    ) -> Results:
        # Tiers are disjoint in time and visited newest first, so stopping at the limit is exact;
        # past it, one more match in any older tier is what proves the result truncated.
        start = time.monotonic()
        parts: list[tuple[str, Results]] = []
        hits: list[Hit] = []
        for name, mem in self._sources:
            full = len(hits) >= limit
            res = call(mem, 1 if full else limit - len(hits), self._left(start, budget_ms))
            parts.append((name, res))
            if full and (res.hits or res.truncated):
                return self._merged(parts, hits, start, total=-1, truncated=True)
            hits.extend(res.hits)
            if res.truncated:
                return self._merged(parts, hits, start, total=-1)
        return self._merged(parts, hits, start, total=len(hits))

    def grep(
        self,
        pattern: str,
        limit: int = 50,
        *,
        since: str | None = None,
        until: str | None = None,
        budget_ms: int | None = None,
    ) -> Results:
        """:meth:`ThermalMemory.grep` over every tier, newest first, one shared time budget."""
        return self._newest_first(
            lambda mem, n, left: mem.grep(pattern, n, since=since, until=until, budget_ms=left),
            inputs.limit(limit, MAX_ROWS),
            budget_ms,
        )

    def find(
        self,
        substring: str,
        limit: int = 20,
        *,
        since: str | None = None,
        until: str | None = None,
        budget_ms: int | None = None,
    ) -> Results:
        """:meth:`ThermalMemory.find` over every tier, newest first."""
        return self._newest_first(
            lambda mem, n, left: mem.find(substring, n, since=since, until=until, budget_ms=left),
            inputs.limit(limit, MAX_ROWS),
            budget_ms,
        )

    def filter(
        self,
        source: str | None = None,
        min_confidence: float | None = None,
        date_after: str | None = None,
        date_before: str | None = None,
        tags: Sequence[str] | str | None = None,
        limit: int = 20,
        *,
        kind: str | None = None,
        since: str | None = None,
        until: str | None = None,
        order: str = "newest",
        budget_ms: int | None = None,
    ) -> Results:
        """:meth:`ThermalMemory.filter` over every tier, merged by date."""
        start = time.monotonic()
        parts = [
            (
                name,
                mem.filter(
                    source,
                    min_confidence,
                    date_after,
                    date_before,
                    tags,
                    limit,
                    kind=kind,
                    since=since,
                    until=until,
                    order=order,
                    budget_ms=self._left(start, budget_ms),
                ),
            )
            for name, mem in self._sources
        ]
        key, reverse = _ORDER_KEYS[order if order in ("newest", "oldest") else "newest"]
        merged = sorted((h for _n, r in parts for h in r.hits), key=key, reverse=reverse)
        return self._merged(parts, merged[: inputs.limit(limit, MAX_ROWS)], start)

    def get(self, memory_id: int) -> Memory:
        """One record by id (the id names the tier that holds it); missing: :class:`MemoryNotFound`."""
        found = self.find_id(memory_id)
        if found is None:
            raise MemoryNotFound(f"no memory with id {memory_id}", hint="ids come from search, grep or filter")
        return found

    def find_id(self, memory_id: int) -> Memory | None:
        """One record by id, or None."""
        owner = self._owner(memory_id)
        return owner.find_id(memory_id) if owner is not None else None

    def around(self, memory_id: int, before: int = 3, after: int = 3) -> tuple[Memory, ...]:
        """The record and its neighbours in event time within its tier."""
        owner = self._owner(memory_id)
        return owner.around(memory_id, before, after) if owner is not None else ()

    def trace(self, memory_id: int) -> Provenance | None:
        """Provenance of a record (its tier, journal file:line, source, ingestion time)."""
        owner = self._owner(memory_id)
        return owner.trace(memory_id) if owner is not None else None

    def dupes(self, memory_id: int) -> tuple[Memory, ...]:
        """Records in any tier with the same normalised title and content."""
        centre = self.find_id(memory_id)
        if centre is None:
            return ()
        found: list[Memory] = []
        for _name, mem in self._sources:
            found.extend(mem.dupes_of(centre.content_hash, exclude=centre.id))
        return tuple(sorted(found, key=lambda m: m.id)[:MAX_ROWS])

    def facets(
        self,
        query: str | None = None,
        by: str = "month",
        *,
        since: str | None = None,
        until: str | None = None,
        budget_ms: int | None = None,
    ) -> tuple[Facet, ...]:
        """Per-tier facet counts, summed."""
        start = time.monotonic()
        sums: dict[str, int] = {}
        for _name, mem in self._sources:
            for facet in mem.facets(query, by, since=since, until=until, budget_ms=self._left(start, budget_ms)):
                sums[facet.key] = sums.get(facet.key, 0) + facet.count
        if by == "month":
            return tuple(Facet(key=k, count=c) for k, c in sorted(sums.items()))
        return tuple(
            Facet(key=k, count=c) for k, c in heapq.nsmallest(1000, sums.items(), key=lambda kv: (-kv[1], kv[0]))
        )

    def summarize(self, query: str, max_results: int = 5) -> str:
        """A short plain-text digest of the best matches across every tier."""
        return digest(query, self.search(query, limit=max(1, min(inputs.integer(max_results, "max_results"), 20))))

    def scan(
        self,
        *,
        since: str | None = None,
        until: str | None = None,
        query: str | None = None,
        max_chars: int = 40_000,
        max_batches: int = 50,
    ) -> Iterator[Batch]:
        """Bounded text batches, oldest tier first, at most ``max_batches`` in all."""
        left = max(1, min(inputs.integer(max_batches, "max_batches"), 1000))
        for _name, mem in reversed(self._sources):
            for batch in mem.scan(since=since, until=until, query=query, max_chars=max_chars, max_batches=left):
                yield batch
                left -= 1
                if left == 0:
                    return

    def close(self) -> None:
        """Release every file handle (the object is unusable afterwards)."""
        for _name, mem in self._sources:
            mem.close()

    def __enter__(self) -> TieredMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_memory(path: str | Path) -> ThermalMemory | TieredMemory:
    """An index file opens as :class:`ThermalMemory`, a journal directory as :class:`TieredMemory`."""
    return TieredMemory(path) if Path(path).is_dir() else ThermalMemory(path)


def open_for_run(path: str) -> ThermalMemory | TieredMemory:
    """:func:`open_memory` for a sandboxed run: every file ``immutable=1`` (SQLite takes no
    lock the run could hold against the writer) and pinned (a commit meanwhile is a clean
    error, see ``memory/pinned.py``)."""
    return TieredMemory(path, immutable=True) if Path(path).is_dir() else ThermalMemory(path, immutable=True)
