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

A query with a run of three or more characters between its wildcards is looked up in an
index first. A run holding a separator (a character that is neither letter nor digit) with
three characters on each side asks for its separator tokens (``memories_sep``, see
:mod:`terminai_apts.memory.separator_tokens`): the seven characters around each such
separator, which every record holding the run holds in its title or content. Any other run
asks the trigram index (``memories_tri``) for its two rarest trigrams (``tri_stats``). When
the candidates are fewer than ``DENSE`` they are put in the seed's order from ``seed_rows``
alone and ``LIKE`` decides them newest first, in growing batches, until the page is full;
otherwise the date index is walked newest first until it is. Both indexes fold case at
least as ``LIKE`` does (the trigram tokenizer over all of Unicode, the tokens over ASCII
as ``LIKE``): they name more records, never fewer, and ``LIKE`` drops the rest.
"""

# SQL here is assembled only from constant fragments; every value is a bound parameter.
# ruff: noqa: S608
from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass
from typing import Any

from terminai_apts.memory import grams, separator_tokens
from terminai_apts.memory.records import BLOB_CONTENT, BLOB_TITLE, LATER_ID, NULL_CONTENT, NULL_SUMMARY, NULL_TITLE
from terminai_apts.memory.shard import Shard

# Above this many trigram candidates, walking the date index is cheaper than sorting them.
DENSE = 5000
CAP = 100  # the seed's hard cap on search, grep and filter
# Trigrams of a run looked up in ``tri_stats``, at most: a bound parameter each, under
# SQLite's 32,766, and any two of the run's trigrams are a sound filter.
GRAMS = 512
TOKENS = 8  # separator tokens asked of one run: each is a posting list to read, and a few name few records
LIKE_LIMIT = 50_000  # SQLite's SQLITE_MAX_LIKE_PATTERN_LENGTH: a longer pattern is an error

_COLUMNS = (
    "s.uid, s.date,"
    f" CASE WHEN s.nulls & {NULL_TITLE} THEN NULL ELSE coalesce(s.title_raw, m.title) END,"
    f" CASE WHEN s.nulls & {NULL_CONTENT} THEN NULL ELSE coalesce(s.content_raw, m.content) END,"
    f" CASE WHEN s.nulls & {NULL_SUMMARY} THEN NULL ELSE coalesce(s.summary_raw, m.summary) END,"
    " s.tags, s.source, s.confidence, s.pos, s.id"
)
# A blob title or content is never ``LIKE`` anything where SQLite was built with
# LIKE_DOESNT_MATCH_BLOBS (Debian's, the image's); elsewhere it is read as its text.
with closing(sqlite3.connect(":memory:")) as _probe:
    _BLOBS_UNMATCHED = int(_probe.execute("SELECT NOT (CAST('a' AS BLOB) LIKE 'a')").fetchone()[0])
_CONTENT_OUT = NULL_CONTENT | BLOB_CONTENT * _BLOBS_UNMATCHED
_TITLE_OUT = NULL_TITLE | BLOB_TITLE * _BLOBS_UNMATCHED
_TEXT_LIKE = f"((s.nulls & {_CONTENT_OUT} = 0 AND m.content LIKE ?) OR (s.nulls & {_TITLE_OUT} = 0 AND m.title LIKE ?))"
_ORDER = " ORDER BY s.date DESC, s.pos, s.id DESC"
# How many ids the shard spans (about its records: ids are given in sequence); two
# subqueries, as one statement with both min and max would scan.
_SPAN = "SELECT coalesce((SELECT max(id) FROM seed_rows) - (SELECT min(id) FROM seed_rows) + 1, 0)"


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


def _source(shard: Shard, where: Where, sparse: tuple[str, str] | None = None) -> tuple[str, list[str], list[object]]:
    """FROM and WHERE of the seed's statement; ``sparse`` (a :func:`_plan` that found fewer
    than ``DENSE`` candidates) adds its MATCH."""
    conds: list[str] = []
    params: list[object] = []
    source = "seed_rows s JOIN memories m ON m.id = s.id"
    if where.like is not None:
        if sparse is not None:
            table, expression = sparse
            source = f"{table} t CROSS JOIN seed_rows s ON s.id = t.rowid JOIN memories m ON m.id = s.id"
            conds.append(f"{table} MATCH ?")
            params.append(expression)
        conds.append(_TEXT_LIKE)
        params += [where.like, where.like]
    return source, [*conds, *where.conditions], [*params, *where.params]


def _plan(shard: Shard, where: Where) -> tuple[tuple[str, str] | None, list[int] | None]:
    """``(MATCH, candidate ids)`` of the pattern when it has fewer than ``DENSE``, else ``(None, None)``;
    a pattern of one piece too short for a trigram has candidates but no MATCH."""
    if where.like is None:
        return None, None
    near = _near(shard, where.like)
    if near is None:
        return None, _piece_candidates(shard, where.like)
    ids = _candidates(shard, near)
    return (near, ids) if ids is not None else (None, None)


def _piece_candidates(shard: Shard, pattern: str) -> list[int] | None:
    """The records whose title or content holds the pattern's one or two characters
    (``ß``, ``go``: the short-piece bitmaps, folded as ``LIKE`` folds), newest id first;
    None when the pattern is not one such piece or they are ``DENSE`` or more."""
    piece = grams.exact_piece(pattern)
    if piece is None:
        return None
    top = shard.rows("SELECT max(id) FROM seed_rows")[0][0]
    if top is None:
        return []
    bits = grams.bitmap(shard.grams(piece), 0, top - shard.bits_base)
    if bits.bit_count() >= DENSE:
        return None
    return [shard.bits_base + offset for offset in grams.descending(bits)]


def _near(shard: Shard, pattern: str, dense: int | None = DENSE) -> tuple[str, str] | None:
    """``(table, MATCH)`` that every record holding the pattern's longest literal run
    matches (None: no run of 3, one SQLite cannot be given, or one word in ``dense``
    records or more, so common that walking the records is cheaper; ``dense`` None: in
    half of them).

    The run's separator tokens when it has any (``"cache timeout"``: ``che tim``; the first
    ``TOKENS`` of them, all of which a match holds), else its rarest trigram and the rarest
    not overlapping it (``kernel``: ``ker`` and ``nel``) in the trigram index, which also
    holds the summaries (so it names a few more).
    """
    run = literal_run(pattern)
    if run is None:
        return None
    try:
        if len(pattern.encode()) > LIKE_LIMIT:
            return None  # SQLite refuses the pattern on the first row it checks, as in the seed's scan
    except UnicodeEncodeError:
        return None  # a lone surrogate: the seed's own statement raises, so let it
    separated = separator_tokens.tokens(run)[:TOKENS]
    if separated:
        return "memories_sep", " AND ".join(f'"{t}"' for t in separated)
    trigrams: dict[str, tuple[str, int]] = {}  # folded (as tri_stats counts it): as written, first offset
    for i in range(len(run) - 2):
        if len(trigrams) == GRAMS:
            break
        trigrams.setdefault(run[i : i + 3].lower(), (run[i : i + 3], i))
    keys = sorted(trigrams)
    counts = dict(shard.rows(f"SELECT gram, df FROM tri_stats WHERE gram IN ({','.join('?' * len(keys))})", keys))
    first, *others = sorted(trigrams, key=lambda g: (counts.get(g, 0), trigrams[g][1]))
    if dense is None:
        dense = int(shard.rows(_SPAN)[0][0]) // 2
    if counts.get(first, 0) >= dense:
        return None
    apart = [g for g in others if abs(trigrams[g][1] - trigrams[first][1]) >= 3]
    chosen = [first, *(apart or others)[:1]]
    return "memories_tri", " AND ".join('"' + trigrams[g][0].replace('"', '""') + '"' for g in chosen)


def _candidates(shard: Shard, near: tuple[str, str]) -> list[int] | None:
    """The ids ``near`` matches, or None when there are ``DENSE`` or more (walk the date index)."""
    table, expression = near
    found = shard.rows(f"SELECT rowid FROM {table} WHERE {table} MATCH ? LIMIT ?", [expression, DENSE])
    return None if len(found) >= DENSE else [int(r[0]) for r in found]


def _rows(shard: Shard, where: Where, want: int) -> list[Any]:
    """Up to ``want`` matching rows of one shard in the seed's order (-1: all of them)."""
    _, ids = _plan(shard, where)
    if where.like is None or ids is None:
        source, conds, params = _source(shard, where)  # the date index, newest first
        sql = f"SELECT {_COLUMNS} FROM {source}{_clause(conds)}{_ORDER} LIMIT ?"
        return shard.rows(sql, [*params, want])
    marks = ",".join("?" * len(ids))
    # The candidates in the seed's order from the small seed rows (the seed's other
    # conditions are on them too), then LIKE on the records newest first, a batch at a time.
    order = shard.rows(
        f"SELECT s.id FROM seed_rows s{_clause([f's.id IN ({marks})', *where.conditions])}{_ORDER}",
        [*ids, *where.params],
    )
    out: list[Any] = []
    start, size = 0, 32
    while start < len(order) and (want < 0 or len(out) < want):
        batch = [r[0] for r in order[start : start + size]]
        sql = (
            f"SELECT {_COLUMNS} FROM seed_rows s JOIN memories m ON m.id = s.id"
            f" WHERE s.id IN ({','.join('?' * len(batch))}) AND {_TEXT_LIKE}"
        )
        matched = {r[9]: r for r in shard.rows(sql, [*batch, where.like, where.like])}
        out += [matched[i] for i in batch if i in matched]
        start, size = start + size, min(size * 4, 1024)
    return out if want < 0 else out[:want]


def _clause(conds: Sequence[str]) -> str:
    return " WHERE " + " AND ".join(conds) if conds else ""


def page(shards: Sequence[Shard], where: Where, limit: object, offset: object = 0) -> list[Memory]:
    """The matching rows in the seed's order, ``LIMIT limit OFFSET offset`` as SQLite reads them."""
    if len(shards) == 1 and not (_plain(limit) and _plain(offset) and all(map(_plain_param, where.params))):
        # Values SQLite converts or refuses: its own statement, so it raises what the seed's would.
        source, conds, params = _source(shards[0], where, _plan(shards[0], where)[0])
        sql = f"SELECT {_COLUMNS} FROM {source}{_clause(conds)}{_ORDER} LIMIT ? OFFSET ?"
        return [to_memory(r) for r in shards[0].rows(sql, [*params, limit, offset])]
    first, count = _window(shards, limit, offset)
    want = -1 if count < 0 or first + count >= 2**63 else first + count  # past SQLite's integers: all, then slice
    if len(shards) == 1:
        rows = _rows(shards[0], where, want)
    else:
        rows = [r for shard in shards for r in _rows(shard, where, want)]
        rows.sort(key=lambda r: (r[8] is not None, r[8] or 0, -r[9]))
        rows.sort(key=lambda r: sort_key(r[1]), reverse=True)
    chosen = rows[first:] if count < 0 else rows[first : first + count]
    return [to_memory(r) for r in chosen]


def _plain(value: object) -> bool:
    return type(value) is int and -(2**63) <= value < 2**63  # what SQLite binds as an integer


def _plain_param(value: object) -> bool:
    return value is None or type(value) in (str, float) or _plain(value)


def count(shards: Sequence[Shard], where: Where) -> int:
    total = 0
    for shard in shards:
        # Counting reads every match, so the candidates are cheaper than all records until
        # the run's rarest trigram is in half of them.
        near = _near(shard, where.like, dense=None) if where.like is not None else None
        pieces = _piece_candidates(shard, where.like) if where.like is not None and near is None else None
        source, conds, params = _source(shard, where, near)
        if pieces is not None:
            conds, params = [f"s.id IN ({','.join('?' * len(pieces))})", *conds], [*pieces, *params]
        total += int(shard.rows(f"SELECT count(*) FROM {source}{_clause(conds)}", params)[0][0])
    return total


def by_id(shards: Sequence[Shard], memory_id: object) -> Memory | None:
    """The row whose stored id ``= memory_id`` (the id column's affinity converts it) the
    archive's own ``WHERE id = ? LIMIT 1`` would give: of rows sharing it, the one not marked later."""
    sql = (
        f"SELECT {_COLUMNS}, s.nulls & {LATER_ID} FROM seed_rows s JOIN memories m ON m.id = s.id"
        f" WHERE s.uid = ? ORDER BY s.nulls & {LATER_ID} LIMIT 1"
    )
    found = [rows[0] for shard in shards if (rows := shard.rows(sql, [memory_id]))]
    chosen = next((row for row in found if not row[-1]), found[0] if found else None)
    return None if chosen is None else to_memory(chosen)


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
