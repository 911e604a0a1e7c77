"""The query planner: a call's arguments become a frozen plan, with no SQLite in sight.

A plan names what a shard must do: which full-text expressions to try and in what order
(all words, then any word), which index drives a scan (trigram or the table), the time
window as normalised bounds, tag and metadata filters, the order and the row limits. Every
bad argument is refused here, as one :class:`MemoryQueryError`, before any file is read.
:mod:`terminai_apts.memory.shard` turns a plan into SQL on one file;
:mod:`terminai_apts.memory.api` runs it over every shard and merges.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from terminai_apts.errors import MemoryQueryError
from terminai_apts.memory import inputs
from terminai_apts.memory import query as q
from terminai_apts.memory import regex as rx
from terminai_apts.memory.records import split_tags

# Rows one call may return. Larger limits are refused by name, never silently cut.
MAX_ROWS = 10_000
# Matches past its page a search counts for its ``total``; beyond, ``total`` is -1.
COUNT_CAP = 1_000
# Matches (times query words: each word's postings are scored) beyond which relevance
# ranking is limited to the newest matches; about 3 ms of bm25 on the reference machine.
RANK_CAP = 3_000
ORDERS = ("newest", "oldest", "relevance")
FACETS = ("month", "source", "tag")


@dataclass(frozen=True, slots=True)
class Window:
    """A time window as normalised timestamps: ``lo <= date < hi`` (None: open on that side)."""

    lo: str | None = None
    hi: str | None = None

    @property
    def bounded(self) -> bool:
        return self.lo is not None or self.hi is not None


@dataclass(frozen=True, slots=True, kw_only=True)
class Search:
    """Full-text search: try ``forms`` in order until one matches (the second relaxes the first)."""

    text: str
    forms: tuple[tuple[str, str], ...]  # (plan name, FTS5 expression)
    words: int
    window: Window
    tags: tuple[str, ...]
    order: str
    limit: int
    offset: int
    raw: bool
    exhaustive: bool

    @property
    def empty(self) -> bool:
        return not self.forms[0][1].strip()

    @property
    def cap(self) -> int:
        """Matches this query may score with bm25 (see :func:`rank_cap`)."""
        return rank_cap(self.text, self.raw)

    def tries(self, index: int, matched: int) -> bool:
        """Whether form ``index`` runs: the relaxed form only when all words matched nothing."""
        return index == 0 or (matched == 0 and self.words >= 2)

    def statistics_count(self, index: int) -> bool:
        """Whether the index's term statistics may count form ``index`` (plain words, no tags)."""
        return index == 0 and not self.raw and not self.tags


@dataclass(frozen=True, slots=True, kw_only=True)
class Substring:
    """The seed's text match: ``title LIKE '%text%' OR content LIKE '%text%'``, newest first.

    ``literal`` is the longest run of the text between LIKE's wildcards (``%``, ``_``) when it
    has at least three characters: the trigram index (which folds case at least as widely
    as LIKE) then names the candidates, and SQLite's own LIKE decides each of them.
    """

    text: str
    literal: str | None
    window: Window
    tags: tuple[str, ...]
    order: str
    limit: int
    offset: int

    @property
    def pattern(self) -> str:
        return f"%{self.text}%"


@dataclass(frozen=True, slots=True, kw_only=True)
class Count:
    """Exact count: of full-text matches (``match``), or of the filters alone (``match`` None)."""

    text: str
    match: str | None
    window: Window
    tags: tuple[str, ...]
    raw: bool

    @property
    def statistics_count(self) -> bool:
        return not self.raw and not self.tags


@dataclass(frozen=True, slots=True, kw_only=True)
class Filter:
    """Records by metadata, newest or oldest first; the first tag drives the loop."""

    order: str
    tags: tuple[str, ...]
    window: Window
    source: str | None
    kind: str | None
    confidence: float | None
    limit: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Match:
    """Regex or substring search: candidates (trigram-prefiltered or all rows) verified, newest first."""

    matcher: rx.Matcher | None  # None: nothing to look for
    literal: str | None  # the trigram lookup, or None for a full scan
    limit: int
    window: Window
    label: str
    short: str | None = None  # without a trigram lookup: a literal every match holds, for the piece bitmaps


@dataclass(frozen=True, slots=True, kw_only=True)
class Facets:
    """Counts per month, source or tag, of full-text matches (``match``) or of every record."""

    by: str
    match: str | None
    window: Window


@dataclass(frozen=True, slots=True, kw_only=True)
class Scan:
    """Text batches of at most ``chars`` characters, oldest first, at most ``batches`` of them."""

    match: str | None
    window: Window
    chars: int
    batches: int


def rank_cap(query: str, raw: bool) -> int:
    """Matches one query may score with bm25: ``RANK_CAP`` shared among its words."""
    return max(1, RANK_CAP // (1 if raw else max(1, len(q.fts_tokens(query)))))


def tag_list(tags: object) -> tuple[str, ...]:
    """Tags as lower-case words, from a comma-separated string or a sequence of strings."""
    checked = inputs.tags(tags)
    if isinstance(checked, str):
        return split_tags(checked)
    return tuple(t.strip().lower() for t in (checked or ()))


def window(since: str | None, until: str | None, date_range: Sequence[str] | None = None) -> Window:
    """``since``/``until`` and a ``date_range`` pair (both bounds inclusive) as one :class:`Window`.

    Given both, a record must lie in both (the later start, the earlier end).
    """
    span = Window(q.parse_bound(since, end=False), q.parse_bound(until, end=True))
    pair = inputs.date_range(date_range)
    if pair is None:
        return span
    start = q.parse_bound(pair[0], end=False, what="date_range start")
    return narrow(span, Window(start, q.parse_bound(pair[1], end=True, what="date_range end")))


def narrow(a: Window, b: Window) -> Window:
    """The part of time in both windows."""
    los = [x for x in (a.lo, b.lo) if x is not None]
    his = [x for x in (a.hi, b.hi) if x is not None]
    return Window(max(los) if los else None, min(his) if his else None)


def like_literal(text: str) -> str | None:
    """The longest piece of ``text`` between LIKE wildcards, if it has three or more characters."""
    # A NUL ends a string inside FTS5's query parser, so it splits pieces like a wildcard.
    piece = max(text.replace("_", "%").replace("\x00", "%").split("%"), key=len)
    return piece if len(piece) >= 3 else None


def substring(
    query: object,
    date_range: Sequence[str] | None = None,
    tags: object = None,
    limit: object = 20,
    offset: object = 0,
    *,
    order: object = "newest",
    since: str | None = None,
    until: str | None = None,
) -> Substring:
    """Plan the seed's search: the query as a case-insensitive substring of title or content."""
    text = str(inputs.text(query, "query", nul_ok=True))
    return Substring(
        text=text,
        literal=like_literal(text),
        window=window(since, until, date_range),
        tags=tag_list(tags),
        order=inputs.order(order, ("newest", "oldest")),
        limit=inputs.limit(limit, MAX_ROWS),
        offset=inputs.integer(offset, "offset"),
    )


def budget(value: object, default: float) -> float:
    """A call's time budget in milliseconds (``None``: the memory's default)."""
    ms = default if value is None else inputs.number(value, "budget_ms")
    if ms is None or ms < 0:
        raise MemoryQueryError(f"budget_ms must not be negative, not {value}")
    return ms


def search(
    query: object,
    date_range: Sequence[str] | None = None,
    tags: object = None,
    limit: object = 20,
    offset: object = 0,
    *,
    order: object = "relevance",
    since: str | None = None,
    until: str | None = None,
    raw: bool = False,
    exhaustive: bool = True,
) -> Search:
    """Plan a ranked (word-based) full-text search, the ``order="relevance"`` extension."""
    """Plan a full-text search: quoted words, all required, relaxed to any when none matches."""
    chosen = inputs.order(order, ORDERS)
    text = str(inputs.text(query, "query", nul_ok=True))
    tagged = tag_list(tags)
    rows, skip = inputs.limit(limit, MAX_ROWS), inputs.integer(offset, "offset")
    forms = (("fts-raw", text),) if raw else (("fts-and", q.fts_and(text)), ("fts-or", q.fts_or(text)))
    return Search(
        text=text,
        forms=forms,
        words=len(q.fts_tokens(text)),
        window=window(since, until, date_range),
        tags=tagged,
        order=chosen,
        limit=rows,
        offset=skip,
        raw=bool(raw),
        exhaustive=bool(exhaustive),
    )


def count(
    query: object = None,
    date_range: Sequence[str] | None = None,
    tags: object = None,
    *,
    since: str | None = None,
    until: str | None = None,
    raw: bool = False,
) -> Count:
    """Plan an exact count of full-text (word) matches; a missing or blank query counts the filters alone."""
    text = inputs.text(query, "query", optional=True, nul_ok=True)
    tagged = tag_list(tags)
    span = window(since, until, date_range)
    if text is None or not text.strip():
        return Count(text="", match=None, window=span, tags=tagged, raw=bool(raw))
    return Count(text=text, match=text if raw else q.fts_and(text), window=span, tags=tagged, raw=bool(raw))


def filter_(
    date_after: str | None = None,
    date_before: str | None = None,
    tags: object = None,
    limit: object = 50,
    *,
    source: object = None,
    min_confidence: object = None,
    kind: object = None,
    since: str | None = None,
    until: str | None = None,
    order: object = "newest",
) -> Filter:
    """Plan a metadata filter; ``date_after``/``date_before`` are inclusive (the seed's ``>=``/``<=``)."""
    chosen = inputs.order(order, ("newest", "oldest"))
    picked_source = inputs.text(source, "source", optional=True)
    picked_kind = inputs.text(kind, "kind", optional=True)
    confidence = inputs.number(min_confidence, "min_confidence")
    tagged = tag_list(tags)
    rows = inputs.limit(limit, MAX_ROWS)
    return Filter(
        order=chosen,
        tags=tagged,
        window=narrow(
            window(since, until),
            Window(
                q.parse_bound(inputs.text(date_after, "date_after", optional=True), end=False, what="date_after"),
                q.parse_bound(inputs.text(date_before, "date_before", optional=True), end=True, what="date_before"),
            ),
        ),
        source=picked_source,
        kind=picked_kind,
        confidence=confidence,
        limit=rows,
    )


def grep(
    pattern: object,
    limit: object = 50,
    *,
    date_range: Sequence[str] | None = None,
    since: str | None = None,
    until: str | None = None,
) -> Match:
    """Plan a regex search: RE2 (or time-limited ``re``), prefiltered by a required literal."""
    matcher = rx.compile_pattern(pattern)
    rows = inputs.limit(limit, MAX_ROWS)
    required = rx.required_literal(str(pattern))
    literal = rx.prefilter_literal(required, backtracking=matcher.backtracking)
    short = None if literal else rx.piece_literal(required)
    label = (
        f"trigram-prefilter {literal!r} + {matcher.engine}"
        if literal
        else f"piece-bitmap {short!r} + {matcher.engine}"
        if short
        else f"full-scan + {matcher.engine}"
    )
    span = window(since, until, date_range)
    return Match(matcher=matcher, literal=literal, limit=rows, window=span, label=label, short=short)


def find(substring: object, limit: object = 20, *, since: str | None = None, until: str | None = None) -> Match:
    """Plan a case-insensitive substring search; an empty substring looks for nothing."""
    needle = str(inputs.text(substring, "substring"))
    rows = inputs.limit(limit, MAX_ROWS)
    span = window(since, until)
    if not needle:
        return Match(matcher=None, literal=None, limit=rows, window=span, label="empty-query")
    literal = rx.prefilter_literal(needle, backtracking=False)
    short = None if literal else rx.piece_literal(needle)
    label = f"trigram {literal!r}" if literal else f"piece-bitmap {short!r}" if short else "full-scan"
    return Match(matcher=rx.literal_matcher(needle), literal=literal, limit=rows, window=span, label=label, short=short)


def facets(query: object = None, by: object = "month", *, since: str | None = None, until: str | None = None) -> Facets:
    """Plan facet counts by month, tag or source."""
    if not isinstance(by, str) or by not in FACETS:
        raise MemoryQueryError(f"facets by must be month, tag or source, not {by!r}"[:200])
    text = inputs.text(query, "query", optional=True, nul_ok=True)
    match = q.fts_and(text) if text is not None else ""
    return Facets(by=by, match=match or None, window=window(since, until))


def scan(
    *,
    since: str | None = None,
    until: str | None = None,
    query: object = None,
    max_chars: object = 40_000,
    max_batches: object = 50,
) -> Scan:
    """Plan bounded text batches: 200 to 200,000 characters each, 1 to 1,000 batches."""
    text = inputs.text(query, "query", optional=True, nul_ok=True)
    chars = inputs.integer(max_chars, "max_chars")
    batches = inputs.integer(max_batches, "max_batches")
    match = q.fts_and(text) if text is not None else ""
    return Scan(
        match=match or None,
        window=window(since, until),
        chars=max(200, min(chars, 200_000)),
        batches=max(1, min(batches, 1000)),
    )
