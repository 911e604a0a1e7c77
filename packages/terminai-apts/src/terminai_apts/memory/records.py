"""Immutable values the memory API returns: records, hits and result sets.

Everything here is plain frozen data (tags are tuples) so the restricted executor can hand
it to sandboxed code without exposing a connection, a row object or any write path.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True, kw_only=True)
class Memory:
    """One memory: a decision, summary or note.

    The seed's fields first: ``id`` is the record's own string id (an archive's ``id``
    column, a journal entry's hash), ``date`` its day (``YYYY-MM-DD``), then ``title``,
    ``content``, ``summary``, ``tags``, ``source``, ``confidence``. Extensions: ``key`` is
    the index's integer id (it follows event time), ``timestamp`` the full event time and
    ``recorded_at`` the ingestion time (ISO 8601 UTC); ``origin`` names where it came from
    (``file:line`` of a journal, or an archive member), ``tier`` is
    ``hot``/``warm``/``cold``/``archive``; ``superseded_by`` is the id of a newer record.
    """

    id: str
    key: int
    date: str
    timestamp: str
    recorded_at: str
    title: str
    content: str
    summary: str
    tags: tuple[str, ...]
    source: str
    confidence: float
    kind: str
    tier: str
    origin: str
    content_hash: str
    superseded_by: str | None = None

    def __repr__(self) -> str:
        return f"Memory(id={self.id!r}, date={self.date}, title={self.title[:60]!r})"


@dataclass(frozen=True, slots=True, kw_only=True)
class Hit:
    """A record in a result set, with its score (lower bm25 is better) and a snippet."""

    memory: Memory
    score: float = 0.0
    snippet: str = ""

    @property
    def id(self) -> str:
        return self.memory.id

    def __repr__(self) -> str:
        m = self.memory
        return f"Hit({m.id!r} {m.date} {m.title[:50]!r} score={self.score:.2f})"


@dataclass(frozen=True, slots=True, kw_only=True)
class Results:
    """A bounded result set.

    ``total`` is the exact number of matches when known (``-1`` when the time budget ran out
    before counting), ``truncated`` is true when more rows matched than were returned or the
    budget cut the call short, ``plan`` names the strategy used and any relaxation.
    """

    hits: tuple[Hit, ...]
    total: int
    truncated: bool
    elapsed_ms: float
    plan: str
    scanned_fraction: float = 1.0

    def __iter__(self) -> Iterator[Hit]:
        return iter(self.hits)

    def __len__(self) -> int:
        return len(self.hits)

    def __getitem__(self, index: int) -> Hit:
        return self.hits[index]

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(h.id for h in self.hits)

    def __repr__(self) -> str:
        head = f"Results(total={self.total}, shown={len(self.hits)}, truncated={self.truncated}, plan={self.plan!r})"
        return "\n".join([head, *(f"  {h!r}" for h in self.hits[:20])])


@dataclass(frozen=True, slots=True, kw_only=True)
class Facet:
    """One bucket of a facet count (a month, a tag or a source)."""

    key: str
    count: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Batch:
    """A bounded slice of text from :meth:`ThermalMemory.scan`, ready for a sub-query."""

    ids: tuple[str, ...]
    text: str
    truncated: bool = False


# The seed's columns whose values are kept as stored (title, content and summary are the
# record's own text; only their being NULL, and a title or content stored as a blob, is
# kept, in ``AsStored.nulls``: SQLite built with LIKE_DOESNT_MATCH_BLOBS, as Debian's is,
# never matches a blob with ``LIKE``).
STORED_COLUMNS = ("id", "date", "tags", "source", "confidence")
TEXT_AFFINITY = ("TEXT", "TEXT", "TEXT", "TEXT", "REAL")
NULL_TITLE, NULL_CONTENT, NULL_SUMMARY, BLOB_TITLE, BLOB_CONTENT = 1, 2, 4, 8, 16
# A row whose id an earlier row shares, by the archive's own ``WHERE id = ? LIMIT 1``: ``get`` answers with that one.
LATER_ID = 32


@dataclass(frozen=True, slots=True, kw_only=True)
class AsStored:
    """An archive row's values exactly as its SQLite file holds them: what the seed's API returns.

    ``values`` are the ``STORED_COLUMNS`` (any SQLite type, ``None`` for NULL), ``nulls``
    marks a NULL title, content or summary, a blob title or content and a later row of a
    shared id, ``position`` is the row's place in the archive's own ``ORDER BY date DESC``
    (its order of ties) and ``affinity`` the archive's column affinities for
    ``STORED_COLUMNS`` (so comparisons convert as they do in the archive).
    """

    values: tuple[object, ...]
    #: title, content and summary as stored when SQLite holds them as numbers or blobs (what the
    #: seed's ``Memory`` shows), else None: the record's text is theirs.
    texts: tuple[object, object, object] = (None, None, None)
    nulls: int = 0
    position: int | None = None
    affinity: tuple[str, ...] = TEXT_AFFINITY


@dataclass(frozen=True, slots=True, kw_only=True)
class NewMemory:
    """A record to be indexed (before it has an id); ``stored``: its archive row as stored."""

    uid: str
    date: str
    recorded_at: str
    title: str
    content: str
    summary: str = ""
    tags: tuple[str, ...] = field(default_factory=tuple)
    source: str = ""
    confidence: float = 1.0
    kind: str = "note"
    tier: str = "warm"
    origin: str = ""
    supersedes: str = ""  # uid of an older record this one replaces
    stored: AsStored | None = None


def content_hash(title: str, content: str) -> str:
    """Dedup key: sha256 of the whitespace- and case-normalised title and content."""
    norm = " ".join(f"{title}\n{content}".lower().split())
    return hashlib.sha256(norm.encode()).hexdigest()


def split_tags(text: str | None, *, fold: bool = True) -> tuple[str, ...]:
    """Tags from the seed's comma-separated column (trimmed, unique, ordered; lower-cased
    unless ``fold=False``, which keeps them as written, as a memory shows them)."""
    seen: dict[str, None] = {}
    for part in (text or "").split(","):
        tag = part.strip().lower() if fold else part.strip()
        if tag:
            seen[tag] = None
    return tuple(seen)


@dataclass(frozen=True, slots=True, kw_only=True)
class Provenance:
    """Where a record came from: tier, journal file and line (or archive member), source."""

    id: str
    key: int
    tier: str
    origin: str
    source: str
    recorded_at: str
    content_hash: str
