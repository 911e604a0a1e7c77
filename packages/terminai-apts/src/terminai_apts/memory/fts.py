"""Full-text plans on one shard: exact counts, bm25 pages under the ranking cap, snippets.

Pages read only the FTS5 index (ids and scores); records and snippets are read afterwards
for the hits that survive a merge across shards (:func:`hits`).
"""

# SQL here is assembled only from constant fragments; every value is a bound parameter.
# ruff: noqa: S608
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from terminai_apts.memory import planner, termbits
from terminai_apts.memory import query as q
from terminai_apts.memory.records import Hit
from terminai_apts.memory.shard import Shard, decode, where

SCORE = "bm25(f.memories_fts, 5.0, 2.0, 1.0, 3.0)"  # column weights: title, summary, content, tags


def ranked(
    shard: Shard, plan: planner.Search, limit: int, offset: int, cap: int | None = None
) -> tuple[list[Any], int, str, str]:
    """``(page of (id, score), total, plan, match)``: the search on ``shard`` without its records.

    ``cap`` is the number of matches bm25 may score (default: the plan's; 0 counts only), so
    several shards can share one cap, spent newest shard first.
    """
    if plan.empty:
        return [], 0, "empty-query", ""
    label, total, page, match = plan.forms[0][0], 0, [], plan.forms[0][1]
    conds, params = shard.scope(plan.window, plan.tags, "f.rowid")
    for idx, (name, match) in enumerate(plan.forms):
        if not plan.tries(idx, total):
            break
        label = name if idx == 0 else f"{name} (relaxed: no record had every word)"
        counted = statistics_count(shard, plan.text, plan.window) if plan.statistics_count(idx) else None
        total = match_count(shard, match, conds, params) if counted is None else counted
        if not total or limit == 0:
            continue
        used, scope, values = plan.order, list(conds), list(params)
        if cap is None:
            cap = plan.cap
        if plan.order == "relevance" and cap == 0:
            label += " (counted only: the ranking cap was spent on newer files)"
            continue
        if plan.order == "relevance" and total > cap and not plan.exhaustive:
            if _common(shard, match, plan.raw):
                used = "newest"
                label += " (every word is in most records, so bm25 cannot rank them: newest first)"
            else:
                scope.append("f.rowid >= ?")
                values.append(_nth_newest(shard, match, conds, params, cap))
                label += f" (ranked within newest {cap} of {total} matches)"
        page = _page(shard, match, scope, values, used, limit, offset)
    return page, total, label, match


def hits(shard: Shard, match: str, page: Sequence[Any]) -> tuple[Hit, ...]:
    """The records and snippets of a page of ``(id, score)`` rows, in page order."""
    ids = [r[0] for r in page]
    if not ids:
        return ()
    records = {i: decode(r) for i, r in shard.records(ids).items()}
    marks = ",".join("?" * len(ids))
    snippets = (
        dict(
            shard.rows(
                "SELECT rowid, snippet(memories_fts, -1, '[', ']', '…', 12) FROM memories_fts"
                f" WHERE memories_fts MATCH ? AND rowid IN ({marks})",
                [match, *ids],
            )
        )
        if match
        else {}  # the seed's substring match has no full-text expression to mark
    )
    return tuple(
        Hit(memory=records[i], score=float(score), snippet=snippets.get(i, "")) for i, score in page if i in records
    )


def count(shard: Shard, plan: planner.Count) -> int:
    """Exact matches of a count plan on ``shard``."""
    if plan.match is None:
        conds, params = shard.scope(plan.window, plan.tags, "m.id")
        return int(shard.rows(f"SELECT count(*) FROM memories m{where(conds)}", params)[0][0])
    if not plan.match.strip():
        return 0
    counted = statistics_count(shard, plan.text, plan.window) if plan.statistics_count else None
    if counted is not None:
        return counted
    conds, params = shard.scope(plan.window, plan.tags, "f.rowid")
    return match_count(shard, plan.match, conds, params)


def statistics_count(shard: Shard, text: str, span: planner.Window) -> int | None:
    """Exact AND count from the index's statistics, or None when FTS5 must count.

    One word over the whole index is its ``term_stats`` document frequency; words that
    all have a frequent-term bitmap are a popcount, in any date window.
    """
    if not shard.ordered and span.bounded:
        return None
    terms: list[str] = []
    for token in q.fts_tokens(text):
        found = shard.terms(token[1:-1].replace('""', '"'))
        if len(found) != 1:
            return None  # a phrase (PROJ-1234 is "proj 1234"): FTS5 checks positions
        terms.append(found[0])
    unique = sorted(set(terms))
    if not unique:
        return None
    if len(unique) == 1 and not span.bounded:
        row = shard.rows("SELECT df FROM term_stats WHERE term = ?", unique)
        return int(row[0][0]) if row else 0
    rows = shard.rows(f"SELECT bits FROM term_bits WHERE term IN ({','.join('?' * len(unique))})", unique)
    if len(rows) != len(unique):
        return None
    first, last = shard.id_bounds(span)
    base = shard.bits_base
    return termbits.count(
        [r[0] for r in rows], None if first is None else first - base, None if last is None else last - base
    )


def match_count(shard: Shard, match: str, conds: list[str], params: list[object]) -> int:
    """Exact matches counted by FTS5 from its doclists."""
    sql = f"SELECT count(*) FROM memories_fts f WHERE memories_fts MATCH ?{where(conds, ' AND ')}"
    return int(shard.rows(sql, [match, *params])[0][0])


def _common(shard: Shard, match: str, raw: bool) -> bool:
    """True when every query term is in more than half the records: bm25 then ranks nothing.

    FTS5 clamps a term's idf to ~0 once it is in over half the documents, so ranking
    such a query costs the most (every record matches) and orders by noise.
    """
    if raw:
        return False
    terms = shard.terms(match.replace('"', " "))
    if not terms:
        return False
    # Two subqueries: min() and max() in one SELECT would lose SQLite's O(1) rowid shortcut.
    span = shard.rows("SELECT (SELECT max(id) FROM memories) - (SELECT min(id) FROM memories) + 1")[0][0]
    half = (span or 0) / 2
    marks = ",".join("?" * len(terms))
    dfs = shard.rows(f"SELECT df FROM term_stats WHERE term IN ({marks})", terms)
    return len(dfs) == len(terms) and all(df > half for (df,) in dfs)


def _page(
    shard: Shard, match: str, conds: list[str], params: list[object], order: str, limit: int, offset: int
) -> list[Any]:
    """(id, score) rows of one page; only the FTS index is read, never the content table.

    Joining ``memories`` here lets SQLite drive the loop from the content table and probe
    FTS5 once per row; ids in time order make ``rowid`` the chronological order.
    """
    scope = where(conds, " AND ")
    if order == "relevance":
        return shard.rows(
            f"SELECT f.rowid, {SCORE} AS score FROM memories_fts f WHERE memories_fts MATCH ?{scope}"
            " ORDER BY score LIMIT ? OFFSET ?",
            [match, *params, limit, offset],
        )
    if shard.ordered:
        by = "f.rowid DESC" if order == "newest" else "f.rowid"
        return shard.rows(
            f"SELECT f.rowid, 0.0 FROM memories_fts f WHERE memories_fts MATCH ?{scope} ORDER BY {by} LIMIT ? OFFSET ?",
            [match, *params, limit, offset],
        )
    by = "m.date DESC, m.id DESC" if order == "newest" else "m.date, m.id"
    return shard.rows(
        f"SELECT m.id, 0.0 FROM memories m WHERE m.id IN"
        f" (SELECT f.rowid FROM memories_fts f WHERE memories_fts MATCH ?{scope}) ORDER BY {by} LIMIT ? OFFSET ?",
        [match, *params, limit, offset],
    )


def _nth_newest(shard: Shard, match: str, conds: list[str], params: list[object], n: int) -> int:
    return int(
        shard.rows(
            f"SELECT f.rowid FROM memories_fts f WHERE memories_fts MATCH ?{where(conds, ' AND ')}"
            " ORDER BY f.rowid DESC LIMIT 1 OFFSET ?",
            [match, *params, n - 1],
        )[0][0]
    )
