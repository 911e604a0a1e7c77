"""The one- and two-character piece bitmaps against SQLite's own ``LIKE`` (the seed's match).

Short queries (``go``, ``ß``, ``é``, ``50%``) have no three-character run for the trigram
index; their answers now come from bitmaps alone, with no row read. SQLite's ``LIKE`` over
a plain table of the same rows is the oracle: every one- and two-character query over an
alphabet that mixes ASCII case, ``ß``/``ẞ``, the Kelvin sign, ``ſ``, ``İ``/``ı``, accents,
wildcards, NUL and newlines must give the same count and the same newest-first ids, on a
fresh build, after appends, and within date windows and tags.
"""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest
import re2
from terminai_apts.memory import ThermalMemory, grams, store
from terminai_apts.memory.cli import import_archive
from terminai_apts.memory.records import Memory

from tests.unit.memory.seed_oracle import Row, SeedOracle, write_archive

ALPHABET = ["a", "A", "b", "g", "o", "O", "s", "S", "ß", "ẞ", "k", "K", "\u212a", "ſ", "i", "I", "İ", "ı",
            "é", "É", "5", "0", "%", "_", " ", "\n", "\x00", "日", "🙂"]  # fmt: skip


def _text(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, n)))


def _rows(rng: random.Random, n: int) -> list[Row]:
    return [
        (
            f"m{i}",
            f"2024-{1 + i % 12:02d}-{1 + i % 28:02d}",
            _text(rng, 6),
            _text(rng, 12),
            _text(rng, 4),
            rng.choice(("a", "b", "a,b", "")),
            "s",
            1.0,
        )
        for i in range(n)
    ]


QUERIES = [*ALPHABET, *("".join(p) for p in itertools.product(["a", "ß", "K", "é", "%", "ſ", "0", "\n"], repeat=2))]


def _check(mem: ThermalMemory, oracle: SeedOracle, queries: list[str]) -> int:
    exact = 0
    for q in queries:
        assert mem.count_results(q) == oracle.count(q), repr(q)
        res = mem.search_results(q, limit=7)
        assert [h.memory.id for h in res] == [m.id for m in oracle.search(q, limit=7)], repr(q)
        assert res.total == oracle.count(q), repr(q)
        for span, tags in ((("2024-03-01", "2024-08-31"), None), (None, ["b"]), (("2024-02-01", "2024-02-28"), ["a"])):
            assert mem.count_results(q, date_range=span, tags=tags) == oracle.count(q, span, tags), (q, span, tags)
            got = [h.memory.id for h in mem.search_results(q, date_range=span, tags=tags, limit=5)]
            assert got == [m.id for m in oracle.search(q, span, tags, limit=5)], (q, span, tags)
        exact += "short-piece bitmap" in res.plan
    return exact


@pytest.mark.parametrize("seed", [1, 2])
def test_short_queries_equal_sqlite_like(tmp_path: Path, seed: int) -> None:
    rows = _rows(random.Random(seed), 400)
    archive, index = tmp_path / "a.db", tmp_path / "i.db"
    write_archive(archive, rows)
    store.build(index, import_archive(archive))
    oracle = SeedOracle(archive)
    with ThermalMemory(index) as mem:
        exact = _check(mem, oracle, QUERIES)
    oracle.close()
    assert exact > len(QUERIES) // 2  # the bitmaps answered most of them (not a scan)


@pytest.mark.parametrize("block_bits", [16, 4])
def test_appended_records_are_in_the_bitmaps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block_bits: int) -> None:
    # 16 ids a block: appends land in the last block, and in new ones, and queries join many.
    monkeypatch.setattr(grams, "BLOCK_BITS", block_bits)
    monkeypatch.setattr(grams, "_MASK", (1 << block_bits) - 1)
    rows = _rows(random.Random(3), 300)
    archive, index = tmp_path / "a.db", tmp_path / "i.db"
    write_archive(archive, rows)
    records = sorted(import_archive(archive), key=lambda r: (r.date, r.uid))
    store.build(index, records[:100])
    assert store.append(index, records[100:250]) == 150
    assert store.append(index, records[250:]) == 50
    oracle = SeedOracle(archive)
    with ThermalMemory(index) as mem:
        _check(mem, oracle, QUERIES[:40])
    oracle.close()


def test_pieces_follow_like_folding() -> None:
    assert grams.pieces("Ab") == {"a", "b", "ab"}
    assert grams.pieces("ẞß") == {"ẞ", "ß", "ẞß"}  # LIKE folds ASCII only
    assert grams.pieces("x\x00yz") == {"x"}  # LIKE stops at a NUL
    assert grams.exact_piece("%Go%") == "go"
    assert grams.exact_piece("g_") is None and grams.exact_piece("a%b") is None and grams.exact_piece("abc") is None


def test_an_index_of_the_previous_format_is_refused_with_a_rebuild_hint(tmp_path: Path) -> None:
    from terminai_apts.errors import MemoryStoreError

    archive, index = tmp_path / "a.db", tmp_path / "i.db"
    write_archive(archive, _rows(random.Random(4), 20))
    store.build(index, import_archive(archive))
    conn = store.open_writer(index)
    with conn:  # what an index written before the piece bitmaps says of itself
        conn.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")
        conn.execute("DROP TABLE grams")
    conn.close()
    for attempt in (lambda: ThermalMemory(index), lambda: store.append(index, import_archive(archive))):
        with pytest.raises(MemoryStoreError, match=f"index schema 5, expected {store.SCHEMA_VERSION}") as info:
            attempt()
        assert "--rebuild" in (info.value.hint or "")
    store.build(index, import_archive(archive))  # what the hint says: a rebuild
    oracle = SeedOracle(archive)
    with ThermalMemory(index) as mem:
        assert mem.count_results("a") == oracle.count("a")
    oracle.close()


def test_a_backfilled_index_answers_short_queries_in_date_order(tmp_path: Path) -> None:
    # Records older than the index's newest break "ids follow time": the bitmaps' id order
    # is no longer the seed's date order, so SQLite answers (and grep still uses the bitmaps).
    rows = _rows(random.Random(5), 240)
    archive, index = tmp_path / "a.db", tmp_path / "i.db"
    write_archive(archive, rows)
    records = sorted(import_archive(archive), key=lambda r: (r.date, r.uid))
    store.build(index, records[120:])
    assert store.append(index, records[:120]) == 120
    oracle = SeedOracle(archive)
    with ThermalMemory(index) as mem:
        assert _check(mem, oracle, QUERIES[:30]) == 0  # no bitmap answers on this shard
        for needle in ("ß", "é", "K", "ſ", "a0"):
            want = sorted(
                (m.key for m in (mem.record(r[0]) for r in rows) if m is not None and _folds(needle, m)),
                reverse=True,
            )
            res = mem.find(needle, limit=500)
            assert "piece-bitmap" in res.plan and [h.memory.key for h in res] == want, needle
    oracle.close()


def _folds(needle: str, m: Memory) -> bool:
    options = re2.Options()
    options.case_sensitive = False
    options.literal = True
    text = f"{m.title}\n{m.summary}\n{m.content}"
    return re2.compile(needle, options).search(text) is not None
