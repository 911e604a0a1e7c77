"""The SQLite index: schema, full builds (temp file + atomic rename) and incremental appends.

The journal files are the truth; this file is a rebuildable index. ``memories`` holds the
records with ids in event-time order (so date windows become id ranges), ``memories_fts``
is an external-content FTS5 index with persisted bm25 column weights, ``memories_tri`` a
trigram index for substring search and regex prefiltering, ``tri_stats`` its document
frequency per trigram, ``memories_sep`` the separator tokens of title and content (the seed's
phrase search, :mod:`terminai_apts.memory.seed` and :mod:`~terminai_apts.memory.separator_tokens`),
``term_stats`` the document frequency of every indexed term (kept exact on append) for the query planner, ``grams``
the record bitmaps of every one- and two-character piece (:mod:`terminai_apts.memory.grams`).
Only the writer side lives here; the read-only API is :mod:`terminai_apts.memory.api`.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from urllib.parse import quote

from terminai_apts import durable
from terminai_apts.boundary import what_is
from terminai_apts.errors import MemoryStoreError
from terminai_apts.memory import grams, separator_tokens, termbits
from terminai_apts.memory.records import TEXT_AFFINITY, NewMemory, content_hash
from terminai_apts.memory.terms import TOKENIZER, Terms

SCHEMA_VERSION = "8"
# 16 KiB pages: rows of a few hundred bytes waste less of each page than with 4 KiB (the
# records table is 7% smaller); FTS5 keeps its own 4 KB leaves inside them.
PAGE_SIZE = 16384
# bm25 weights for (title, summary, content, tags): a title hit counts most.
RANK = "bm25(5.0, 2.0, 1.0, 3.0)"

_TABLES = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE memories(
  id INTEGER PRIMARY KEY, uid TEXT NOT NULL, date TEXT NOT NULL, recorded_at TEXT,
  title TEXT NOT NULL, content TEXT NOT NULL, summary TEXT NOT NULL, tags TEXT NOT NULL,
  source TEXT NOT NULL, confidence REAL NOT NULL, kind TEXT NOT NULL, tier TEXT NOT NULL,
  origin TEXT NOT NULL, origin_uid INTEGER NOT NULL DEFAULT 0, content_hash BLOB NOT NULL,
  superseded_by INTEGER);
CREATE TABLE origin_prefixes(n INTEGER PRIMARY KEY, prefix TEXT NOT NULL UNIQUE);
CREATE TABLE memory_tags(tag TEXT NOT NULL, id INTEGER NOT NULL, PRIMARY KEY(tag, id)) WITHOUT ROWID;
CREATE TABLE term_stats(term TEXT PRIMARY KEY, df INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE term_bits(term TEXT PRIMARY KEY, bits BLOB NOT NULL);
CREATE VIRTUAL TABLE memories_fts USING fts5(title, summary, content, tags,
  content='memories', content_rowid='id', tokenize='{tokenizer}');
CREATE VIRTUAL TABLE memories_tri USING fts5(title, summary, content,
  content='memories', content_rowid='id', tokenize='trigram', detail='none', columnsize=0);
CREATE VIRTUAL TABLE memories_sep USING fts5(tokens, content='', tokenize='ascii', detail='none', columnsize=0);
CREATE TABLE tri_stats(gram TEXT PRIMARY KEY, df INTEGER NOT NULL) WITHOUT ROWID;
"""
# ``memories_sep`` is contentless: its tokens are hashes, computed by the writer's
# ``separator_tokens`` function, which the triggers also call (so a writer without it fails
# instead of leaving the filter stale). The seed's ``LIKE '%cache timeout%'`` asks it for
# the token around the run's space instead of every trigram anywhere in the record:
# "cache" and "timeout" are in 5,000 records together, the token in 63. ``tri_stats`` (the
# number of records holding each trigram) picks the trigrams of a run with no separator;
# both only steer the plan, the candidates are always checked by ``LIKE`` itself.
# Created after the bulk load: an index built from sorted keys fills its pages, one filled
# row by row in uid or hash order leaves a third of them empty. Stored compactly (what
# readers see is rebuilt in shard.COLUMNS): ``recorded_at`` is NULL when it is the event
# time (an archive's records); an origin made of a shared prefix and the uid (an archive
# member: ``NAME#memories/UID``) is ``origin_uid``, the prefix's number in
# ``origin_prefixes``, with ``origin`` empty (neither part is stored once per record);
# ``content_hash`` is the SHA-256 as 32 bytes, indexed by its first 4 (enough to find the
# few candidates; the query compares all 32). An index on ``date`` holds the rowid after
# it: ``ORDER BY date, id`` reads it as it is.
_INDEXES = """
CREATE UNIQUE INDEX memories_uid ON memories(uid);
CREATE INDEX memories_date ON memories(date);
CREATE INDEX memories_hash ON memories(substr(content_hash, 1, 4));
CREATE INDEX memories_source ON memories(source);
"""

# The seed's view of each record (:mod:`terminai_apts.memory.seed`): its id, date, tags,
# source and confidence as the archive stored them, under the archive's column affinities
# (so ``date BETWEEN ? AND ?`` converts its bounds as the archive would), which of title,
# content and summary were NULL, and its place among ties in the archive's own order.
_SEED_TABLE = """
CREATE TABLE seed_rows(id INTEGER PRIMARY KEY, uid {0}, date {1}, tags {2}, source {3}, confidence {4},
  nulls INTEGER NOT NULL DEFAULT 0, pos INTEGER, title_raw, content_raw, summary_raw);
"""
# After the rows, as ``_INDEXES``: filled in id order, the date-ordered index left half of
# its pages empty (8.3 MB, 4.1 MB of it unused, for the Debian changelogs).
_SEED_INDEXES = """
CREATE INDEX seed_order ON seed_rows(date DESC, pos, id DESC);
CREATE INDEX seed_uid ON seed_rows(uid);
"""
_AFFINITIES = frozenset({"TEXT", "INTEGER", "REAL", "NUMERIC", "BLOB"})
_SEED_INSERT = (
    "INSERT INTO seed_rows(id, uid, date, tags, source, confidence, nulls, pos, title_raw, content_raw, summary_raw)"
    " VALUES (?,?,?,?,?,?,?,?,?,?,?)"
)


def _seed_table(records: Sequence[NewMemory]) -> str:
    """The seed table under the first archive's affinities (a journal's: text, and real confidence)."""
    affinity = next((r.stored.affinity for r in records if r.stored is not None), TEXT_AFFINITY)
    if len(affinity) != len(TEXT_AFFINITY) or not _AFFINITIES.issuperset(affinity):
        raise MemoryStoreError(f"unknown column affinities {affinity!r}")
    return _SEED_TABLE.format(*affinity)


def _seed_row(mid: int, rec: NewMemory) -> tuple[object, ...]:
    if rec.stored is None:
        texts = (None, None, None)  # a journal's texts are text
        return (mid, rec.uid, rec.date, ",".join(rec.tags), rec.source, float(rec.confidence), 0, None, *texts)
    return (mid, *rec.stored.values, rec.stored.nulls, rec.stored.position, *rec.stored.texts)


_TRIGGERS = """
CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
  INSERT INTO memories_fts(rowid, title, summary, content, tags)
    VALUES (new.id, new.title, new.summary, new.content, new.tags);
  INSERT INTO memories_tri(rowid, title, summary, content)
    VALUES (new.id, new.title, new.summary, new.content);
  INSERT INTO memories_sep(rowid, tokens) VALUES (new.id, separator_tokens(new.title, new.content));
END;
CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
  DELETE FROM seed_rows WHERE id = old.id;
  INSERT INTO memories_fts(memories_fts, rowid, title, summary, content, tags)
    VALUES ('delete', old.id, old.title, old.summary, old.content, old.tags);
  INSERT INTO memories_tri(memories_tri, rowid, title, summary, content)
    VALUES ('delete', old.id, old.title, old.summary, old.content);
  INSERT INTO memories_sep(memories_sep, rowid, tokens)
    VALUES ('delete', old.id, separator_tokens(old.title, old.content));
END;
CREATE TRIGGER memories_au AFTER UPDATE OF title, summary, content, tags ON memories BEGIN
  INSERT INTO memories_fts(memories_fts, rowid, title, summary, content, tags)
    VALUES ('delete', old.id, old.title, old.summary, old.content, old.tags);
  INSERT INTO memories_tri(memories_tri, rowid, title, summary, content)
    VALUES ('delete', old.id, old.title, old.summary, old.content);
  INSERT INTO memories_sep(memories_sep, rowid, tokens)
    VALUES ('delete', old.id, separator_tokens(old.title, old.content));
  INSERT INTO memories_fts(rowid, title, summary, content, tags)
    VALUES (new.id, new.title, new.summary, new.content, new.tags);
  INSERT INTO memories_tri(rowid, title, summary, content)
    VALUES (new.id, new.title, new.summary, new.content);
  INSERT INTO memories_sep(rowid, tokens) VALUES (new.id, separator_tokens(new.title, new.content));
END;
"""

_INSERT = (
    "INSERT INTO memories(id, uid, date, recorded_at, title, content, summary, tags, source,"
    " confidence, kind, tier, origin, origin_uid, content_hash) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
)
# Trigram postings are the costliest part of a build: filled in id chunks, each its own
# transaction, so no single step of a million-record build runs for minutes.
TRIGRAM_CHUNK = 100_000
SHARD_ID_BITS = 32


class _Prefixes:
    """Numbers of origin prefixes (``origin_prefixes``), new ones added as records arrive."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._known: dict[str, int] = dict(conn.execute("SELECT prefix, n FROM origin_prefixes"))

    def split(self, rec: NewMemory) -> tuple[str, int]:
        """``(origin, origin_uid)`` as stored for ``rec``."""
        if not rec.uid or not rec.origin.endswith(rec.uid):
            return rec.origin, 0
        prefix = rec.origin[: -len(rec.uid)]
        n = self._known.get(prefix)
        if n is None:
            n = self._known[prefix] = len(self._known) + 1
            self._conn.execute("INSERT INTO origin_prefixes(n, prefix) VALUES (?, ?)", (n, prefix))
        return "", n


def _row(mid: int, rec: NewMemory, prefixes: _Prefixes) -> tuple[object, ...]:
    return (
        mid,
        rec.uid,
        rec.date,
        None if rec.recorded_at == rec.date else rec.recorded_at,
        rec.title,
        rec.content,
        rec.summary,
        ",".join(rec.tags),
        rec.source,
        float(rec.confidence),
        rec.kind,
        rec.tier,
        *prefixes.split(rec),
        bytes.fromhex(content_hash(rec.title, rec.content)),
    )


def shard_base(quarter: str) -> int:
    """The id before a quarter shard's first record: ``(year * 4 + q - 1) << 32``.

    Sealed shards and the live index then never share an id (the live index stays below
    2**32), and an id names the file that holds it.
    """
    year, q = int(quarter[:4]), int(quarter[-1])
    return (year * 4 + q - 1) << SHARD_ID_BITS


def build(
    path: Path,
    records: Iterable[NewMemory],
    *,
    first_id: int = 1,
    progress: Callable[[str, float], None] | None = None,
    meta: Mapping[str, str] | None = None,
) -> int:
    """Build a fresh index at ``path`` from ``records``; returns the number of records.

    Written to a temporary file and renamed into place, so an aborted build never leaves
    a half-built index (a killed build with ``journal_mode=OFF`` corrupts the file).
    Duplicate uids keep the first occurrence; ids follow event time from ``first_id``.
    ``progress`` gets each step's name and duration in seconds; ``meta`` adds keys to the
    ``meta`` table (a journal marks the files it seals).
    """
    clock = _Steps(progress)
    unique: dict[str, NewMemory] = {}
    for rec in records:
        unique.setdefault(rec.uid, rec)
    ordered = sorted(unique.values(), key=lambda r: (r.date, r.uid))
    durable.remove_leftovers(path)  # a killed build's temp file and journal (up to a whole index)
    tmp = durable.temp_path(path)
    tmp.unlink(missing_ok=True)
    conn = sqlite3.connect(tmp)
    separator_tokens.register(conn)
    try:
        conn.execute(f"PRAGMA page_size={PAGE_SIZE}")
        conn.executescript(_TABLES.format(tokenizer=TOKENIZER) + grams.SCHEMA)
        with conn:
            prefixes = _Prefixes(conn)
            conn.executemany(_INSERT, (_row(i, r, prefixes) for i, r in enumerate(ordered, start=first_id)))
            conn.executescript(_INDEXES + _seed_table(ordered))
            conn.executemany(_SEED_INSERT, (_seed_row(i, r) for i, r in enumerate(ordered, start=first_id)))
            conn.executescript(_SEED_INDEXES)
            # In key order, so the tag index's pages fill.
            conn.executemany(
                "INSERT OR IGNORE INTO memory_tags(tag, id) VALUES (?, ?)",
                sorted({(t.lower(), i) for i, r in enumerate(ordered, start=first_id) for t in r.tags}),
            )
            _link_superseded(conn, ordered)
        clock.lap("records")
        with conn:
            conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')")
            # The rank setting persists in the file, so read-only readers get weighted bm25.
            conn.execute("INSERT INTO memories_fts(memories_fts, rank) VALUES ('rank', ?)", (RANK,))
        conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('optimize')")
        conn.commit()
        clock.lap("full-text")
        for low in range(first_id, first_id + len(ordered), TRIGRAM_CHUNK):
            with conn:
                conn.execute(
                    "INSERT INTO memories_tri(rowid, title, summary, content)"
                    " SELECT id, title, summary, content FROM memories WHERE id BETWEEN ? AND ?",
                    (low, low + TRIGRAM_CHUNK - 1),
                )
            clock.lap(f"trigram {low - first_id + 1}-{min(low - first_id + TRIGRAM_CHUNK, len(ordered))}")
        conn.execute("INSERT INTO memories_tri(memories_tri) VALUES ('optimize')")  # one segment: 3% smaller
        with conn:
            conn.execute("CREATE VIRTUAL TABLE temp.grams USING fts5vocab(main, memories_tri, 'row')")
            conn.execute("INSERT INTO tri_stats(gram, df) SELECT term, doc FROM temp.grams")
            conn.execute("DROP TABLE temp.grams")
        clock.lap("trigram merge")
        with conn:
            conn.executemany(
                "INSERT INTO memories_sep(rowid, tokens) VALUES (?, ?)",
                ((i, separator_tokens.of_record(r.title, r.content)) for i, r in enumerate(ordered, start=first_id)),
            )
        conn.execute("INSERT INTO memories_sep(memories_sep) VALUES ('optimize')")
        conn.commit()
        clock.lap("separator tokens")
        with conn:
            grams.build(
                conn, first_id, ((i, r.title, r.content, r.summary) for i, r in enumerate(ordered, start=first_id))
            )
        clock.lap("short pieces")
        with conn:
            conn.execute("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, memories_fts, 'row')")
            conn.execute("INSERT INTO term_stats(term, df) SELECT term, doc FROM temp.vocab")
            conn.execute("DROP TABLE temp.vocab")
            conn.executemany(
                "INSERT INTO meta(key, value) VALUES (?, ?)",
                [
                    ("schema_version", SCHEMA_VERSION),
                    ("ordered", "1"),
                    ("bits_base", str(first_id)),
                    # The records up to this id have their UNSURE bit set where due (grams.py);
                    # an index without the key, or ids past it, get no posting-only count.
                    ("unsure_through", str(first_id + len(ordered) - 1)),
                    *(meta or {}).items(),
                ],
            )
        conn.executescript(_TRIGGERS)
        conn.commit()
        clock.lap("term statistics")
        with conn:
            termbits.build(conn, first_id, len(ordered))
        clock.lap("term bitmaps")
    finally:
        conn.close()
    durable.replace(tmp, path)
    return len(ordered)


class _Steps:
    def __init__(self, report: Callable[[str, float], None] | None) -> None:
        self._report = report
        self._mark = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        if self._report is not None:
            self._report(name, now - self._mark)
        self._mark = now


def _link_superseded(conn: sqlite3.Connection, fresh: Sequence[NewMemory]) -> None:
    """Point each replaced record's ``superseded_by`` at the id of the record replacing it."""
    conn.executemany(
        "UPDATE memories SET superseded_by = (SELECT id FROM memories WHERE uid = ?) WHERE uid = ?",
        [(r.uid, r.supersedes) for r in fresh if r.supersedes],
    )


def _count_terms(conn: sqlite3.Connection, fresh: Sequence[tuple[int, NewMemory]]) -> None:
    """Keep ``term_stats`` and the frequent-term bitmaps exact for appended records."""
    tokenize = Terms()
    try:
        postings = [(mid, tokenize(f"{r.title}\n{r.summary}\n{r.content}\n{','.join(r.tags)}")) for mid, r in fresh]
    finally:
        tokenize.close()
    conn.executemany(
        "INSERT INTO term_stats(term, df) VALUES (?, 1) ON CONFLICT(term) DO UPDATE SET df = df + 1",
        [(t,) for _mid, terms in postings for t in terms],
    )
    termbits.add(conn, base_id(conn), postings)
    _count_grams(conn, [r for _mid, r in fresh])


def _count_grams(conn: sqlite3.Connection, fresh: Sequence[NewMemory]) -> None:
    """Count appended records in ``tri_stats``: their trigrams as ``memories_tri`` folds them,
    from a private in-memory table with the same tokenizer (one row per record). A record
    deleted later stays counted: the figure steers the plan only, never the answer."""
    scratch = sqlite3.connect(":memory:")
    try:
        scratch.execute(
            "CREATE VIRTUAL TABLE tri USING fts5(title, summary, content, tokenize='trigram', detail='none')"
        )
        scratch.execute("CREATE VIRTUAL TABLE tri_grams USING fts5vocab(tri, 'row')")
        scratch.executemany(
            "INSERT INTO tri(title, summary, content) VALUES (?, ?, ?)",
            [(r.title, r.summary, r.content) for r in fresh],
        )
        counted = scratch.execute("SELECT term, doc FROM tri_grams").fetchall()
    finally:
        scratch.close()
    conn.executemany(
        "INSERT INTO tri_stats(gram, df) VALUES (?, ?) ON CONFLICT(gram) DO UPDATE SET df = df + excluded.df", counted
    )


def base_id(conn: sqlite3.Connection) -> int:
    """The id bit 0 of the index's bitmaps stands for (its first id)."""
    return int(conn.execute("SELECT value FROM meta WHERE key = 'bits_base'").fetchone()[0])


def append(path: Path, records: Sequence[NewMemory]) -> int:
    """Add records whose uid is not yet indexed (idempotent); returns how many were new."""
    durable.remove_leftovers(path)  # a killed build's temp file, found by the next ordinary update
    conn = open_writer(path)
    try:
        with conn:
            known = {r[0] for r in conn.execute("SELECT uid FROM memories")} if records else set()
            dedup: dict[str, NewMemory] = {r.uid: r for r in reversed(records) if r.uid not in known}
            fresh = sorted(dedup.values(), key=lambda r: (r.date, r.uid))
            if not fresh:
                return 0
            top, last = conn.execute("SELECT coalesce(max(id), 0), coalesce(max(date), '') FROM memories").fetchone()
            if fresh[0].date < last:
                # A backfill breaks "ids follow time": readers fall back to the date index.
                conn.execute("UPDATE meta SET value='0' WHERE key='ordered'")
            prefixes = _Prefixes(conn)
            conn.executemany(_INSERT, (_row(top + i, r, prefixes) for i, r in enumerate(fresh, start=1)))
            conn.executemany(_SEED_INSERT, (_seed_row(top + i, r) for i, r in enumerate(fresh, start=1)))
            conn.executemany(
                "INSERT OR IGNORE INTO memory_tags(tag, id) VALUES (?, ?)",
                ((t.lower(), top + i) for i, r in enumerate(fresh, start=1) for t in r.tags),
            )
            _link_superseded(conn, fresh)
            _count_terms(conn, [(top + i, r) for i, r in enumerate(fresh, start=1)])
            grams.add(
                conn, base_id(conn), [(top + i, r.title, r.content, r.summary) for i, r in enumerate(fresh, start=1)]
            )
            # Extended only when it covered every earlier record (a writer that predates it leaves a gap).
            conn.execute(
                "UPDATE meta SET value = ? WHERE key = 'unsure_through' AND value = ?",
                (str(top + len(fresh)), str(top)),
            )
        return len(fresh)
    finally:
        conn.close()


def open_writer(path: Path) -> sqlite3.Connection:
    """A read-write connection to an index this module created (schema checked)."""
    if not path.is_file():
        raise MemoryStoreError(
            f"memory index {path} {what_is(path)}", hint="build it with `terminai-apts memory index`"
        )
    conn = sqlite3.connect(path, timeout=30)
    check_schema(conn, path)
    separator_tokens.register(conn)
    return conn


def is_sqlite(path: Path) -> bool:
    """True when ``path`` is a file starting with SQLite's magic header."""
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def _read_only(path: Path, sql: str, params: tuple[str, ...] = ()) -> list[tuple[object, ...]] | None:
    """The rows of one query on the SQLite file at ``path``, opened read-only (None: not SQLite or unreadable)."""
    if not is_sqlite(path):
        return None
    try:
        conn = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True)
    except sqlite3.Error:
        return None
    try:
        return conn.execute(sql, params).fetchall()
    except sqlite3.Error:
        return None
    finally:
        conn.close()


def is_legacy_archive(path: Path) -> bool:
    """True for an archive in the original schema: a ``memories`` table and no index tables."""
    rows = _read_only(path, "SELECT name FROM sqlite_master WHERE type IN ('table','view')")
    names = {r[0] for r in rows or ()}
    return "memories" in names and "meta" not in names and "memories_fts" not in names


def meta_value(path: Path, key: str) -> str | None:
    """``key`` of the ``meta`` table of the index at ``path``, read only (None: not an index, or no such key)."""
    rows = _read_only(path, "SELECT value FROM meta WHERE key = ?", (key,))
    return str(rows[0][0]) if rows else None


def check_schema(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse files that are not an index of this schema version, naming what they are."""
    try:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table','view')")}
    except sqlite3.DatabaseError as exc:
        raise MemoryStoreError(
            f"{path} is not a SQLite database ({exc})", hint="point at a memory index file"
        ) from None
    if "meta" not in names or "memories_fts" not in names:
        if "memories" in names:
            raise MemoryStoreError(
                f"{path} is an archive in the original schema, not an index",
                hint=f"import it: terminai-apts memory index INDEX --archive {path}",
            )
        raise MemoryStoreError(
            f"{path} is not a memory index (wrong schema)", hint="build one with `terminai-apts memory index`"
        )
    row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    if row is None or row[0] != SCHEMA_VERSION:
        raise MemoryStoreError(
            f"{path} has index schema {row[0] if row else 'unknown'}, expected {SCHEMA_VERSION}",
            hint="rebuild it with `terminai-apts memory index --rebuild`",
        )
