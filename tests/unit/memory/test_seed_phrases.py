"""The seed's substring search through the separator-token plan, against the seed's own code.

``thermal.search("cache timeout")`` finds its candidates in ``memories_sep`` by the
phrase's separator tokens (``che tim``; ``seed._near``), a run without one by its two
rarest trigrams, then lets ``LIKE`` decide them newest first in batches. Hypothesis writes archives of multi-word
texts that hold a phrase, its words far apart, in the other order, across title and
content, with other separators (two spaces, a tab, a newline, a hyphen, nothing), in other
case (ASCII and not: ``É``, ``ß``, the Kelvin sign, dotted ``İ`` whose lower case is two
characters), NULL, and queries cut from those texts (so many records match, past one
batch). Each call goes to seed 000's statements (``seed_statements``; under ``make
seed-check`` also to its ``ThermalMemoryAPI`` loaded from the seed document) and to
``thermal`` over one index and over two shards, with ``DENSE`` as shipped and as
small as 2 (the date-walk plan): the same memories in the same order, or an error on both.
``SEED_PHRASE_EXAMPLES`` sets the number of archives.
"""

from __future__ import annotations

import dataclasses
import os
import sqlite3
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from terminai_apts.errors import MemoryStoreError
from terminai_apts.memory import seed, store
from terminai_apts.memory.api import ThermalMemory
from terminai_apts.memory.cli import import_archive
from terminai_apts.memory.shard import Shard

from tests.unit.memory.seed_statements import SEED_FILE, SeedStatements, seed_api
from tests.unit.memory.test_seed_exact import _compare, _two_shards

EXAMPLES = int(os.environ.get("SEED_PHRASE_EXAMPLES", "8"))
WORDS = ["cache", "timeout", "Cache", "TIMEOUT", "time", "out", "the", "ache", "é", "É", "ß", "SS", "\u212aey", "İd"]
SEPARATORS = [" ", " ", " ", "  ", "\t", "\n", "-", "", ", "]
SCHEMA = (
    "CREATE TABLE memories(id TEXT PRIMARY KEY, date TEXT, title TEXT, content TEXT,"
    " summary TEXT, tags TEXT, source TEXT, confidence REAL)"
)


@st.composite
def _texts(draw: st.DrawFn) -> str:
    words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6))
    out = words[0]
    for word in words[1:]:
        out += draw(st.sampled_from(SEPARATORS)) + word
    return out


@st.composite
def archives(draw: st.DrawFn) -> list[tuple[Any, ...]]:
    pool = st.sampled_from(draw(st.lists(_texts(), min_size=1, max_size=4)))  # texts many records share
    text = st.one_of(pool, pool, pool, _texts(), st.none(), st.just(""))
    date = st.one_of(st.sampled_from(["2026-01-04", "2026-01-04 09:30:00", "2025-12-31T23:59:59Z", ""]), st.none())
    tags = st.sampled_from(["ops", " cache,timeout", "", None])
    row = st.tuples(date, text, text, text, tags)
    rows = draw(st.lists(row, min_size=40, max_size=120))
    return [(f"m{i}", *r, "ops", 0.9) for i, r in enumerate(rows)]


@st.composite
def queries(draw: st.DrawFn, rows: list[tuple[Any, ...]]) -> str:
    """A cut of some stored text (most often), or a phrase written afresh."""
    stored = [t for r in rows for t in r[2:4] if t]
    if stored and draw(st.booleans()):
        text = draw(st.sampled_from(stored))
        start = draw(st.integers(0, max(0, len(text) - 3)))
        return text[start : start + draw(st.integers(3, 24))]
    return draw(_texts())


def _write(path: Path, rows: list[tuple[Any, ...]]) -> None:
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(SCHEMA)
        conn.executemany("INSERT INTO memories VALUES (?,?,?,?,?,?,?,?)", rows)
    conn.close()


def _phrases_answer_as(oracle: Callable[[Path], Any], rows: list[tuple[Any, ...]], data: st.DataObject) -> None:
    asked = data.draw(st.lists(queries(rows), min_size=1, max_size=4))
    calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
    for text in asked:
        limit = data.draw(st.sampled_from([20, 1, 100, 1000, -1]))
        offset = data.draw(st.sampled_from([0, 0, 3, 40]))
        calls += [
            ("search", (text,), {"limit": limit, "offset": offset}),
            ("search", (text,), {"date_range": ("2026-01-01", "2026-01-04 23:59:59"), "tags": ["cache"]}),
            ("count", (text,), {}),
            ("grep", (text.replace(" ", ".*", 1),), {"limit": limit}),
        ]
    with tempfile.TemporaryDirectory(prefix="seed-phrases-") as tmp:
        root = Path(tmp)
        _write(root / "archive.db", rows)
        store.build(root / "index.db", import_archive(root / "archive.db"))
        theirs = oracle(root / "archive.db")
        for ours in (ThermalMemory(root / "index.db"), _two_shards(root, root / "archive.db")):
            try:
                _compare(theirs, ours, calls)
            finally:
                ours.close()
        getattr(theirs, "close", lambda: None)()  # the seed's own class opens a connection per call


@pytest.mark.slow
@pytest.mark.parametrize("dense", [seed.DENSE, 2])
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(rows=archives(), data=st.data())
def test_phrases_answer_as_the_seeds_statements(
    dense: int, rows: list[tuple[Any, ...]], data: st.DataObject, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(seed, "DENSE", dense)
    _phrases_answer_as(SeedStatements, rows, data)


@pytest.mark.slow
@pytest.mark.seed
@pytest.mark.parametrize("dense", [seed.DENSE, 2])
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(rows=archives(), data=st.data())
def test_phrases_answer_as_the_seeds_own_code(
    dense: int, rows: list[tuple[Any, ...]], data: st.DataObject, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same against the class in the seed document itself (``make seed-check``)."""
    assert SEED_FILE.is_file(), f"no seed document at {SEED_FILE}: set TERMINAI_SEED_000"
    monkeypatch.setattr(seed, "DENSE", dense)
    _phrases_answer_as(lambda path: seed_api()(str(path)), rows, data)


def test_a_phrase_whose_words_are_common_apart_asks_for_them_together(tmp_path: Path) -> None:
    """The words in most records, the phrase in two: the plan's candidates are the two (the
    token across the space), where an AND of the phrase's trigrams would name every record
    holding both words."""
    rows = [(f"a{i}", "2026-01-04", "cache warm", "the timeout was long", "", "", "ops", 0.9) for i in range(60)]
    rows += [(f"b{i}", f"2026-01-0{i + 5}", "Cache Timeout", "x", "", "", "ops", 0.9) for i in range(2)]
    rows += [("c", "2026-01-03", "a", "the cache  timeout", "", "", "ops", 0.9)]  # two spaces: not the phrase
    _write(tmp_path / "archive.db", rows)
    store.build(tmp_path / "index.db", import_archive(tmp_path / "archive.db"))
    shard = Shard(tmp_path / "index.db")
    near = seed._near(shard, "%cache timeout%")
    assert near is not None and near[0] == "memories_sep", near
    candidates = seed._candidates(shard, near)
    assert candidates is not None and len(candidates) == 2, (near, candidates)
    shard.close()
    with ThermalMemory(tmp_path / "index.db") as ours:
        got = [m.id for m in ours.search("cache timeout")]
    oracle = SeedStatements(tmp_path / "archive.db")
    want = [m.id for m in oracle.search("cache timeout")]
    oracle.close()
    assert got == want == ["b1", "b0"]


def test_appended_records_are_counted_for_the_plan(tmp_path: Path) -> None:
    """``tri_stats`` holds what the trigram tokenizer indexed, built and appended alike."""
    rows = [("m1", "2026-01-04", "Cache", "timeout", "", "", "ops", 0.9)]
    _write(tmp_path / "archive.db", rows)
    records = import_archive(tmp_path / "archive.db")
    store.build(tmp_path / "index.db", records)
    store.append(tmp_path / "index.db", [dataclasses.replace(records[0], uid="m2")])
    conn = sqlite3.connect(tmp_path / "index.db")
    counts = dict(conn.execute("SELECT gram, df FROM tri_stats"))
    conn.close()
    assert counts["cac"] == 2 and counts["out"] == 2 and "Cac" not in counts


def test_an_index_without_separator_tokens_is_refused_until_rebuilt(tmp_path: Path) -> None:
    """An index of schema 7 (no ``memories_sep``) is refused by readers and writers alike,
    with the rebuild as the hint; the rebuilt index answers as the seed."""
    rows = [("m1", "2026-01-04", "Cache Timeout", "x", "", "", "ops", 0.9)]
    _write(tmp_path / "archive.db", rows)
    index = tmp_path / "index.db"
    store.build(index, import_archive(tmp_path / "archive.db"))
    conn = store.open_writer(index)
    with conn:  # what an index written before the separator tokens says of itself
        conn.execute("UPDATE meta SET value = '7' WHERE key = 'schema_version'")
        conn.execute("DROP TABLE memories_sep")
    conn.close()
    for attempt in (lambda: ThermalMemory(index), lambda: store.append(index, import_archive(tmp_path / "archive.db"))):
        with pytest.raises(MemoryStoreError, match="index schema 7, expected 8") as info:
            attempt()
        assert "--rebuild" in (info.value.hint or "")
    store.build(index, import_archive(tmp_path / "archive.db"))
    with ThermalMemory(index) as ours:
        got = [m.id for m in ours.search("cache timeout")]
    oracle = SeedStatements(tmp_path / "archive.db")
    assert got == [m.id for m in oracle.search("cache timeout")] == ["m1"]
    oracle.close()


@pytest.mark.parametrize(
    "query",
    ["".join(chr(0x4E00 + i) for i in range(20_000)), "cache timeout " * 3_000, "x" * 40_000 + " cache"],
    ids=["pattern-too-long-for-LIKE", "long-repeated-phrase", "long-run"],
)
def test_a_long_query_answers_as_the_seed(tmp_path: Path, query: str) -> None:
    """Past SQLite's 50,000-byte LIKE pattern the seed's scan is an error; under it an answer."""
    rows = [(f"m{i}", "2026-01-04", "Cache Timeout", "x", "", "", "ops", 0.9) for i in range(3)]
    _write(tmp_path / "archive.db", rows)
    store.build(tmp_path / "index.db", import_archive(tmp_path / "archive.db"))
    oracle = SeedStatements(tmp_path / "archive.db")
    with ThermalMemory(tmp_path / "index.db") as ours:
        _compare(oracle, ours, [("search", (query,), {}), ("count", (query,), {}), ("grep", (query,), {})])
    oracle.close()


def test_an_offset_at_the_end_of_sqlites_integers_answers_as_the_seed(tmp_path: Path) -> None:
    rows = [(f"m{i}", "2026-01-04", "Cache Timeout", "x", "", "", "ops", 0.9) for i in range(3)]
    _write(tmp_path / "archive.db", rows)
    store.build(tmp_path / "index.db", import_archive(tmp_path / "archive.db"))
    calls = [
        ("search", ("cache timeout",), {"limit": 20, "offset": 2**63 - 1}),
        ("search", ("cache timeout",), {"limit": 2**63 - 1, "offset": 1}),
        ("search", ("x",), {"limit": 2**63 - 1, "offset": 2**63 - 1}),
    ]
    _answers_as_the_seed(tmp_path, calls)


def test_a_query_too_short_for_a_trigram_reads_only_the_records_holding_its_piece(tmp_path: Path) -> None:
    """``ß``, ``é`` or ``go`` name their candidates by the short-piece bitmaps (folded as
    ``LIKE`` folds: ``É`` is not ``é``, U+FFFE is U+FFFD), where the seed's scan reads every row."""
    texts = ["straße", "café", "CAFÉ", "Go on", "ago", "x\ufffe", "x\ufffd", "plain"]
    rows = [(f"m{i}", f"2026-01-{i + 10}", "t", text, "", "", "ops", 0.9) for i, text in enumerate(texts)]
    rows += [(f"f{i}", "2026-01-01", "t", "filler", "", "", "ops", 0.9) for i in range(40)]
    _write(tmp_path / "archive.db", rows)
    store.build(tmp_path / "index.db", import_archive(tmp_path / "archive.db"))
    shard = Shard(tmp_path / "index.db")
    near, ids = seed._plan(shard, seed.Where("%é%"))
    assert near is None and ids is not None and len(ids) == 1, ids
    shard.close()
    queries = ["ß", "é", "É", "go", "GO", "\ufffd", "\uffff", "x", "zz"]
    calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
        (name, (q,), {}) for q in queries for name in ("search", "count", "grep")
    ]
    _answers_as_the_seed(tmp_path, calls)


def _answers_as_the_seed(root: Path, calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]]) -> None:
    """``calls`` answered over ``root/index.db`` and over two shards as the seed's statements
    answer them over ``root/archive.db``."""
    oracle = SeedStatements(root / "archive.db")
    try:
        for ours in (ThermalMemory(root / "index.db"), _two_shards(root, root / "archive.db")):
            try:
                _compare(oracle, ours, calls)
            finally:
                ours.close()
    finally:
        oracle.close()
