"""``ThermalMemory``: the read-only query API the restricted executor injects as ``thermal``.

One object over a sequence of shards, newest first: an index file is one shard; a journal
directory is its live index and its sealed quarters (:mod:`terminai_apts.memory.tiers`).
Each call is planned once (:mod:`terminai_apts.memory.planner`), run on every shard
under one deadline (:mod:`terminai_apts.memory.shard`, :mod:`terminai_apts.memory.fts`)
and merged here. No method exposes a connection or SQL; every method returns frozen
records, tuples, ints or strings, and the seed's calls a list of its frozen ``Memory``.

Merging is exact for counts, chronological orders, regex and substring search. Relevance
merges bm25 scores from separate files, whose term statistics differ, so the order across
files is a close approximation of one big index; ``plan`` names every file's plan.

A sandboxed run opens its memory with :func:`open_for_run`: every shard ``immutable=1``
and pinned (:mod:`terminai_apts.memory.pinned`), so the run holds no lock against the
writer and a change meanwhile is a clean error; the host's own reader (:func:`open_memory`)
opens ``mode=ro`` and keeps seeing commits.

About 500 lines: the query methods are each a short plan → shards → merge step, and
keeping them together keeps merging, ordering and de-duplication in one place.
"""

from __future__ import annotations

import functools
import heapq
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import ParamSpec, TypeVar

from terminai_apts.errors import MemoryNotFound, MemoryQueryError
from terminai_apts.memory import batches, fts, grams, inputs, matching, planner, seed, tiers
from terminai_apts.memory.planner import MAX_ROWS
from terminai_apts.memory.records import Batch, Facet, Hit, Memory, Provenance, Results
from terminai_apts.memory.shard import Shard, TimeUp, decode

_T = TypeVar("_T")
_P = ParamSpec("_P")


def _seed_call(method: Callable[_P, _T]) -> Callable[_P, _T]:
    """Where the seed's code fails (``min("5", 100)``, an unbindable value, ``None[:150]``),
    the call fails with a ``MemoryQueryError`` that says which call and why, never a raw
    ``TypeError`` or ``sqlite3`` error; where the seed answers, this answers the same."""

    @functools.wraps(method)
    def call(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        try:
            return method(*args, **kwargs)
        except (TypeError, ValueError, AttributeError, OverflowError, UnicodeError, sqlite3.Error) as exc:
            raise MemoryQueryError(
                f"thermal.{method.__name__}: {exc}",
                hint="the seed's calls take text queries and dates, lists of tags and int limits",
            ) from None

    return call


def _elapsed(start: float) -> float:
    return round((time.monotonic() - start) * 1000, 3)


@contextmanager
def _budgeted(what: str) -> Iterator[None]:
    try:
        yield
    except TimeUp:
        raise MemoryQueryError(
            f"{what} ran out of its time budget", hint="narrow it with since/until or pass a larger budget_ms"
        ) from None


class ThermalMemory:
    """Read-only, budgeted queries over a memory index or a journal's tiers.

    ``ThermalMemory(path, immutable=False, budget_ms=2000)``: ``path`` is an index file or a
    journal directory. ``search``, ``grep``, ``filter``, ``count``, ``summarize`` and ``get``
    are seed 000's ``ThermalMemoryAPI``: the same parameters, defaults, caps and strings, a
    ``list`` of its ``Memory`` dataclass with the values as the archive stored them
    (:mod:`terminai_apts.memory.seed`). Extensions, under their own names, answer over the
    index's event times with :class:`Results` (totals, plans, time windows): ``search_results``,
    ``ranked`` (bm25), ``count_results``, ``grep_results`` (regex on RE2), ``find``,
    ``filter_results``, ``record``, ``require``, ``around``, ``trace``, ``dupes``, ``facets``,
    ``scan``. Limits above 10,000 rows are refused; times accept ISO dates (date-only = whole
    day) or ``7d``-style offsets.
    """

    __slots__ = ("_budget_ms", "_shards")

    def __init__(self, path: str | Path, *, immutable: bool = False, budget_ms: int = 2000) -> None:
        self._shards: tuple[Shard, ...] = tuple(tiers.open_shards(path, immutable=immutable))
        self._budget_ms = budget_ms

    def _arm(self, budget_ms: object) -> tuple[float, float]:
        """``(start, deadline)`` of a call; every shard stops at the same deadline."""
        ms = planner.budget(budget_ms, self._budget_ms)
        start = time.monotonic()
        deadline = start + ms / 1000
        for shard in self._shards:
            shard.arm(deadline)
        return start, deadline

    def _owner(self, memory_id: object) -> tuple[Shard | None, Memory | None]:
        """The shard holding the record whose own id is ``memory_id``, and the record.

        Ids are strings (``"m85"``); an int is looked up as the text it spells, as the
        seed's ``WHERE id = ?`` on a TEXT column does (``85`` finds ``"85"``).
        """
        if isinstance(memory_id, int) and not isinstance(memory_id, bool):
            memory_id = str(inputs.integer(memory_id, "memory id", low=-inputs.INT64_MAX - 1))
        uid = str(inputs.text(memory_id, "memory id"))
        self._arm(None)
        with _budgeted("get"):
            for shard in self._shards:
                found = shard.find_uid(uid)
                if found is not None:
                    return shard, found
        return None, None

    # ----------------------------------------------------------------- the seed's calls
    # Each is seed 000's ThermalMemoryAPI method: its parameters, defaults, cap and falsy
    # checks, the stored values and its strings (terminai_apts.memory.seed).
    def _seed(self, what: str, call: Callable[[], _T]) -> _T:
        self._arm(None)
        with _budgeted(what):
            return call()

    @_seed_call
    def search(
        self,
        query: str,
        date_range: tuple[str, str] | None = None,
        tags: list[str] | None = None,
        limit: int = 20,
        offset: int = 0,
    ) -> list[seed.Memory]:
        """Full-text search: ``query`` as a ``LIKE '%query%'`` of content or title, newest first."""
        return self._search(query, date_range, tags, limit, offset)

    def _search(
        self, query: str, date_range: tuple[str, str] | None, tags: list[str] | None, limit: int, offset: int
    ) -> list[seed.Memory]:
        limit = min(limit, seed.CAP)
        conds: list[str] = []
        params: list[object] = []
        if date_range:
            bounds = list(date_range)
            if len(bounds) != 2:
                raise MemoryQueryError(
                    f"thermal.search: date_range has {len(bounds)} values, not 2",
                    hint='pass (start, end), e.g. ("2026-01-01", "2026-01-31")',
                )
            conds.append("s.date BETWEEN ? AND ?")
            params += bounds
        if tags:
            wanted = list(tags)
            conds.append("(" + " OR ".join("s.tags LIKE ?" for _ in wanted) + ")")
            params += [f"%{tag}%" for tag in wanted]
        where = seed.Where(f"%{query}%", tuple(conds), tuple(params))
        return self._seed("search", lambda: seed.page(self._shards, where, limit, offset))

    @_seed_call
    def grep(self, pattern: str, limit: int = 50) -> list[seed.Memory]:
        """The seed's "regex" search: ``.*`` and ``.+`` become ``LIKE`` wildcards, the rest is literal."""
        like_pattern = pattern.replace(".*", "%").replace(".+", "_%")
        limit = min(limit, seed.CAP)
        where = seed.Where(f"%{like_pattern}%")
        return self._seed("grep", lambda: seed.page(self._shards, where, limit))

    @_seed_call
    def filter(
        self,
        source: str | None = None,
        min_confidence: float | None = None,
        date_after: str | None = None,
        date_before: str | None = None,
        limit: int = 50,
    ) -> list[seed.Memory]:
        """Memories by metadata: equal source, confidence at least, dates from/to (as stored), newest first."""
        limit = min(limit, seed.CAP)
        conds: list[str] = []
        params: list[object] = []
        if source:
            conds.append("s.source = ?")
            params.append(source)
        if min_confidence is not None:
            conds.append("s.confidence >= ?")
            params.append(min_confidence)
        if date_after:
            conds.append("s.date >= ?")
            params.append(date_after)
        if date_before:
            conds.append("s.date <= ?")
            params.append(date_before)
        where = seed.Where(None, tuple(conds), tuple(params))
        return self._seed("filter", lambda: seed.page(self._shards, where, limit))

    @_seed_call
    def count(self, query: str | None = None) -> int:
        """Memories whose content or title is ``LIKE '%query%'`` (all of them without a query)."""
        where = seed.Where(f"%{query}%" if query else None)
        return self._seed("count", lambda: seed.count(self._shards, where))

    @_seed_call
    def summarize(self, query: str, max_results: int = 5) -> str:
        """The seed's digest: a header, then ``  [date] title`` and ``    summary[:150]...`` per memory."""
        memories = self._search(query, None, None, max_results, 0)
        if not memories:
            return f"No memories found matching '{query}'"
        lines = [f"Found {len(memories)} memories for '{query}':"]
        for m in memories:
            if m.summary is None:
                raise MemoryQueryError(
                    f"thermal.summarize: memory {m.id!r} has no summary (NULL), which the seed's summarize cannot show",
                    hint="use search() and print the fields you need",
                )
            lines.append(f"  [{m.date}] {m.title}")
            lines.append(f"    {m.summary[:150]}...")
        return "\n".join(lines)

    @_seed_call
    def get(self, memory_id: str) -> seed.Memory | None:
        """The memory whose stored id equals ``memory_id``, or None."""
        return self._seed("get", lambda: seed.by_id(self._shards, memory_id))

    # ----------------------------------------------------------------- full text
    def search_results(
        self,
        query: str,
        date_range: Sequence[str] | None = None,
        tags: Sequence[str] | str | None = None,
        limit: int = 20,
        offset: int = 0,
        *,
        order: str = "newest",
        since: str | None = None,
        until: str | None = None,
        raw: bool = False,
        exhaustive: bool = True,
        budget_ms: int | None = None,
    ) -> Results:
        """Extension: the seed's match (``query`` as a ``LIKE`` substring of title or content) as
        :class:`Results` over the index's event times, with totals and time windows.

        Newest first (same date: by id, descending), within ``date_range=(start, end)``
        (both days included) and with any of ``tags``; ``order="oldest"`` reverses it.
        ``order="relevance"`` is the word-based extension below (:meth:`ranked`).
        """
        if order == "relevance" or raw:
            return self.ranked(
                query,
                date_range,
                tags,
                limit,
                offset,
                order=order,
                since=since,
                until=until,
                raw=raw,
                exhaustive=exhaustive,
                budget_ms=budget_ms,
            )
        plan = planner.substring(query, date_range, tags, limit, offset, order=order, since=since, until=until)
        start, _deadline = self._arm(budget_ms)
        one = len(self._shards) == 1
        want, skip = (plan.limit, plan.offset) if one else (plan.offset + plan.limit, 0)
        found: list[tuple[tuple[str, int], int, int]] = []  # ((date, id), shard, id)
        totals: list[int] = []
        labels: list[str] = []
        how = f"like via trigram {plan.literal!r}" if plan.literal else "like (scan: no 3-character run to look up)"
        short = plan.literal is None and grams.exact_piece(plan.text) is not None
        # One pass reads the matches up to COUNT_CAP past the page: the page and the total
        # (-1 beyond it; count() gives it), so a common substring costs a page, not a pass
        # over all its matches. A short piece's bitmap counts every match at no cost.
        cap = plan.offset + plan.limit + planner.COUNT_CAP
        uncounted = False
        for n, shard in enumerate(self._shards):
            note = ""
            try:
                page, total = matching.like_search(shard, plan, want, skip, cap)
                uncounted = uncounted or total < 0
            except TimeUp:
                page, total, note = [], -1, " (budget)"
            used = "like via short-piece bitmap" if short and shard.ordered else how  # see matching.short_match
            labels.append(shard.label(f"{used} order={plan.order}{note}"))
            totals.append(total)
            found += [((date, mid), n, mid) for mid, date in page]
        if uncounted:
            labels.append(f"total not counted past {cap} matches: count() gives it")
        if not one:
            found.sort(key=lambda f: f[0], reverse=plan.order == "newest")
            found = found[plan.offset : plan.offset + plan.limit]
        hits = self._hits([(k, n, mid, 0.0) for k, n, mid in found], ["" for _ in self._shards], totals)
        total = -1 if any(t < 0 for t in totals) else sum(totals)
        return Results(
            hits=hits,
            total=total,
            truncated=total < 0 or plan.offset + len(hits) < total,
            elapsed_ms=_elapsed(start),
            plan="; ".join(labels),
        )

    def ranked(
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
        exhaustive: bool = True,
        budget_ms: int | None = None,
    ) -> Results:
        """Extension: word-based full-text search ranked by bm25 (title > tags > summary > content).

        Query text is quoted token by token (``PROJ-1234``, ``v2.1``, ``user's`` are plain
        words); all tokens must match, and if nothing does the query is relaxed to any token
        (``plan`` says so). ``raw=True`` passes FTS5 syntax (``NEAR``, ``*``, ``OR``) through.
        ``order`` is ``relevance``, ``newest`` or ``oldest``.

        Every match is scored, so the top ``limit`` are bm25's own. bm25 costs time per
        matching record and word (FTS5 cannot prune to the top k); ``exhaustive=False``
        trades exactness for time: a query matching more than ``RANK_CAP`` / words records
        is ranked within its newest that many matches (one cap for all shards, spent newest
        shard first), and one whose every word is in most records (bm25 cannot tell them
        apart) comes newest first; ``plan`` says which.
        """
        plan = planner.search(
            query,
            date_range,
            tags,
            limit,
            offset,
            order=order,
            since=since,
            until=until,
            raw=raw,
            exhaustive=exhaustive,
        )
        start, _deadline = self._arm(budget_ms)
        if plan.empty:
            return Results(hits=(), total=0, truncated=False, elapsed_ms=_elapsed(start), plan="empty-query")
        one = len(self._shards) == 1
        # One shard pages in SQL; several each give their first `want` and the merge pages.
        want, skip = (plan.limit, plan.offset) if one else (min(MAX_ROWS, plan.offset + plan.limit), 0)
        found: list[tuple[tuple[object, ...], int, int, float]] = []  # (sort key, shard, id, score)
        totals: list[int] = []
        labels: list[str] = []
        matches: list[str] = []
        cap: int | None = None if plan.exhaustive else plan.cap
        for n, shard in enumerate(self._shards):
            # Newest first: once `want` hits are newer than anything this shard can hold, it
            # only needs counting (the live index comes first and may hold old summaries).
            enough = (
                plan.order == "newest"
                and bool(shard.newest)
                and sum(1 for f in found if str(f[0][0]) >= shard.newest) >= want
            )
            try:
                page, total, label, match = fts.ranked(shard, plan, 0 if enough else want, skip, cap)
                if cap is not None and plan.order == "relevance":
                    cap = max(0, cap - total)
                # Dates order a chronological merge; one shard's page is already in order.
                dates = shard.dates([i for i, _s in page]) if plan.order != "relevance" and not one else {}
            except TimeUp:
                page, total, label, match, dates = [], -1, "budget", "", {}
            totals.append(total)
            labels.append(shard.label(f"{label} order={plan.order}"))
            matches.append(match)
            for mid, score in page:
                key = (float(score), -mid) if plan.order == "relevance" else (dates.get(mid, ""), mid)
                found.append((key, n, mid, float(score)))
        if not one:
            found.sort(key=lambda f: f[0], reverse=plan.order == "newest")
            found = found[plan.offset : plan.offset + plan.limit]
        hits = self._hits(found, matches, totals)
        total = -1 if any(t < 0 for t in totals) else sum(totals)
        return Results(
            hits=hits,
            total=total,
            truncated=total < 0 or plan.offset + len(hits) < total,
            elapsed_ms=_elapsed(start),
            plan="; ".join(labels),
        )

    def _hits(
        self, chosen: list[tuple[tuple[object, ...], int, int, float]], matches: list[str], totals: list[int]
    ) -> tuple[Hit, ...]:
        """Records and snippets for the chosen ``(key, shard, id, score)`` rows, read shard by shard."""
        by_shard: dict[int, list[tuple[int, float]]] = {}
        for _key, n, mid, score in chosen:
            by_shard.setdefault(n, []).append((mid, score))
        hits: dict[tuple[int, int], Hit] = {}
        for n, page in by_shard.items():
            try:
                hits.update(((n, h.memory.key), h) for h in fts.hits(self._shards[n], matches[n], page))
            except TimeUp:
                totals[n] = -1
        return tuple(hits[(n, mid)] for _k, n, mid, _s in chosen if (n, mid) in hits)

    def _verify(self, plan: planner.Match, budget_ms: int | None) -> Results:
        if plan.matcher is None:
            return Results(hits=(), total=0, truncated=False, elapsed_ms=0.0, plan=plan.label)
        start, deadline = self._arm(budget_ms)
        return matching.verify(self._shards, plan, plan.matcher, start, deadline)

    def count_results(
        self,
        query: str | None = None,
        date_range: Sequence[str] | None = None,
        tags: Sequence[str] | str | None = None,
        *,
        since: str | None = None,
        until: str | None = None,
        words: bool = False,
        raw: bool = False,
        budget_ms: int | None = None,
    ) -> int:
        """Extension: exact number of records :meth:`search_results` matches (-1: the time budget ran out).

        Without a query, the records in the window with any of the tags. Extensions:
        ``words=True`` counts records holding every word (the full-text index's notion),
        ``raw=True`` counts an FTS5 expression.
        """
        if query is not None and not words and not raw:
            like = planner.substring(query, date_range, tags, 0, since=since, until=until)
            self._arm(budget_ms)
            try:
                return sum(matching.like_count(shard, like) for shard in self._shards)
            except TimeUp:
                return -1
        plan = planner.count(query, date_range, tags, since=since, until=until, raw=raw)
        self._arm(budget_ms)
        try:
            return sum(fts.count(shard, plan) for shard in self._shards)
        except TimeUp:
            return -1

    # ----------------------------------------------------------------- substring and regex
    def grep_results(
        self,
        pattern: str,
        limit: int = 50,
        *,
        date_range: Sequence[str] | None = None,
        since: str | None = None,
        until: str | None = None,
        budget_ms: int | None = None,
    ) -> Results:
        """Extension: regular-expression search (case-insensitive) over ``title\nsummary\ncontent``.

        A match may span fields (``typo\n`` finds a title ending in "typo"). Patterns run on
        RE2, in time linear in the text; back-references and look-around fall back to
        Python ``re`` under a hard time limit (``plan`` names the engine). ``total`` is
        exact, or -1 with ``truncated`` when more than ``limit`` records match or the time
        budget ran out (the hits found so far are returned). A literal of 3+ characters
        every match must contain is looked up in the trigram index first.
        """
        return self._verify(planner.grep(pattern, limit, date_range=date_range, since=since, until=until), budget_ms)

    def find(
        self,
        substring: str,
        limit: int = 20,
        *,
        since: str | None = None,
        until: str | None = None,
        budget_ms: int | None = None,
    ) -> Results:
        """Case-insensitive exact substring search over ``title\nsummary\ncontent``, newest first."""
        return self._verify(planner.find(substring, limit, since=since, until=until), budget_ms)

    # ----------------------------------------------------------------- metadata
    def filter_results(
        self,
        date_after: str | None = None,
        date_before: str | None = None,
        tags: Sequence[str] | str | None = None,
        limit: int = 50,
        *,
        source: str | None = None,
        min_confidence: float | None = None,
        kind: str | None = None,
        since: str | None = None,
        until: str | None = None,
        order: str = "newest",
        budget_ms: int | None = None,
    ) -> Results:
        """Extension: records by metadata only, as :class:`Results` over event times, newest first:
        ``date_after``/``date_before`` are inclusive (as the seed's ``date >= ?``/``date <= ?``),
        ``tags`` keeps records with any of them."""
        plan = planner.filter_(
            date_after,
            date_before,
            tags,
            limit,
            source=source,
            min_confidence=min_confidence,
            kind=kind,
            since=since,
            until=until,
            order=order,
        )
        start, _deadline = self._arm(budget_ms)
        label = f"filter order={plan.order}" + (f" via tag {plan.tags[0]!r}" if len(plan.tags) == 1 else "")
        hits: list[Hit] = []
        totals: list[int] = []
        labels: list[str] = []
        for shard in self._shards:
            try:
                rows, total = shard.filter(plan)
                labels.append(shard.label(label))
            except TimeUp:
                rows, total = [], -1
                labels.append(shard.label("filter (budget)"))
            hits.extend(Hit(memory=decode(r)) for r in rows)
            totals.append(total)
        if len(self._shards) > 1:
            hits.sort(key=lambda h: (h.memory.timestamp, h.memory.key), reverse=plan.order == "newest")
            hits = hits[: plan.limit]
        total = -1 if any(t < 0 for t in totals) else sum(totals)
        return Results(
            hits=tuple(hits),
            total=total,
            truncated=total < 0 or len(hits) < total,
            elapsed_ms=_elapsed(start),
            plan="; ".join(labels),
        )

    def record(self, memory_id: str | int) -> Memory | None:
        """Extension: the full record (tier, origin, event time) whose id is ``memory_id``, or None."""
        return self._owner(memory_id)[1]

    def require(self, memory_id: str | int) -> Memory:
        """Extension: :meth:`record` that raises :class:`MemoryNotFound` (a ``LookupError``) instead of None."""
        found = self.record(memory_id)
        if found is None:
            raise MemoryNotFound(f"no memory with id {memory_id!r}", hint="ids come from search, grep or filter")
        return found

    def around(self, memory_id: str | int, before: int = 3, after: int = 3) -> tuple[Memory, ...]:
        """The record and its neighbours in event time (oldest first), within its shard."""
        older, newer = inputs.limit(before, MAX_ROWS), inputs.limit(after, MAX_ROWS)
        owner, centre = self._owner(memory_id)
        if centre is None or owner is None:
            return ()
        with _budgeted("around"):
            return owner.around(centre, older, newer)

    def trace(self, memory_id: str | int) -> Provenance | None:
        """Provenance of a record: tier, journal file:line or archive member, source, ingestion time."""
        owner, centre = self._owner(memory_id)
        if owner is None or centre is None:
            return None
        with _budgeted("trace"):
            return owner.trace(centre.key)

    def dupes(self, memory_id: str | int) -> tuple[Memory, ...]:
        """Other records, in any shard, with the same normalised title and content."""
        centre = self.record(memory_id)
        return self.dupes_of(centre.content_hash, exclude=centre.key) if centre is not None else ()

    def dupes_of(self, content_digest: str, *, exclude: int = 0) -> tuple[Memory, ...]:
        """Records whose normalised title and content hash to ``content_digest`` (``content_hash``)."""
        wanted = str(inputs.text(content_digest, "content digest"))
        skip = inputs.integer(exclude, "exclude")
        self._arm(None)
        with _budgeted("dupes"):
            found = [m for shard in self._shards for m in shard.dupes_of(wanted, skip)]
        return tuple(sorted(found, key=lambda m: m.key)[:MAX_ROWS])

    def facets(
        self,
        query: str | None = None,
        by: str = "month",
        *,
        since: str | None = None,
        until: str | None = None,
        budget_ms: int | None = None,
    ) -> tuple[Facet, ...]:
        """Counts of matching records per month, tag or source (largest first for tag/source)."""
        plan = planner.facets(query, by, since=since, until=until)
        self._arm(budget_ms)
        sums: dict[str, int] = {}
        # Partial buckets would read as real counts: running out of time refuses instead.
        with _budgeted("facets"):
            for shard in self._shards:
                for key, count in shard.facets(plan):
                    sums[key] = sums.get(key, 0) + count
        if plan.by == "month":
            return tuple(Facet(key=k, count=c) for k, c in sorted(sums.items()))
        return tuple(
            Facet(key=k, count=c) for k, c in heapq.nsmallest(1000, sums.items(), key=lambda kv: (-kv[1], kv[0]))
        )

    def scan(
        self,
        *,
        since: str | None = None,
        until: str | None = None,
        query: str | None = None,
        max_chars: int = 40_000,
        max_batches: int = 50,
    ) -> Iterator[Batch]:
        """Bounded text batches (oldest first) for sub-queries: ``[id] date title: summary`` lines."""
        plan = planner.scan(since=since, until=until, query=query, max_chars=max_chars, max_batches=max_batches)
        yield from batches.pack(self._scan_rows(plan), plan.chars, plan.batches)

    def _scan_rows(self, plan: planner.Scan) -> Iterator[batches.Row]:
        """Matching rows, oldest shard first, in id order, one page (and one time budget) at a time."""
        for shard in reversed(self._shards):
            last = 0
            while True:
                self._arm(None)
                with _budgeted("scan"):
                    rows = shard.scan_page(plan, last)
                if not rows:
                    break
                yield from (row[1:] for row in rows)  # the record's own id, as get() takes it
                last = rows[-1][0]

    def close(self) -> None:
        """Release every file handle (the object is unusable afterwards)."""
        for shard in self._shards:
            shard.close()

    def __enter__(self) -> ThermalMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_memory(path: str | Path) -> ThermalMemory:
    """The memory at ``path``: an index file, or a journal directory (its live index and sealed quarters)."""
    return ThermalMemory(path)


def open_for_run(path: str) -> ThermalMemory:
    """:func:`open_memory` for a sandboxed run (the executor's ``thermal`` factory): every
    shard ``immutable=1`` (SQLite takes no lock the run could hold against the writer) and
    pinned (a commit meanwhile is a clean error, see :mod:`terminai_apts.memory.pinned`)."""
    return ThermalMemory(path, immutable=True)
