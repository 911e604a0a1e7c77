"""Regex and substring search over shards: candidates verified with the plan's matcher, newest first;
and the seed's ``LIKE`` match (``search``/``count`` by default), decided by SQLite itself.

Shards hold disjoint id ranges and are visited newest first, so stopping at the limit is
exact; one match past it proves the result truncated (its total is then unknown, -1).
"""

# SQL here is assembled only from constant fragments; every value is a bound parameter.
# ruff: noqa: S608
from __future__ import annotations

import time
from collections.abc import Sequence

from terminai_apts.memory import planner
from terminai_apts.memory import query as q
from terminai_apts.memory import regex as rx
from terminai_apts.memory.records import Hit, Results
from terminai_apts.memory.shard import Shard, TimeUp, decode, where


def _elapsed(start: float) -> float:
    return round((time.monotonic() - start) * 1000, 3)


def _results(hits: list[Hit], labels: list[str], start: float, *, truncated: bool, **extra: float) -> Results:
    """What the verification found; a truncated answer does not know its total (-1)."""
    return Results(
        hits=tuple(hits),
        total=-1 if truncated else len(hits),
        truncated=truncated,
        elapsed_ms=_elapsed(start),
        plan="; ".join(labels),
        **extra,
    )


def verify(shards: Sequence[Shard], plan: planner.Match, matcher: rx.Matcher, start: float, deadline: float) -> Results:
    """Verify candidates (``title\nsummary\ncontent``, whole) with ``matcher`` until ``deadline``."""
    hits: list[Hit] = []
    labels: list[str] = []
    try:
        with rx.hard_limit(matcher, deadline):
            for shard in shards:
                labels.append(shard.label(plan.label))
                for row in shard.candidates(plan.literal, plan.window):
                    shard.check_time()
                    text = f"{row[3]}\n{row[5]}\n{row[4]}"
                    span = matcher.search(text)
                    if span is None:
                        continue
                    if len(hits) == plan.limit:
                        # Counting the rest would cost a full verification pass: total unknown.
                        labels[-1] += " (stopped at limit)"
                        return _results(hits, labels, start, truncated=True)
                    snippet = text[max(0, span[0] - 40) : span[1] + 40]
                    hits.append(Hit(memory=decode(row), snippet=snippet))
    except (TimeUp, rx.RegexTimeout):
        labels[-1] += " (budget: partial)"
        return _results(hits, labels, start, truncated=True, scanned_fraction=0.0)
    return _results(hits, labels, start, truncated=False)


# ----------------------------------------------------------------- the seed's substring match
def _like_from(shard: Shard, plan: planner.Substring) -> tuple[str, str, list[object]]:
    """``(FROM clause, WHERE clause, params)`` of the seed's match on one shard.

    With a literal the trigram index drives (``CROSS JOIN`` keeps it the outer loop, so
    its doclists are walked by rowid and only candidate rows are read); LIKE on the row
    itself decides, so a match is exactly what the seed's ``LIKE`` says, case folding
    (ASCII only: ``ß`` is not ``SS``; the index folds more, e.g. the Kelvin sign onto
    ``k``) and wildcards (``_``, ``%``) included.
    """
    if plan.literal is not None:
        key, source = "t.rowid", "memories_tri t CROSS JOIN memories m ON m.id = t.rowid"
        conds, params = shard.scope(plan.window, (), key)
        conds.insert(0, "memories_tri MATCH ?")
        params.insert(0, q.trigram_phrase(plan.literal))
    else:
        key, source = "m.id", "memories m"
        conds, params = shard.scope(plan.window, (), key)
    # Tags test the joined row's id: on the trigram table's rowid, SQLite would hand FTS5
    # every tagged id as a separate lookup (19 s for a common tag on 157k records).
    tagged, values = shard.scope(planner.Window(), plan.tags, "m.id")
    conds += tagged
    params += values
    if plan.text:  # LIKE '%%' holds for every row (the columns are NOT NULL)
        conds.append("(m.title LIKE ? OR m.content LIKE ?)")
        params += [plan.pattern, plan.pattern]
    return source, where(conds), params


def like_page(shard: Shard, plan: planner.Substring, limit: int, offset: int) -> list[tuple[int, str]]:
    """``(id, date)`` of one page of matches on ``shard``, in the plan's order (same date: by id)."""
    source, clause, params = _like_from(shard, plan)
    direction = "DESC" if plan.order == "newest" else ""
    key = "t.rowid" if plan.literal is not None else "m.id"
    by = f"{key} {direction}" if shard.ordered else f"m.date {direction}, m.id {direction}"
    return [
        (int(r[0]), str(r[1]))
        for r in shard.rows(
            f"SELECT m.id, m.date FROM {source}{clause} ORDER BY {by} LIMIT ? OFFSET ?", [*params, limit, offset]
        )
    ]


def like_count(shard: Shard, plan: planner.Substring) -> int:
    """Exact number of the seed's matches on ``shard``."""
    source, clause, params = _like_from(shard, plan)
    return int(shard.rows(f"SELECT count(*) FROM {source}{clause}", params)[0][0])
