"""Titles and contents stored as blobs or numbers, and rows sharing an id, are found as the seed finds them.

SQLite's ``LIKE`` never matches a blob where it was built with LIKE_DOESNT_MATCH_BLOBS
(Debian's, so the image's), and reads a number as SQLite writes it (``1.0e+20``), not as
Python does (``1e+20``). Numbers stay numbers only in a column without text affinity, so
that archive declares none. Oracles: the seed's statements and, under ``make seed-check``,
its own class, on the same SQLite as the index: every call's memories field by field
(a number or blob comes back as stored), counts, and ``summarize``'s text. Rows sharing an
id (NULL ids, which a ``TEXT PRIMARY KEY`` admits, ``b"m9"`` beside ``"m9"``, and any id
twice where the archive declares no key) are each the seed's and each counted, and ``get``
answers with the row the archive's own ``WHERE id = ? LIMIT 1`` gives.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from terminai_apts.memory import store
from terminai_apts.memory.api import ThermalMemory
from terminai_apts.memory.cli import import_archive

from tests.unit.memory.seed_statements import SEED_FILE, SeedStatements, seed_api
from tests.unit.memory.test_seed_exact import _compare, _two_shards

ROWS: list[tuple[Any, ...]] = [
    ("m0", "2026-01-01", 1e20, "x", "s", "ops", "src", 0.9),
    ("m1", "2026-01-02", 1.0 / 3, "x", "s", "ops", "src", 0.9),
    ("m2", "2026-01-03", 12.0, 12, "s", "ops", "src", 0.9),
    ("m3", "2026-01-04", b"abc \x80 def", "x", "s", "ops", "src", 0.9),
    ("m4", "2026-01-05", b"abc-def-ghi", b"cache timeout", "s", "ops", "src", 0.9),
    ("m5", "2026-01-06", "abc-def-ghi", "cache timeout", "s", "ops", "src", 0.9),
    ("m6", "2026-01-07", "t", 123456789.125, "s", "ops", "src", 0.9),
    ("m7", "2026-01-08", "t", 1e-7, "s", "ops", "src", 0.9),
    (None, "2026-01-09", "shared id", "queue stalled", "s", "ops", "src", 0.9),
    (None, "2026-01-10", "shared id", "queue stalled", "s", "ops", "src", 0.9),
    ("m9", "2026-01-11", "shared id", "queue stalled", "s", "ops", "src", 0.9),
    (b"m9", "2026-01-12", "shared id", "queue stalled", "s", "ops", "src", 0.9),
    ("m9#12", "2026-01-13", "shared id", "queue stalled", "s", "ops", "src", 0.9),
    ("m8", "2026-01-20", "newer", "twice", 1e-7, "ops", "src", 0.9),
    ("m8", "2026-01-14", "older", "twice", "s", "ops", "src", 0.9),
]
QUERIES = ["1.0e+20", "1e+20", "0.333333333333333", "12.0", "12", "abc \ufffd def", "abc-def-ghi", "cache timeout"]
QUERIES += ["123456789.125", "1.0e-07", "1e-07", "def", "queue stalled", "shared", "twice", "1e+20"]
IDS: list[Any] = ["m0", "m8", "m9", b"m9", "m9#12", None, 12]


def _archive(path: Path, declared: str, key: str) -> None:
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(
            f"CREATE TABLE memories(id TEXT {key}, date TEXT, title {declared}, content {declared},"
            f" summary {declared}, tags TEXT, source TEXT, confidence REAL)"
        )
        # Without a key: "m8" twice (the newer inserted first) and one row twice over.
        rows = [r for r in ROWS if r[2] != "older"] if key else [*ROWS, ROWS[0]]
        conn.executemany("INSERT INTO memories VALUES (?,?,?,?,?,?,?,?)", rows)
    conn.close()


def _calls() -> list[tuple[str, tuple[Any, ...], dict[str, Any]]]:
    calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
        (name, (q,), {}) for q in QUERIES for name in ("search", "count", "grep", "summarize")
    ]
    return [*calls, *(("get", (i,), {}) for i in IDS), ("filter", (), {"limit": 100})]


SCHEMAS = [("TEXT", "PRIMARY KEY"), ("", "PRIMARY KEY"), ("TEXT", ""), ("BLOB", "")]
NAMES = ["seed-schema", "no-affinity", "no-key", "blob-affinity-no-key"]


@pytest.mark.parametrize(("declared", "key"), SCHEMAS, ids=NAMES)
def test_blobs_numbers_and_shared_ids_answer_as_the_seeds_statements(tmp_path: Path, declared: str, key: str) -> None:
    _archive(tmp_path / "archive.db", declared, key)
    store.build(tmp_path / "index.db", import_archive(tmp_path / "archive.db"))
    oracle = SeedStatements(tmp_path / "archive.db")
    with ThermalMemory(tmp_path / "index.db") as ours:
        _compare(oracle, ours, _calls())
        assert [m.id for m in ours.search("abc-def-ghi")] == ["m5"]  # the blob title is not matched
        assert ours.count("queue stalled") == 5
    oracle.close()


@pytest.mark.seed
@pytest.mark.parametrize(("declared", "key"), SCHEMAS, ids=NAMES)
def test_blobs_numbers_and_shared_ids_answer_as_the_seeds_own_code(tmp_path: Path, declared: str, key: str) -> None:
    assert SEED_FILE.is_file(), f"no seed document at {SEED_FILE}: set TERMINAI_SEED_000"
    _archive(tmp_path / "archive.db", declared, key)
    store.build(tmp_path / "index.db", import_archive(tmp_path / "archive.db"))
    theirs = seed_api()(str(tmp_path / "archive.db"))
    for ours in (ThermalMemory(tmp_path / "index.db"), _two_shards(tmp_path, tmp_path / "archive.db")):
        try:
            _compare(theirs, ours, _calls())
        finally:
            ours.close()
