"""One shard: a memory index file opened read-only and hardened, answering plans with rows.

A shard is one SQLite index (an imported archive, a journal's live index or a sealed
quarter). Safety layers, in order: the file is opened ``mode=ro``, or ``immutable=1`` and
pinned to the version it opened (sealed quarters, and every file a sandboxed run reads),
by :func:`connect`, the one place a connection is made; the FTS5 tables
are touched once (their constructor needs it) and then an authorizer allows only reads,
so even ``PRAGMA query_only=0``, ``ATTACH`` or temp tables are refused; every statement
runs under a progress-handler deadline (``TimeUp`` when it passes). Rows leave as frozen
records. Full-text queries on a shard are in :mod:`terminai_apts.memory.fts`.
"""

# SQL here is assembled only from constant fragments; every value is a bound parameter.
# ruff: noqa: S608
from __future__ import annotations

import heapq
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from terminai_apts.boundary import what_is
from terminai_apts.errors import MemoryQueryError, MemoryStoreError, ReadOnlyViolation
from terminai_apts.memory import pinned, planner
from terminai_apts.memory import query as q
from terminai_apts.memory.records import Memory, Provenance, split_tags
from terminai_apts.memory.store import check_schema
from terminai_apts.memory.terms import Terms

# The origin as written: stored whole, or as a shared prefix's number and the uid.
ORIGIN = (
    "CASE WHEN m.origin_uid THEN (SELECT p.prefix FROM origin_prefixes p WHERE p.n = m.origin_uid) || m.uid"
    " ELSE m.origin END"
)
COLUMNS = (
    "m.id, m.date, coalesce(m.recorded_at, m.date), m.title, m.content, m.summary, m.tags, m.source,"
    f" m.confidence, m.kind, m.tier, {ORIGIN}, lower(hex(m.content_hash)),"
    " (SELECT s.uid FROM memories s WHERE s.id = m.superseded_by), m.uid"
)
_FACET_KEYS = {"month": "substr(m.date, 1, 7)", "source": "m.source", "tag": "t.tag"}


class TimeUp(Exception):
    """The call's time budget ran out inside SQLite (or between candidate rows)."""


def decode(row: Sequence[Any]) -> Memory:
    """A ``COLUMNS`` row as a frozen :class:`Memory`."""
    return Memory(
        id=row[14],
        key=row[0],
        date=row[1][:10],
        timestamp=row[1],
        recorded_at=row[2],
        title=row[3],
        content=row[4],
        summary=row[5],
        tags=split_tags(row[6], fold=False),
        source=row[7],
        confidence=float(row[8]),
        kind=row[9],
        tier=row[10],
        origin=row[11],
        content_hash=row[12],
        superseded_by=row[13],
    )


def connect(path: Path, *, immutable: bool) -> sqlite3.Connection:
    """A read-only connection to the index file at ``path`` (resolved); nothing else is set here.

    ``mode=ro`` (SQLite's shared locks; sees the writer's commits), or ``immutable=1`` and
    pinned to the version it opened (no locks; a change meanwhile is a clean error), see
    :mod:`terminai_apts.memory.pinned`.
    """
    return pinned.connect(path, immutable=immutable)


def _authorizer(action: int, arg1: str | None, arg2: str | None, _db: str | None, _trigger: str | None) -> int:
    if action in (sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ):
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() != "load_extension":
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA and arg1 == "data_version" and arg2 is None:
        return sqlite3.SQLITE_OK  # FTS5 reads it to detect changes
    return sqlite3.SQLITE_DENY


def where(conditions: Sequence[str], joiner: str = " WHERE ") -> str:
    """``conditions`` joined with AND behind ``joiner`` (nothing when there are none)."""
    return joiner + " AND ".join(conditions) if conditions else ""


class Shard:
    """``Shard(path, name="", immutable=False)``: one index file, read-only.

    ``name`` labels its plans when several shards answer together (``live``, ``2024-Q1``);
    ``block`` is the id block (``id >> SHARD_ID_BITS``) of a journal's file (None: any id)
    and ``newest`` a date after all of a sealed quarter's own ("": unknown); ``check`` runs
    on the new connection before anything is read (a sealed shard's seal).
    """

    __slots__ = ("_conn", "_deadline", "bits_base", "block", "name", "newest", "ordered", "terms")

    def __init__(
        self,
        path: str | Path,
        *,
        name: str = "",
        immutable: bool = False,
        block: int | None = None,
        newest: str = "",
        check: Callable[[sqlite3.Connection], None] | None = None,
    ) -> None:
        target = Path(path).resolve()
        if not target.is_file():
            raise MemoryStoreError(
                f"memory index {path} {what_is(path)}", hint="build it with `terminai-apts memory index`"
            )
        try:
            conn = connect(target, immutable=immutable)
            try:
                if check is not None:
                    check(conn)  # an integrity check of the opened file (sealed shards: their seal)
            except BaseException:
                conn.close()
                raise
            check_schema(conn, target)
            # The FTS5 vtable constructor needs writes-looking internals: run it before the authorizer.
            conn.execute("SELECT rowid FROM memories_fts WHERE memories_fts MATCH 'x' LIMIT 0").fetchall()
            conn.execute("SELECT rowid FROM memories_tri WHERE memories_tri MATCH 'xyz' LIMIT 0").fetchall()
            conn.execute("SELECT rowid FROM memories_sep WHERE memories_sep MATCH 'x' LIMIT 0").fetchall()
            row = conn.execute("SELECT value FROM meta WHERE key='ordered'").fetchone()
            base = conn.execute("SELECT value FROM meta WHERE key='bits_base'").fetchone()
        except sqlite3.DatabaseError as exc:
            raise MemoryStoreError(f"cannot open memory index {target}: {exc}", hint="rebuild the index") from None
        self.name = name
        self.block = block  # the id block (id >> SHARD_ID_BITS) its ids live in; None: any
        self.newest = newest  # every date it holds is before this ("": unknown)
        self.ordered = bool(row and row[0] == "1")  # ids follow event time
        self.bits_base = int(base[0]) if base else 1
        self.terms = Terms()
        conn.set_authorizer(_authorizer)
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        self._deadline = 0.0
        conn.set_progress_handler(self._tick, 2000)
        self._conn = conn

    def label(self, plan: str) -> str:
        """A plan as reported: prefixed with the shard's name when it has one."""
        return f"{self.name}: {plan}" if self.name else plan

    # ----------------------------------------------------------------- plumbing
    def _tick(self) -> int:
        return 1 if time.monotonic() > self._deadline else 0

    def arm(self, deadline: float) -> None:
        """Statements from now on stop with :class:`TimeUp` once ``time.monotonic()`` passes ``deadline``."""
        self._deadline = deadline

    def check_time(self) -> None:
        if time.monotonic() > self._deadline:
            raise TimeUp

    def grams(self, piece: str) -> list[Any]:
        """``(block, df, bits)`` rows of a one- or two-character piece (:mod:`terminai_apts.memory.grams`)."""
        return self.rows("SELECT block, df, bits FROM grams WHERE gram = ?", [piece])

    def rows(self, sql: str, params: Sequence[object] = ()) -> list[Any]:
        try:
            return self._conn.execute(sql, tuple(params)).fetchall()
        except sqlite3.DatabaseError as exc:
            text = str(exc)
            if "not authorized" in text or "readonly" in text:
                # The authorizer refuses every statement that is not a read.
                raise ReadOnlyViolation(
                    f"memory index {self.name or 'live'}: a statement that writes was refused"
                ) from None
            if not isinstance(exc, sqlite3.OperationalError):
                raise  # the seed's own answers (a datatype mismatch) are mapped by the caller
            if "interrupted" in text:
                raise TimeUp from None
            if "fts5" in text or "syntax error" in text or "no such column" in text:
                raise MemoryQueryError(
                    f"bad full-text query: {exc}", hint="drop raw=True to have the text quoted"
                ) from None
            raise MemoryStoreError(f"memory query failed: {exc}") from None

    def close(self) -> None:
        """Release the file handle (the shard is unusable afterwards)."""
        self._conn.close()
        self.terms.close()

    # ----------------------------------------------------------------- time windows
    def dated(self, span: planner.Window, col: str = "m") -> tuple[list[str], list[object]]:
        """Conditions on ``col.date`` for a window (they read the rows or the date index)."""
        conds: list[str] = []
        params: list[object] = []
        if span.lo is not None:
            conds.append(f"{col}.date >= ?")
            params.append(span.lo)
        if span.hi is not None:
            conds.append(f"{col}.date < ?")
            params.append(span.hi)
        return conds, params

    def scope(self, span: planner.Window, tags: Sequence[str], id_col: str) -> tuple[list[str], list[object]]:
        """Conditions on ``id_col`` alone, so the FTS index (or a tag range) drives the query.

        Ids follow event time, so a date window is an id range found with two index probes
        (walking ``min(id)`` over a date range would visit every row in it). After a
        backfill (``ordered`` off) the window becomes a subquery on the date index.
        """
        conds: list[str] = []
        params: list[object] = []
        if self.ordered:
            first, last = self.id_bounds(span)
            if first is not None:
                conds.append(f"{id_col} >= ?")
                params.append(first)
            if last is not None:
                conds.append(f"{id_col} <= ?")
                params.append(last)
        elif span.bounded:
            dates, values = self.dated(span, col="d")
            conds.append(f"{id_col} IN (SELECT d.id FROM memories d{where(dates)})")
            params.extend(values)
        if tags:  # any of them, as the seed's OR of tag matches
            conds.append(f"{id_col} IN (SELECT id FROM memory_tags WHERE tag IN ({','.join('?' * len(tags))}))")
            params.extend(tags)
        return conds, params

    def id_bounds(self, span: planner.Window) -> tuple[int | None, int | None]:
        """The first and last id of a date window (ids follow time), by two index probes."""
        first = last = None
        if span.lo is not None:
            row = self.rows("SELECT id FROM memories WHERE date >= ? ORDER BY date, id LIMIT 1", [span.lo])
            first = row[0][0] if row else 1 << 62
        if span.hi is not None:
            row = self.rows("SELECT id FROM memories WHERE date < ? ORDER BY date DESC, id DESC LIMIT 1", [span.hi])
            last = row[0][0] if row else -1
        return first, last

    # ----------------------------------------------------------------- records
    def records(self, ids: Sequence[int]) -> dict[int, Sequence[Any]]:
        """``COLUMNS`` rows by id (missing ids are left out)."""
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        return {r[0]: r for r in self.rows(f"SELECT {COLUMNS} FROM memories m WHERE m.id IN ({marks})", ids)}

    def dates(self, ids: Sequence[int]) -> dict[int, str]:
        marks = ",".join("?" * len(ids))
        return dict(self.rows(f"SELECT id, date FROM memories WHERE id IN ({marks})", ids)) if ids else {}

    def find_id(self, memory_id: int) -> Memory | None:
        rows = self.rows(f"SELECT {COLUMNS} FROM memories m WHERE m.id = ?", [memory_id])
        return decode(rows[0]) if rows else None

    def find_uid(self, uid: str) -> Memory | None:
        """The record whose own (string) id is ``uid``, by the unique index on it."""
        rows = self.rows(f"SELECT {COLUMNS} FROM memories m WHERE m.uid = ?", [uid])
        return decode(rows[0]) if rows else None

    def around(self, centre: Memory, before: int, after: int) -> tuple[Memory, ...]:
        """``centre`` and its neighbours in event time (oldest first)."""
        key = [centre.timestamp, centre.key]
        older = self.rows(
            f"SELECT {COLUMNS} FROM memories m WHERE (m.date, m.id) < (?, ?) ORDER BY m.date DESC, m.id DESC LIMIT ?",
            [*key, before],
        )
        newer = self.rows(
            f"SELECT {COLUMNS} FROM memories m WHERE (m.date, m.id) > (?, ?) ORDER BY m.date, m.id LIMIT ?",
            [*key, after],
        )
        return (*(decode(r) for r in reversed(older)), centre, *(decode(r) for r in newer))

    def trace(self, memory_id: int) -> Provenance | None:
        rows = self.rows(
            f"SELECT m.id, m.uid, m.tier, {ORIGIN}, m.source, coalesce(m.recorded_at, m.date),"
            " lower(hex(m.content_hash))"
            " FROM memories m WHERE m.id = ?",
            [memory_id],
        )
        if not rows:
            return None
        r = rows[0]
        return Provenance(id=r[1], key=r[0], tier=r[2], origin=r[3], source=r[4], recorded_at=r[5], content_hash=r[6])

    def dupes_of(self, content_digest: str, exclude: int) -> tuple[Memory, ...]:
        try:
            digest = bytes.fromhex(content_digest)
        except ValueError:
            return ()  # not a hex digest: no record has it
        rows = self.rows(
            f"SELECT {COLUMNS} FROM memories m WHERE substr(m.content_hash, 1, 4) = ? AND m.content_hash = ?"
            " AND m.id != ? ORDER BY m.id LIMIT ?",
            [digest[:4], digest, exclude, planner.MAX_ROWS],
        )
        return tuple(decode(r) for r in rows)

    # ----------------------------------------------------------------- plans without full text
    def filter(self, plan: planner.Filter) -> tuple[list[Any], int]:
        """``(COLUMNS rows, total)`` in id (event-time) order; one tag drives the loop, several
        (any of them) are merged from the tag index, or one membership test when other
        metadata needs the rows."""
        if len(plan.tags) > 1 and self.ordered and (plan.source, plan.kind, plan.confidence) == (None, None, None):
            return self._any_tag(plan)
        one = len(plan.tags) == 1
        drive = "memory_tags t JOIN memories m ON m.id = t.id" if one else "memories m"
        key = "t.id" if one else "m.id"
        conds, params = self.scope(plan.window, () if one else plan.tags, key)
        if one:
            conds.insert(0, "t.tag = ?")
            params.insert(0, plan.tags[0])
        on_index = len(conds)  # conditions so far need only the driving index, not the rows
        for cond, value in (
            ("m.source = ?", plan.source),
            ("m.kind = ?", plan.kind),
            ("m.confidence >= ?", plan.confidence),
        ):
            if value is not None:
                conds.append(cond)
                params.append(value)
        clause = where(conds)
        direction = "DESC" if plan.order == "newest" else ""
        by = f"{key} {direction}" if self.ordered else f"m.date {direction}, m.id {direction}"
        counted = drive if len(conds) > on_index else drive.split(" JOIN ", maxsplit=1)[0]
        total = int(self.rows(f"SELECT count(*) FROM {counted}{clause}", params)[0][0])
        rows = self.rows(f"SELECT {COLUMNS} FROM {drive}{clause} ORDER BY {by} LIMIT ?", [*params, plan.limit])
        return rows, total

    def _any_tag(self, plan: planner.Filter) -> tuple[list[Any], int]:
        """Records with any of several tags: each tag's first ``limit`` ids in order, merged.

        Testing every record against the union (or sorting the union) costs a pass over
        all tagged records; the merge reads ``limit`` ids per tag and the page's rows.
        The total is counted up to ``COUNT_CAP`` past the page (-1 beyond).
        """
        first, last = self.id_bounds(plan.window)
        bounds, values = [], []
        if first is not None:
            bounds.append("id >= ?")
            values.append(first)
        if last is not None:
            bounds.append("id <= ?")
            values.append(last)
        newest = plan.order == "newest"
        direction = "DESC" if newest else ""
        lists = [
            [
                r[0]
                for r in self.rows(
                    f"SELECT id FROM memory_tags WHERE tag = ?{where(bounds, ' AND ')} ORDER BY id {direction} LIMIT ?",
                    [tag, *values, plan.limit],
                )
            ]
            for tag in plan.tags
        ]
        ids: list[int] = []
        for mid in heapq.merge(*lists, reverse=newest):
            if not ids or ids[-1] != mid:
                ids.append(mid)
            if len(ids) == plan.limit:
                break
        found = self.records(ids)
        cap = plan.limit + planner.COUNT_CAP
        marks = ",".join("?" * len(plan.tags))
        total = int(
            self.rows(
                f"SELECT count(*) FROM (SELECT DISTINCT id FROM memory_tags WHERE tag IN ({marks})"
                f"{where(bounds, ' AND ')} LIMIT ?)",
                [*plan.tags, *values, cap],
            )[0][0]
        )
        return [found[i] for i in ids if i in found], -1 if total >= cap else total

    def candidates(self, literal: str | None, span: planner.Window) -> Iterator[Sequence[Any]]:
        """``COLUMNS`` rows, newest first, in growing pages so no cursor outlives a call.

        With a literal the trigram index drives (its doclist is walked by rowid, newest
        first) and only candidate ids are read from the content table.
        """
        key = "t.rowid" if literal is not None else "m.id"
        conds, params = self.scope(span, (), key)
        if literal is not None:
            conds.insert(0, "memories_tri MATCH ?")
            params.insert(0, q.trigram_phrase(literal))
        clause = where([*conds, f"{key} < ?"], "")
        last, size = 1 << 62, 64
        while True:
            if literal is not None:
                sql = f"SELECT t.rowid FROM memories_tri t WHERE {clause} ORDER BY t.rowid DESC LIMIT ?"
                ids = [r[0] for r in self.rows(sql, [*params, last, size])]
                found = self.records(ids)
                batch = [found[i] for i in ids if i in found]
            else:
                sql = f"SELECT {COLUMNS} FROM memories m WHERE {clause} ORDER BY m.id DESC LIMIT ?"
                batch = self.rows(sql, [*params, last, size])
                ids = [r[0] for r in batch]
            if not ids:
                return
            yield from batch
            last, size = ids[-1], min(size * 4, 1000)

    def facets(self, plan: planner.Facets) -> list[tuple[str, int]]:
        """``(key, count)`` buckets, as SQL orders them (month ascending, else largest first)."""
        conds, params = self.dated(plan.window)
        joins = " JOIN memory_tags t ON t.id = m.id" if plan.by == "tag" else ""
        if plan.match is not None:
            conds.append("m.id IN (SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?)")
            params.append(plan.match)
        ordering = "1" if plan.by == "month" else "2 DESC, 1"
        rows = self.rows(
            f"SELECT {_FACET_KEYS[plan.by]}, count(*) FROM memories m{joins}{where(conds)}"
            f" GROUP BY 1 ORDER BY {ordering} LIMIT 1000",
            params,
        )
        return [(str(k), int(c)) for k, c in rows]

    def scan_page(self, plan: planner.Scan, after: int) -> list[tuple[int, str, str, str, str, str]]:
        """Up to 500 ``(key, id, date, title, summary, content)`` rows past key ``after``, in key order."""
        conds, params = self.dated(plan.window)
        if plan.match is not None:
            conds.append("m.id IN (SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?)")
            params.append(plan.match)
        return self.rows(
            f"SELECT m.id, m.uid, substr(m.date, 1, 10), m.title, m.summary, m.content"
            f" FROM memories m{where([*conds, 'm.id > ?'])}"
            " ORDER BY m.id LIMIT 500",
            [*params, after],
        )
