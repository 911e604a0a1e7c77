"""Regex and substring search over shards: candidates verified with the plan's matcher, newest first;
and the seed's ``LIKE`` match (``search``/``count`` by default), decided by SQLite itself.

Shards hold disjoint id ranges and are visited newest first, so stopping at the limit is
exact; one match past it proves the result truncated (its total is then unknown, -1).
"""

# SQL here is assembled only from constant fragments; every value is a bound parameter.
# ruff: noqa: S608
from __future__ import annotations

import itertools
import time
from collections.abc import Iterator, Sequence
from typing import Any

from terminai_apts.memory import grams, like, planner
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
                bits = (
                    None if plan.literal is not None or plan.short is None else piece_candidates(shard, plan, matcher)
                )
                rows = shard.candidates(plan.literal, plan.window) if bits is None else _rows(shard, bits)
                for row in rows:
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


def short_match(shard: Shard, plan: planner.Substring) -> int | None:
    """The seed's matches on ``shard`` as a bitmap over ``id - bits_base``, when the text is one
    piece of one or two characters (:func:`grams.exact_piece`); None: SQLite must decide.

    Exact without reading a row: the piece's bitmap is the set of records whose title or
    content holds it as ``LIKE`` folds it. Ids follow time only on an ``ordered`` shard, so a
    backfilled one (ordered off) is left to SQLite's date order.
    """
    piece = grams.exact_piece(plan.text)
    if piece is None or plan.literal is not None or not shard.ordered:
        return None
    base = shard.bits_base
    lo, hi = _offsets(shard, plan.window)
    if hi < lo:
        return 0
    bits = grams.bitmap(shard.grams(piece), lo, hi)
    if bits and plan.tags:
        marks = ",".join("?" * len(plan.tags))
        tagged = shard.rows(
            f"SELECT DISTINCT id FROM memory_tags WHERE tag IN ({marks}) AND id BETWEEN ? AND ?",
            [*plan.tags, base + lo, base + hi],
        )
        bits &= grams.of_ids((r[0] for r in tagged), base)
    return bits


def _offsets(shard: Shard, span: planner.Window) -> tuple[int, int]:
    """The window as bit offsets ``lo..hi`` of an ordered shard (``hi < lo``: empty)."""
    base = shard.bits_base
    first, last = shard.id_bounds(span)
    if last is None:
        last = shard.rows("SELECT max(id) FROM memories")[0][0]
        if last is None:
            return 0, -1
    return max(0, (first or base) - base), last - base


def piece_candidates(shard: Shard, plan: planner.Match, matcher: rx.Matcher) -> int | None:
    """Records holding ``plan.short`` under the matcher's case folding, as a bitmap (a superset:
    every pair of its characters is somewhere in the record); None: the rows must be scanned.

    Each character stands for every character of the index the engine folds it to (asked
    of the engine itself), each pair for all its variants, in any field.
    """
    text = plan.short or ""
    if plan.window.bounded and not shard.ordered:
        return None
    lo, hi = _offsets(shard, plan.window)
    if hi < lo:
        return 0
    keys = shard.rows(
        "SELECT DISTINCT gram FROM grams WHERE length(gram) = 1 OR (length(gram) = 3 AND substr(gram, 1, 2) = ?)",
        [grams.EXTRA],
    )
    pool = {k[0][-1] for k in keys}
    variants = {c: rx.case_variants(c, pool, backtracking=matcher.backtracking) for c in set(text)}
    pairs = list(dict.fromkeys(text[i : i + 2] for i in range(len(text) - 1)))[:8] or [text]
    found: int | None = None
    for pair in pairs:
        names = {like.fold("".join(v)) for v in itertools.product(*(variants[c] for c in pair))}
        bits = 0
        for name in names:
            bits |= grams.bitmap([*shard.grams(name), *shard.grams(grams.EXTRA + name)], lo, hi)
        found = bits if found is None else found & bits
        if not found:
            return 0
    return found


def _rows(shard: Shard, bits: int) -> Iterator[Sequence[Any]]:
    """``COLUMNS`` rows of the records in ``bits``, newest (highest id) first, in growing pages."""
    offsets, size = grams.descending(bits), 64
    while True:
        ids = [shard.bits_base + o for o in itertools.islice(offsets, size)]
        if not ids:
            return
        found = shard.records(ids)
        yield from (found[i] for i in ids if i in found)
        size = min(size * 4, 1000)


def like_search(
    shard: Shard, plan: planner.Substring, want: int, skip: int, cap: int
) -> tuple[list[tuple[int, str]], int]:
    """``(page, total)``: ``want`` matches after ``skip`` as ``(id, date)``, in the plan's order,
    and the number of matches (-1 when SQLite found ``cap`` of them and stopped counting)."""
    bits = short_match(shard, plan)
    if bits is None:
        rows = like_page(shard, plan, cap, 0)
        return rows[skip : skip + want], len(rows) if len(rows) < cap else -1
    pick = grams.highest if plan.order == "newest" else grams.lowest
    ids = [shard.bits_base + offset for offset in pick(bits, want, skip)]
    dates = shard.dates(ids)
    return [(i, dates[i]) for i in ids if i in dates], bits.bit_count()


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
    bits = short_match(shard, plan)
    if bits is not None:
        return bits.bit_count()
    posted = trigram_count(shard, plan)
    if posted is None:
        posted = word_count(shard, plan)
    if posted is not None:
        return posted
    source, clause, params = _like_from(shard, plan)
    return int(shard.rows(f"SELECT count(*) FROM {source}{clause}", params)[0][0])


# Unsure records in a window beyond this are left to the row-by-row count (each is one lookup).
MAX_UNSURE = 500


def trigram_count(shard: Shard, plan: planner.Substring) -> int | None:
    """The seed's count of a three-character ASCII text from its trigram's posting list, or None.

    Such a text is one trigram, and for a record not marked ``UNSURE`` (:func:`grams.trigram_unsure`)
    holding that trigram in the index is the same as ``LIKE`` finding the text in its title or
    content (both fold ASCII case only, for ASCII text). So the count is the posting list's
    length in the window, less the marked records it names that ``LIKE`` rejects: only those
    rows are read. Records past the index's ``unsure_through`` (appended by a writer that did
    not mark them) count as marked; an index without it, tags, a date window on a backfilled
    shard or too many marked records leave the count to SQLite's ``LIKE`` on every candidate.
    """
    literal = plan.literal
    if literal is None or len(literal) != 3 or plan.text.strip("%") != literal or not literal.isascii() or plan.tags:
        return None
    if plan.window.bounded and not shard.ordered:
        return None
    row = shard.rows("SELECT value FROM meta WHERE key = 'unsure_through'")
    if not row:
        return None
    base = shard.bits_base
    lo, hi = _offsets(shard, plan.window)
    if hi < lo:
        return 0
    unsure = grams.bitmap(shard.grams(grams.UNSURE), lo, hi)
    through = int(row[0][0]) - base
    if through < hi:
        unsure |= grams.window_mask(max(lo, through + 1), hi)
    if unsure.bit_count() > MAX_UNSURE:
        return None
    phrase = q.trigram_phrase(literal)
    posted = shard.rows(
        "SELECT count(*) FROM memories_tri WHERE memories_tri MATCH ? AND rowid BETWEEN ? AND ?",
        [phrase, base + lo, base + hi],
    )[0][0]
    if not unsure:
        return int(posted)
    ids = [base + offset for offset in grams.ascending(unsure)]
    named, matched = shard.rows(
        "SELECT count(*), coalesce(sum(m.title LIKE ? OR m.content LIKE ?), 0)"
        " FROM memories_tri t CROSS JOIN memories m ON m.id = t.rowid"
        f" WHERE memories_tri MATCH ? AND t.rowid IN ({','.join('?' * len(ids))})",
        [plan.pattern, plan.pattern, phrase, *ids],
    )[0]
    return int(posted) - int(named) + int(matched)


def word_count(shard: Shard, plan: planner.Substring) -> int | None:
    """The seed's count of a text of four or more ASCII letters and digits, reading only the
    candidates no frequent word answers for; None: no frequent word holds it (or tags, or a
    date window on a backfilled shard).

    A record whose word bitmap names it holds the text where ``LIKE`` looks (:func:`grams.words_of`);
    every other match is among the trigram index's candidates, and only those SQLite checks with
    ``LIKE``, the named ones skipped by a byte mask before their row is read.
    """
    literal = plan.literal
    if literal is None or plan.text.strip("%") != literal or plan.tags or not literal.isascii():
        return None
    folded = like.fold(literal)
    if len(folded) < 4 or not folded.isalnum():
        return None
    if plan.window.bounded and not shard.ordered:
        return None
    lo, hi = _offsets(shard, plan.window)
    if hi < lo:
        return 0
    named = grams.bitmap(
        shard.rows(
            "SELECT block, df, bits FROM grams WHERE gram > ? AND gram < ? AND instr(gram, ?) > 0",
            [grams.WORD, grams.WORD_END, folded],
        ),
        lo,
        hi,
    )
    if not named:
        return None
    base = shard.bits_base
    rest = shard.rows(
        "SELECT count(*) FROM memories_tri t CROSS JOIN memories m ON m.id = t.rowid"
        " WHERE memories_tri MATCH ? AND t.rowid BETWEEN ? AND ? AND substr(?, t.rowid - ?, 1) <> x'31'"
        " AND (m.title LIKE ? OR m.content LIKE ?)",
        [
            q.trigram_phrase(literal),
            base + lo,
            base + hi,
            grams.byte_mask(named, hi + 1),
            base - 1,
            plan.pattern,
            plan.pattern,
        ],
    )[0][0]
    return named.bit_count() + int(rest)
