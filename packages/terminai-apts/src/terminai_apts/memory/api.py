"""``ThermalMemory``: the read-only query API the restricted executor injects as ``thermal``.

Safety layers, in order: the file is opened ``mode=ro``, or ``immutable=1`` and pinned
to the version it opened (``memory/pinned.py``: sealed shards, and every file a sandboxed
run reads); the FTS5 tables are touched once (their constructor needs it) and then an
authorizer allows only reads, so even ``PRAGMA query_only=0``, ``ATTACH`` or temp tables
are refused; every call runs under a progress-handler deadline and returns partial results
flagged ``truncated`` instead of running long. No method exposes the connection or SQL;
every method returns frozen records, tuples, ints or strings.
"""

# SQL here is assembled only from constant fragments; every value is a bound parameter.
# ruff: noqa: S608
from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from terminai_apts.errors import MemoryNotFound, MemoryQueryError, MemoryStoreError
from terminai_apts.memory import inputs, pinned, termbits
from terminai_apts.memory import query as q
from terminai_apts.memory import regex as rx
from terminai_apts.memory.records import Batch, Facet, Hit, Memory, Provenance, Results, split_tags
from terminai_apts.memory.store import check_schema
from terminai_apts.memory.terms import Terms

MAX_ROWS = 100
# Matches (times query words: each word's postings are scored) beyond which relevance
# ranking is limited to the newest matches; about 3 ms of bm25 on the reference machine.
RANK_CAP = 3_000
SCORE = "bm25(f.memories_fts, 5.0, 2.0, 1.0, 3.0)"  # column weights: title, summary, content, tags
_COLS = (
    "m.id, m.date, m.recorded_at, m.title, m.content, m.summary, m.tags, m.source,"
    " m.confidence, m.kind, m.tier, m.origin, m.content_hash, m.superseded_by"
)
_ORDERS = ("relevance", "newest", "oldest")


class _Interrupted(Exception):
    """The call's time budget ran out inside SQLite."""


def _memory(row: Sequence[Any]) -> Memory:
    return Memory(
        id=row[0],
        date=row[1],
        recorded_at=row[2],
        title=row[3],
        content=row[4],
        summary=row[5],
        tags=split_tags(row[6]),
        source=row[7],
        confidence=float(row[8]),
        kind=row[9],
        tier=row[10],
        origin=row[11],
        content_hash=row[12],
        superseded_by=row[13],
    )


def rank_cap(query: str, raw: bool) -> int:
    """Matches one query may score with bm25: ``RANK_CAP`` shared among its words."""
    return max(1, RANK_CAP // (1 if raw else max(1, len(q.fts_tokens(query)))))


def digest(query: str, res: Results) -> str:
    """The text ``summarize`` returns: one line per best match, with its id."""
    if not res.hits:
        return f"No memories match {query!r}."
    lines = [f"{res.total} memories match {query!r}; top {len(res.hits)}:"]
    for hit in res.hits:
        m = hit.memory
        lines.append(f"- [{m.date[:10]}] {m.title} (#{m.id}): {(m.summary or m.content)[:200]}")
    return "\n".join(lines)


def _tag_list(tags: Sequence[str] | str | None) -> tuple[str, ...]:
    return split_tags(tags) if isinstance(tags, str) else tuple(t.strip().lower() for t in (tags or ()))


def _authorizer(action: int, arg1: str | None, arg2: str | None, _db: str | None, _trigger: str | None) -> int:
    if action in (sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ):
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() != "load_extension":
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA and arg1 == "data_version" and arg2 is None:
        return sqlite3.SQLITE_OK  # FTS5 reads it to detect changes
    return sqlite3.SQLITE_DENY


class ThermalMemory:
    """Read-only, budgeted queries over a memory index.

    ``ThermalMemory(path, immutable=False, budget_ms=2000)``. Methods: ``search`` (bm25,
    quoted query text, AND relaxed to OR when nothing matches), ``grep`` (regex: literal →
    trigram prefilter → ``re`` verify), ``find`` (substring), ``filter``, ``count``, ``get``,
    ``summarize``, ``around``, ``trace``, ``dupes``, ``facets``, ``scan``. Limits are capped
    at 100 rows; times accept ISO dates (date-only = whole day) or ``7d``-style offsets.
    """

    __slots__ = ("_bits_base", "_budget_ms", "_conn", "_deadline", "_ordered", "_terms")

    def __init__(self, path: str | Path, *, immutable: bool = False, budget_ms: int = 2000) -> None:
        target = Path(path).resolve()
        if not target.is_file():
            raise MemoryStoreError(
                f"memory index {target} does not exist", hint="build it with `terminai-apts memory index`"
            )
        try:
            conn = pinned.connect(target, immutable=immutable)
            check_schema(conn, target)
            # The FTS5 vtable constructor needs writes-looking internals: run it before the authorizer.
            conn.execute("SELECT rowid FROM memories_fts WHERE memories_fts MATCH 'x' LIMIT 0").fetchall()
            conn.execute("SELECT rowid FROM memories_tri WHERE memories_tri MATCH 'xyz' LIMIT 0").fetchall()
            row = conn.execute("SELECT value FROM meta WHERE key='ordered'").fetchone()
            base = conn.execute("SELECT value FROM meta WHERE key='bits_base'").fetchone()
        except sqlite3.DatabaseError as exc:
            raise MemoryStoreError(f"cannot open memory index {target}: {exc}", hint="rebuild the index") from None
        self._ordered = bool(row and row[0] == "1")
        self._bits_base = int(base[0]) if base else 1
        self._terms = Terms()
        conn.set_authorizer(_authorizer)
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        self._deadline = 0.0
        conn.set_progress_handler(self._tick, 2000)
        self._conn = conn
        self._budget_ms = budget_ms

    # ----------------------------------------------------------------- plumbing
    def _tick(self) -> int:
        return 1 if time.monotonic() > self._deadline else 0

    def _start(self, budget_ms: int | None) -> float:
        budget = self._budget_ms if budget_ms is None else inputs.number(budget_ms, "budget_ms")
        if budget is None or budget < 0:
            raise MemoryQueryError(f"budget_ms must not be negative, not {budget_ms}")
        start = time.monotonic()
        self._deadline = start + budget / 1000
        return start

    def _rows(self, sql: str, params: Sequence[object]) -> list[Any]:
        try:
            return self._conn.execute(sql, tuple(params)).fetchall()
        except sqlite3.OperationalError as exc:
            if "interrupted" in str(exc):
                raise _Interrupted from None
            if "fts5" in str(exc) or "syntax error" in str(exc) or "no such column" in str(exc):
                raise MemoryQueryError(
                    f"bad full-text query: {exc}", hint="drop raw=True to have the text quoted"
                ) from None
            raise MemoryStoreError(f"memory query failed: {exc}") from None

    @staticmethod
    def _limit(limit: object) -> int:
        return inputs.limit(limit, MAX_ROWS)

    def _window(
        self, since: str | None, until: str | None, date_range: Sequence[str] | None = None, col: str = "m"
    ) -> tuple[list[str], list[object]]:
        pair = inputs.date_range(date_range)
        if pair is not None:
            since, until = pair
        lo, hi = q.parse_bound(since, end=False), q.parse_bound(until, end=True)
        where: list[str] = []
        params: list[object] = []
        if lo is not None:
            where.append(f"{col}.date >= ?")
            params.append(lo)
        if hi is not None:
            where.append(f"{col}.date < ?")
            params.append(hi)
        return where, params

    def _scope(
        self,
        since: str | None,
        until: str | None,
        tags: Sequence[str] | str | None,
        id_col: str,
        date_range: Sequence[str] | None = None,
    ) -> tuple[list[str], list[object]]:
        """Conditions on ``id_col`` alone, so the FTS index (or a tag range) drives the query.

        Ids follow event time, so a date window is an id range found with two index probes
        (walking ``min(id)`` over a date range would visit every row in it). After a
        backfill (``ordered`` off) the window becomes a subquery on the date index.
        """
        pair = inputs.date_range(date_range)
        if pair is not None:
            since, until = pair
        where: list[str] = []
        params: list[object] = []
        if self._ordered:
            first, last = self._id_bounds(since, until)
            if first is not None:
                where.append(f"{id_col} >= ?")
                params.append(first)
            if last is not None:
                where.append(f"{id_col} <= ?")
                params.append(last)
        elif since is not None or until is not None:
            dates, values = self._window(since, until, col="d")
            where.append(f"{id_col} IN (SELECT d.id FROM memories d WHERE {' AND '.join(dates)})")
            params.extend(values)
        for tag in _tag_list(tags):
            where.append(f"{id_col} IN (SELECT id FROM memory_tags WHERE tag = ?)")
            params.append(tag)
        return where, params

    def _id_bounds(self, since: str | None, until: str | None) -> tuple[int | None, int | None]:
        """The first and last id of a date window (ids follow time), by two index probes."""
        lo, hi = q.parse_bound(since, end=False), q.parse_bound(until, end=True)
        first = last = None
        if lo is not None:
            row = self._rows("SELECT id FROM memories WHERE date >= ? ORDER BY date, id LIMIT 1", [lo])
            first = row[0][0] if row else 1 << 62
        if hi is not None:
            row = self._rows("SELECT id FROM memories WHERE date < ? ORDER BY date DESC, id DESC LIMIT 1", [hi])
            last = row[0][0] if row else -1
        return first, last

    def _stats_count(
        self, query: str, since: str | None, until: str | None, date_range: Sequence[str] | None
    ) -> int | None:
        """Exact AND count from the index's statistics, or None when FTS5 must count.

        One word over the whole index is its ``term_stats`` document frequency; words that
        all have a frequent-term bitmap are a popcount, in any date window.
        """
        pair = inputs.date_range(date_range)
        if pair is not None:
            since, until = pair
        if not self._ordered and (since is not None or until is not None):
            return None
        terms: list[str] = []
        for token in q.fts_tokens(query):
            found = self._terms(token[1:-1].replace('""', '"'))
            if len(found) != 1:
                return None  # a phrase (PROJ-1234 is "proj 1234"): FTS5 checks positions
            terms.append(found[0])
        unique = sorted(set(terms))
        if not unique:
            return None
        if len(unique) == 1 and since is None and until is None:
            row = self._rows("SELECT df FROM term_stats WHERE term = ?", unique)
            return int(row[0][0]) if row else 0
        rows = self._rows(f"SELECT bits FROM term_bits WHERE term IN ({','.join('?' * len(unique))})", unique)
        if len(rows) != len(unique):
            return None
        first, last = self._id_bounds(since, until)
        base = self._bits_base
        return termbits.count(
            [r[0] for r in rows], None if first is None else first - base, None if last is None else last - base
        )

    @staticmethod
    def _elapsed(start: float) -> float:
        return round((time.monotonic() - start) * 1000, 3)

    def _hydrate(self, ids: Sequence[int]) -> dict[int, Memory]:
        return {i: _memory(r) for i, r in self._records(ids).items()}

    def _records(self, ids: Sequence[int]) -> dict[int, Sequence[Any]]:
        marks = ",".join("?" * len(ids))
        return {r[0]: r for r in self._rows(f"SELECT {_COLS} FROM memories m WHERE m.id IN ({marks})", ids)}

    def _match_count(self, match: str, where: list[str], params: list[object]) -> int:
        """Exact matches counted by FTS5 from its doclists."""
        extra = "".join(f" AND {w}" for w in where)
        sql = f"SELECT count(*) FROM memories_fts f WHERE memories_fts MATCH ?{extra}"
        return int(self._rows(sql, [match, *params])[0][0])

    def _common(self, match: str, raw: bool) -> bool:
        """True when every query term is in more than half the records: bm25 then ranks nothing.

        FTS5 clamps a term's idf to ~0 once it is in over half the documents, so ranking
        such a query costs the most (every record matches) and orders by noise.
        """
        if raw:
            return False
        terms = self._terms(match.replace('"', " "))
        if not terms:
            return False
        # Two subqueries: min() and max() in one SELECT would lose SQLite's O(1) rowid shortcut.
        span = self._rows("SELECT (SELECT max(id) FROM memories) - (SELECT min(id) FROM memories) + 1", [])[0][0]
        half = (span or 0) / 2
        marks = ",".join("?" * len(terms))
        dfs = self._rows(f"SELECT df FROM term_stats WHERE term IN ({marks})", terms)
        return len(dfs) == len(terms) and all(df > half for (df,) in dfs)

    def _page(
        self,
        match: str,
        where: list[str],
        params: list[object],
        order: str,
        limit: int,
        offset: int,
    ) -> list[Any]:
        """(id, score) rows of one page; only the FTS index is read, never the content table.

        Joining ``memories`` here lets SQLite drive the loop from the content table and probe
        FTS5 once per row; ids in time order make ``rowid`` the chronological order.
        """
        scope = "".join(f" AND {w}" for w in where)
        if order == "relevance":
            return self._rows(
                f"SELECT f.rowid, {SCORE} AS score FROM memories_fts f WHERE memories_fts MATCH ?{scope}"
                " ORDER BY score LIMIT ? OFFSET ?",
                [match, *params, limit, offset],
            )
        if self._ordered:
            by = "f.rowid DESC" if order == "newest" else "f.rowid"
            return self._rows(
                f"SELECT f.rowid, 0.0 FROM memories_fts f WHERE memories_fts MATCH ?{scope}"
                f" ORDER BY {by} LIMIT ? OFFSET ?",
                [match, *params, limit, offset],
            )
        by = "m.date DESC, m.id DESC" if order == "newest" else "m.date, m.id"
        return self._rows(
            f"SELECT m.id, 0.0 FROM memories m WHERE m.id IN"
            f" (SELECT f.rowid FROM memories_fts f WHERE memories_fts MATCH ?{scope}) ORDER BY {by} LIMIT ? OFFSET ?",
            [match, *params, limit, offset],
        )

    def _snippets(self, match: str, ids: Sequence[int]) -> dict[int, str]:
        marks = ",".join("?" * len(ids))
        rows = self._rows(
            "SELECT rowid, snippet(memories_fts, -1, '[', ']', '…', 12) FROM memories_fts"
            f" WHERE memories_fts MATCH ? AND rowid IN ({marks})",
            [match, *ids],
        )
        return {r[0]: r[1] for r in rows}

    # ----------------------------------------------------------------- search
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
        """Full-text search ranked by bm25 (title > tags > summary > content).

        Query text is quoted token by token (``PROJ-1234``, ``v2.1``, ``user's`` are plain
        words); all tokens must match, and if nothing does the query is relaxed to any token
        (``plan`` says so). ``raw=True`` passes FTS5 syntax (``NEAR``, ``*``, ``OR``) through.
        ``order`` is ``relevance``, ``newest`` or ``oldest``.

        bm25 costs time per matching record and word (FTS5 cannot prune to the top k), so
        unless ``exhaustive=True`` a query matching more than ``RANK_CAP`` / words records
        is ranked within its newest that many matches, and one whose every word is in most
        records (bm25 cannot tell them apart) comes newest first; ``plan`` says which.
        """
        order = inputs.order(order, _ORDERS)
        query = str(inputs.text(query, "query", nul_ok=True))
        tags = inputs.tags(tags)
        start = self._start(budget_ms)
        limit, offset = self._limit(limit), inputs.integer(offset, "offset")
        plan = "fts"
        try:
            page, total, plan, match = self._ranked(
                str(query), date_range, tags, limit, offset, order, since, until, raw, exhaustive
            )
            hits = self._hits(match, page)
        except _Interrupted:
            return Results(hits=(), total=-1, truncated=True, elapsed_ms=self._elapsed(start), plan=f"{plan} (budget)")
        return Results(
            hits=hits,
            total=total,
            truncated=offset + len(hits) < total,
            elapsed_ms=self._elapsed(start),
            plan=plan if plan == "empty-query" else f"{plan} order={order}",
        )

    def _ranked(
        self,
        query: str,
        date_range: Sequence[str] | None,
        tags: Sequence[str] | str | None,
        limit: int,
        offset: int,
        order: str,
        since: str | None,
        until: str | None,
        raw: bool,
        exhaustive: bool,
        cap: int | None = None,
    ) -> tuple[list[Any], int, str, str]:
        """``(page of (id, score), total, plan, match)``: the search without its records.

        Kept apart from :meth:`_hits` so :class:`TieredMemory` reads records and snippets
        only for the hits that survive its merge, and can share one ranking ``cap`` (the
        matches bm25 may score; 0 counts only) across its files.
        """
        forms = [("fts-raw", query)] if raw else [("fts-and", q.fts_and(query)), ("fts-or", q.fts_or(query))]
        if not forms[0][1].strip():
            return [], 0, "empty-query", ""
        plan, total, page, match = forms[0][0], 0, [], forms[0][1]
        where, params = self._scope(since, until, tags, "f.rowid", date_range)
        for idx, (name, match) in enumerate(forms):
            if idx and (total or len(q.fts_tokens(query)) < 2):
                break
            plan = name if idx == 0 else f"{name} (relaxed: no record had every word)"
            counted = None if idx or raw or tags else self._stats_count(query, since, until, date_range)
            total = self._match_count(match, where, params) if counted is None else counted
            if not total or limit == 0:
                continue
            used, scope, values = order, list(where), list(params)
            if cap is None:
                cap = rank_cap(query, raw)
            if order == "relevance" and cap == 0:
                plan += " (counted only: the ranking cap was spent on newer files)"
                continue
            if order == "relevance" and total > cap and not exhaustive:
                if self._common(match, raw):
                    used = "newest"
                    plan += " (every word is in most records, so bm25 cannot rank them: newest first)"
                else:
                    scope.append("f.rowid >= ?")
                    values.append(self._nth_newest(match, where, params, cap))
                    plan += f" (ranked within newest {cap} of {total} matches)"
            page = self._page(match, scope, values, used, limit, offset)
        return page, total, plan, match

    def _hits(self, match: str, page: Sequence[Any]) -> tuple[Hit, ...]:
        ids = [r[0] for r in page]
        if not ids:
            return ()
        records, snippets = self._hydrate(ids), self._snippets(match, ids)
        return tuple(
            Hit(memory=records[i], score=float(score), snippet=snippets.get(i, "")) for i, score in page if i in records
        )

    def _dates(self, ids: Sequence[int]) -> dict[int, str]:
        marks = ",".join("?" * len(ids))
        return dict(self._rows(f"SELECT id, date FROM memories WHERE id IN ({marks})", ids)) if ids else {}

    def _nth_newest(self, match: str, where: list[str], params: list[object], n: int) -> int:
        scope = "".join(f" AND {w}" for w in where)
        return int(
            self._rows(
                f"SELECT f.rowid FROM memories_fts f WHERE memories_fts MATCH ?{scope}"
                " ORDER BY f.rowid DESC LIMIT 1 OFFSET ?",
                [match, *params, n - 1],
            )[0][0]
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
        """Exact number of records matching ``query`` (all tokens) or, without one, the filters (-1: budget)."""
        query = inputs.text(query, "query", optional=True, nul_ok=True)
        tags = inputs.tags(tags)
        self._start(budget_ms)
        try:
            if query is None or not str(query).strip():
                where, params = self._scope(since, until, tags, "m.id")
                clause = " WHERE " + " AND ".join(where) if where else ""
                return int(self._rows(f"SELECT count(*) FROM memories m{clause}", params)[0][0])
            match = str(query) if raw else q.fts_and(str(query))
            if not match.strip():
                return 0
            counted = None if raw or tags else self._stats_count(str(query), since, until, None)
            if counted is not None:
                return counted
            where, params = self._scope(since, until, tags, "f.rowid")
            return self._match_count(match, where, params)
        except _Interrupted:
            return -1

    # ----------------------------------------------------------------- substring and regex
    def _scan_candidates(self, literal: str | None, since: str | None, until: str | None) -> Iterator[Sequence[Any]]:
        """Candidate rows, newest first, in growing pages so no cursor outlives a call.

        With a literal the trigram index drives (its doclist is walked by rowid, newest
        first) and only candidate ids are read from the content table.
        """
        key = "t.rowid" if literal is not None else "m.id"
        where, params = self._scope(since, until, None, key)
        if literal is not None:
            where.insert(0, "memories_tri MATCH ?")
            params.insert(0, q.trigram_phrase(literal))
        where.append(f"{key} < ?")
        clause = " AND ".join(where)
        last, size = 1 << 62, 64
        while True:
            if literal is not None:
                sql = f"SELECT t.rowid FROM memories_tri t WHERE {clause} ORDER BY t.rowid DESC LIMIT ?"
                ids = [r[0] for r in self._rows(sql, [*params, last, size])]
                found = self._records(ids) if ids else {}
                batch = [found[i] for i in ids if i in found]
            else:
                sql = f"SELECT {_COLS} FROM memories m WHERE {clause} ORDER BY m.id DESC LIMIT ?"
                batch = self._rows(sql, [*params, last, size])
                ids = [r[0] for r in batch]
            if not ids:
                return
            yield from batch
            last, size = ids[-1], min(size * 4, 1000)

    def _match_scan(
        self,
        matcher: rx.Matcher,
        literal: str | None,
        limit: int,
        since: str | None,
        until: str | None,
        budget_ms: int | None,
        plan: str,
    ) -> Results:
        """Verify candidates (``title\nsummary\ncontent``, whole) with ``matcher``, newest first."""
        start = self._start(budget_ms)
        hits: list[Hit] = []
        try:
            with rx.hard_limit(matcher, self._deadline):
                for row in self._scan_candidates(literal, since, until):
                    if time.monotonic() > self._deadline:
                        raise _Interrupted
                    text = f"{row[3]}\n{row[5]}\n{row[4]}"
                    span = matcher.search(text)
                    if span is None:
                        continue
                    if len(hits) == limit:
                        # One match past the limit proves truncation; counting the rest would
                        # cost a full verification pass, so the total is reported as unknown.
                        return Results(
                            hits=tuple(hits),
                            total=-1,
                            truncated=True,
                            elapsed_ms=self._elapsed(start),
                            plan=f"{plan} (stopped at limit)",
                        )
                    snippet = text[max(0, span[0] - 40) : span[1] + 40]
                    hits.append(Hit(memory=_memory(row), snippet=snippet))
        except (_Interrupted, rx.RegexTimeout):
            return Results(
                hits=tuple(hits),
                total=-1,
                truncated=True,
                elapsed_ms=self._elapsed(start),
                plan=f"{plan} (budget: partial)",
                scanned_fraction=0.0,
            )
        return Results(hits=tuple(hits), total=len(hits), truncated=False, elapsed_ms=self._elapsed(start), plan=plan)

    def grep(
        self,
        pattern: str,
        limit: int = 50,
        *,
        since: str | None = None,
        until: str | None = None,
        budget_ms: int | None = None,
    ) -> Results:
        """Regular-expression search (case-insensitive) over ``title\nsummary\ncontent``.

        A match may span fields (``typo\n`` finds a title ending in "typo"). Patterns run on
        RE2, in time linear in the text; back-references and look-around fall back to
        Python ``re`` under a hard time limit (``plan`` names the engine). ``total`` is
        exact, or -1 with ``truncated`` when more than ``limit`` records match or the time
        budget ran out (the hits found so far are returned). A literal of 3+ characters
        every match must contain is looked up in the trigram index first.
        """
        matcher = rx.compile_pattern(pattern)
        limit = self._limit(limit)
        literal = rx.prefilter_literal(rx.required_literal(str(pattern)), backtracking=matcher.backtracking)
        plan = f"trigram-prefilter {literal!r} + {matcher.engine}" if literal else f"full-scan + {matcher.engine}"
        return self._match_scan(matcher, literal, limit, since, until, budget_ms, plan)

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
        needle = str(inputs.text(substring, "substring"))
        limit = self._limit(limit)
        if not needle:
            return Results(hits=(), total=0, truncated=False, elapsed_ms=0.0, plan="empty-query")
        literal = rx.prefilter_literal(needle, backtracking=False)
        plan = f"trigram {literal!r}" if literal else "full-scan (no 3-character ASCII run to look up)"
        return self._match_scan(rx.literal_matcher(needle), literal, limit, since, until, budget_ms, plan)

    # ----------------------------------------------------------------- metadata
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
        """Records by metadata only; ``date_after``/``date_before`` are exclusive bounds (as in the seed)."""
        order = inputs.order(order, ("newest", "oldest"))
        source = inputs.text(source, "source", optional=True)
        kind = inputs.text(kind, "kind", optional=True)
        confidence = inputs.number(min_confidence, "min_confidence")
        tags = inputs.tags(tags)
        limit = self._limit(limit)
        start = self._start(budget_ms)
        try:
            # A tag (or the whole table) drives the loop in id order, which is event-time order.
            tag_list = _tag_list(tags)
            drive = "memory_tags t JOIN memories m ON m.id = t.id" if tag_list else "memories m"
            key = "t.id" if tag_list else "m.id"
            where, params = self._scope(since, until, tag_list[1:], key)
            if tag_list:
                where.insert(0, "t.tag = ?")
                params.insert(0, tag_list[0])
            on_index = len(where)  # conditions so far need only the driving index, not the rows
            if date_after is not None:
                where.append("m.date > ?")
                params.append(q.normalize_date(date_after, what="date_after"))
            if date_before is not None:
                where.append("m.date < ?")
                params.append(q.normalize_date(date_before, what="date_before"))
            for column, value in (("m.source", source), ("m.kind", kind)):
                if value is not None:
                    where.append(f"{column} = ?")
                    params.append(value)
            if confidence is not None:
                where.append("m.confidence >= ?")
                params.append(confidence)
            clause = " WHERE " + " AND ".join(where) if where else ""
            direction = "DESC" if order == "newest" else ""
            by = f"{key} {direction}" if self._ordered else f"m.date {direction}, m.id {direction}"
            counted = drive if len(where) > on_index else drive.split(" JOIN ", maxsplit=1)[0]
            total = self._rows(f"SELECT count(*) FROM {counted}{clause}", params)[0][0]
            rows = self._rows(f"SELECT {_COLS} FROM {drive}{clause} ORDER BY {by} LIMIT ?", [*params, limit])
        except _Interrupted:
            return Results(hits=(), total=-1, truncated=True, elapsed_ms=self._elapsed(start), plan="filter (budget)")
        hits = tuple(Hit(memory=_memory(r)) for r in rows)
        return Results(
            hits=hits,
            total=total,
            truncated=len(hits) < total,
            elapsed_ms=self._elapsed(start),
            plan=f"filter order={order}" + (f" via tag {tag_list[0]!r}" if tag_list else ""),
        )

    def get(self, memory_id: int) -> Memory:
        """One record by id; a missing id raises :class:`MemoryNotFound` (a ``LookupError``)."""
        found = self.find_id(memory_id)
        if found is None:
            raise MemoryNotFound(f"no memory with id {memory_id}", hint="ids come from search, grep or filter")
        return found

    def find_id(self, memory_id: int) -> Memory | None:
        """One record by id, or None."""
        mid = inputs.integer(memory_id, "memory id")
        self._start(None)
        rows = self._rows(f"SELECT {_COLS} FROM memories m WHERE m.id = ?", [mid])
        return _memory(rows[0]) if rows else None

    def around(self, memory_id: int, before: int = 3, after: int = 3) -> tuple[Memory, ...]:
        """The record and its neighbours in event time (oldest first)."""
        centre = self.find_id(memory_id)
        if centre is None:
            return ()
        key = [centre.date, centre.id]
        older = self._rows(
            f"SELECT {_COLS} FROM memories m WHERE (m.date, m.id) < (?, ?) ORDER BY m.date DESC, m.id DESC LIMIT ?",
            [*key, self._limit(before)],
        )
        newer = self._rows(
            f"SELECT {_COLS} FROM memories m WHERE (m.date, m.id) > (?, ?) ORDER BY m.date, m.id LIMIT ?",
            [*key, self._limit(after)],
        )
        return (*(_memory(r) for r in reversed(older)), centre, *(_memory(r) for r in newer))

    def trace(self, memory_id: int) -> Provenance | None:
        """Provenance of a record: tier, journal file:line or archive member, source, ingestion time."""
        self._start(None)
        rows = self._rows(
            "SELECT id, uid, tier, origin, source, recorded_at, content_hash FROM memories WHERE id = ?",
            [inputs.integer(memory_id, "memory id")],
        )
        if not rows:
            return None
        r = rows[0]
        return Provenance(id=r[0], uid=r[1], tier=r[2], origin=r[3], source=r[4], recorded_at=r[5], content_hash=r[6])

    def dupes(self, memory_id: int) -> tuple[Memory, ...]:
        """Other records with the same normalised title and content."""
        mid = inputs.integer(memory_id, "memory id")
        self._start(None)
        rows = self._rows("SELECT content_hash FROM memories WHERE id = ?", [mid])
        return self.dupes_of(rows[0][0], exclude=mid) if rows else ()

    def dupes_of(self, content_digest: str, *, exclude: int = 0) -> tuple[Memory, ...]:
        """Records whose normalised title and content hash to ``content_digest`` (``content_hash``)."""
        self._start(None)
        rows = self._rows(
            f"SELECT {_COLS} FROM memories m WHERE m.content_hash = ? AND m.id != ? ORDER BY m.id LIMIT ?",
            [inputs.text(content_digest, "content digest"), inputs.integer(exclude, "exclude"), MAX_ROWS],
        )
        return tuple(_memory(r) for r in rows)

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
        keys = {"month": "substr(m.date, 1, 7)", "source": "m.source", "tag": "t.tag"}
        if not isinstance(by, str) or by not in keys:
            raise MemoryQueryError(f"facets by must be month, tag or source, not {by!r}"[:200])
        query = inputs.text(query, "query", optional=True, nul_ok=True)
        self._start(budget_ms)
        where, params = self._window(since, until)
        joins = " JOIN memory_tags t ON t.id = m.id" if by == "tag" else ""
        if query is not None and q.fts_and(str(query)):
            where.append("m.id IN (SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?)")
            params.append(q.fts_and(str(query)))
        clause = " WHERE " + " AND ".join(where) if where else ""
        ordering = "1" if by == "month" else "2 DESC, 1"
        try:
            rows = self._rows(
                f"SELECT {keys[by]}, count(*) FROM memories m{joins}{clause} GROUP BY 1 ORDER BY {ordering} LIMIT 1000",
                params,
            )
        except _Interrupted:
            # Partial buckets would read as real counts: refuse instead.
            raise MemoryQueryError(
                "facets ran out of its time budget", hint="narrow it with since/until or pass a larger budget_ms"
            ) from None
        return tuple(Facet(key=str(k), count=int(c)) for k, c in rows)

    def summarize(self, query: str, max_results: int = 5) -> str:
        """A short plain-text digest of the best matches: one line per record with its id."""
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
        """Bounded text batches (oldest first) for sub-queries: ``[id] date title: summary`` lines."""
        query = inputs.text(query, "query", optional=True, nul_ok=True)
        max_chars = inputs.integer(max_chars, "max_chars")
        max_batches = inputs.integer(max_batches, "max_batches")
        where, params = self._window(since, until)
        if query is not None and q.fts_and(str(query)):
            where.append("m.id IN (SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?)")
            params.append(q.fts_and(str(query)))
        cap = max(200, min(int(max_chars), 200_000))
        last, batches = 0, 0
        ids: list[int] = []
        parts: list[str] = []
        size = 0
        while batches < max(1, min(int(max_batches), 1000)):
            self._start(None)
            clause = " AND ".join([*where, "m.id > ?"])
            rows = self._rows(
                f"SELECT m.id, m.date, m.title, m.summary, m.content FROM memories m WHERE {clause}"
                " ORDER BY m.id LIMIT 500",
                [*params, last],
            )
            if not rows:
                break
            for mid, date, title, summary, content in rows:
                line = f"[{mid}] {date[:10]} {title}: {(summary or content)}"[:cap] + "\n"
                if size + len(line) > cap and parts:
                    yield Batch(ids=tuple(ids), text="".join(parts))
                    batches += 1
                    ids, parts, size = [], [], 0
                    if batches >= max_batches:
                        return
                ids.append(mid)
                parts.append(line)
                size += len(line)
            last = rows[-1][0]
        if parts and batches < max_batches:
            yield Batch(ids=tuple(ids), text="".join(parts))

    def close(self) -> None:
        """Release the file handle (the object is unusable afterwards)."""
        self._conn.close()
        self._terms.close()

    def __enter__(self) -> ThermalMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
