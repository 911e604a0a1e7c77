"""The seed's ``ThermalMemoryAPI`` calls, answered as seed 000's own code answers them.

Seed 000 runs one statement per call over its archive's ``memories`` table and hands out
its rows as ``Memory`` dataclasses. Here the same conditions run over the index's seed
view (``seed_rows``: id, date, tags, source and confidence as the archive stored them,
under its column affinities, and which texts were NULL) joined to the record's text, so
SQLite itself decides every ``LIKE``, ``BETWEEN``, ``>=`` and ``=`` on the stored values,
NULLs and wildcards included. Two things are ours, both written in docs/AGENT_API.md:

* the seed's ``search`` binds its date range and tags to the title match only (``OR``
  binds looser than ``AND``); we apply them to the whole match, as its docstring says;
* ``ORDER BY date DESC`` leaves ties to SQLite; we give them in the archive's own order
  for that statement (what the seed's SQLite returns), then newest index id first.

A query with a run of three or more characters between its wildcards is looked up in the
trigram index first when that run is in fewer than ``DENSE`` records (candidates, then
``LIKE`` decides); otherwise the date index is walked newest first until the page is full.
"""

# SQL here is assembled only from constant fragments; every value is a bound parameter.
# ruff: noqa: S608
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from terminai_apts.memory import query as q
from terminai_apts.memory.records import NULL_CONTENT, NULL_SUMMARY, NULL_TITLE
from terminai_apts.memory.shard import Shard

# Above this many trigram candidates, walking the date index is cheaper than sorting them.
DENSE = 5000
CAP = 100  # the seed's hard cap on search, grep and filter

_COLUMNS = (
    "s.uid, s.date,"
    f" CASE WHEN s.nulls & {NULL_TITLE} THEN NULL ELSE m.title END,"
    f" CASE WHEN s.nulls & {NULL_CONTENT} THEN NULL ELSE m.content END,"
    f" CASE WHEN s.nulls & {NULL_SUMMARY} THEN NULL ELSE m.summary END,"
    " s.tags, s.source, s.confidence, s.pos, s.id"
)
_TEXT_LIKE = f"((s.nulls & {NULL_CONTENT} = 0 AND m.content LIKE ?) OR (s.nulls & {NULL_TITLE} = 0 AND m.title LIKE ?))"
_ORDER = " ORDER BY s.date DESC, s.pos, s.id DESC"


@dataclass
class Memory:
    """Immutable memory record.

    As the seed's: a field, once set, cannot be set again (``AttributeError: Memory objects
    are immutable``); equality, ``repr`` and ``dataclasses.asdict`` are the dataclass's.
    """

    id: str
    date: str
    title: str
    content: str
    summary: str
    tags: list[str]
    source: str
    confidence: float

    def __setattr__(self, key: str, value: object) -> None:
        if hasattr(self, key):
            raise AttributeError("Memory objects are immutable")
        super().__setattr__(key, value)


def to_memory(row: Sequence[Any]) -> Memory:
    """A row as the seed's ``_row_to_memory`` makes it (tags split on commas, as written)."""
    tags = row[5].split(",") if row[5] else []
    return Memory(
        id=row[0],
        date=row[1],
        title=row[2],
        content=row[3],
        summary=row[4],
        tags=tags,
        source=row[6],
        confidence=row[7],
    )


@dataclass(frozen=True)
class Where:
    """Conditions of one seed statement: ``like`` is the ``LIKE`` pattern on title or content (None: none)."""

    like: str | None
    conditions: tuple[str, ...] = ()
    params: tuple[object, ...] = ()


def literal_run(pattern: str) -> str | None:
    """The longest run of 3+ characters between ``LIKE`` wildcards, which every match contains.

    SQLite reads a pattern as C text, up to its first NUL."""
    runs = [r for r in pattern.split("\x00", maxsplit=1)[0].replace("_", "%").split("%") if len(r) >= 3]
    return max(runs, key=len) if runs else None


def _source(shard: Shard, where: Where) -> tuple[str, list[str], list[object]]:
    conds: list[str] = []
    params: list[object] = []
    source = "seed_rows s JOIN memories m ON m.id = s.id"
    if where.like is not None:
        run = literal_run(where.like)
        if run is not None and _sparse(shard, run):
            source = "memories_tri t CROSS JOIN seed_rows s ON s.id = t.rowid JOIN memories m ON m.id = s.id"
            conds.append("memories_tri MATCH ?")
            params.append(q.trigram_phrase(run))
        conds.append(_TEXT_LIKE)
        params += [where.like, where.like]
    return source, [*conds, *where.conditions], [*params, *where.params]


def _sparse(shard: Shard, run: str) -> bool:
    phrase = q.trigram_phrase(run)
    found = shard.rows(
        "SELECT count(*) FROM (SELECT rowid FROM memories_tri WHERE memories_tri MATCH ? LIMIT ?)", [phrase, DENSE]
    )
    return int(found[0][0]) < DENSE


def _clause(conds: Sequence[str]) -> str:
    return " WHERE " + " AND ".join(conds) if conds else ""


def page(shards: Sequence[Shard], where: Where, limit: object, offset: object = 0) -> list[Memory]:
    """The matching rows in the seed's order, ``LIMIT limit OFFSET offset`` as SQLite reads them."""
    if len(shards) == 1:
        source, conds, params = _source(shards[0], where)
        sql = f"SELECT {_COLUMNS} FROM {source}{_clause(conds)}{_ORDER} LIMIT ? OFFSET ?"
        return [to_memory(r) for r in shards[0].rows(sql, [*params, limit, offset])]
    first, count = _window(shards, limit, offset)
    rows: list[Any] = []
    for shard in shards:
        source, conds, params = _source(shard, where)
        sql = f"SELECT {_COLUMNS} FROM {source}{_clause(conds)}{_ORDER} LIMIT ?"
        rows += shard.rows(sql, [*params, -1 if count < 0 else first + count])
    rows.sort(key=lambda r: (r[8] is not None, r[8] or 0, -r[9]))
    rows.sort(key=lambda r: sort_key(r[1]), reverse=True)
    chosen = rows[first:] if count < 0 else rows[first : first + count]
    return [to_memory(r) for r in chosen]


def count(shards: Sequence[Shard], where: Where) -> int:
    total = 0
    for shard in shards:
        source, conds, params = _source(shard, where)
        total += int(shard.rows(f"SELECT count(*) FROM {source}{_clause(conds)}", params)[0][0])
    return total


def by_id(shards: Sequence[Shard], memory_id: object) -> Memory | None:
    """The first row whose stored id ``= memory_id`` (the id column's affinity converts it)."""
    for shard in shards:
        sql = f"SELECT {_COLUMNS} FROM seed_rows s JOIN memories m ON m.id = s.id WHERE s.uid = ? LIMIT 1"
        rows = shard.rows(sql, [memory_id])
        if rows:
            return to_memory(rows[0])
    return None


def sort_key(value: object) -> tuple[int, Any]:
    """SQLite's order of values under the BINARY collation: NULL, numbers, text, blobs."""
    if value is None:
        return (0, 0)
    if isinstance(value, (int, float)):
        return (1, value)
    if isinstance(value, str):
        return (2, value)  # code point order is UTF-8 byte order
    return (3, bytes(value))  # type: ignore[call-overload]


def _window(shards: Sequence[Shard], limit: object, offset: object) -> tuple[int, int]:
    """``(first, count)`` of ``LIMIT limit OFFSET offset`` (count -1: no limit), as SQLite
    reads them: it raises for what it cannot bind or convert, a negative limit is none and a
    negative offset is 0."""
    shards[0].rows("SELECT 1 LIMIT ? OFFSET ?", [limit, offset])  # SQLite's own error for bad values
    count, first = (int(float(v)) if isinstance(v, (str, bytes)) else int(v) for v in (limit, offset))  # type: ignore[call-overload]
    return max(first, 0), count if count >= 0 else -1
