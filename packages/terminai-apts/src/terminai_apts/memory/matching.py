"""Regex and substring search over shards: candidates verified with the plan's matcher, newest first.

Shards hold disjoint id ranges and are visited newest first, so stopping at the limit is
exact; one match past it proves the result truncated (its total is then unknown, -1).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from terminai_apts.memory import planner
from terminai_apts.memory import regex as rx
from terminai_apts.memory.records import Hit, Results
from terminai_apts.memory.shard import Shard, TimeUp, decode


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
