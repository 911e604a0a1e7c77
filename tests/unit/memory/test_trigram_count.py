"""``count`` of a three-character ASCII text from its trigram's posting list, against SQLite's ``LIKE``.

Such a text is one trigram, so the trigram index's posting list is the seed's answer for
every record whose postings agree with ``LIKE``; the others are marked ``UNSURE`` at build
and append and read row by row. The oracle is SQLite's own ``LIKE`` over a plain table of the
same rows (the seed's statement); the alphabet holds what makes the two disagree: the Kelvin
sign and ``ſ`` (folded onto ``k``/``s`` by the trigram tokenizer, not by ``LIKE``), a NUL
(``LIKE`` stops reading there) and summaries with text of their own (indexed, not matched).
"""

from __future__ import annotations

import itertools
import random
import sqlite3
import time
from pathlib import Path

import pytest
from terminai_apts.memory import ThermalMemory, grams, matching, planner, store
from terminai_apts.memory.cli import import_archive
from terminai_apts.memory.shard import Shard

from tests.unit.memory.seed_oracle import Row, SeedOracle, write_archive

ALPHABET = ["k", "K", "\u212a", "s", "S", "ſ", "e", "E", "y", " ", "%", "_", "\x00", "é", "İ"]
ASCII = ["k", "K", "s", "S", "e", "y", " "]
# Every three-character ASCII text over the letters (the posting path), and a few that are not.
TRIPLES = ["".join(p) for p in itertools.product(["k", "S", "e", " "], repeat=3)]
QUERIES = [*TRIPLES, "kSe%", "%sey", "ſey", "k_y", "k%Se"]
SPANS = (None, ("2024-03-01", "2024-08-31"), ("2024-02-01", "2024-02-28"))


def _text(rng: random.Random, n: int, letters: list[str]) -> str:
    return "".join(rng.choice(letters) for _ in range(rng.randint(0, n)))


def _rows(rng: random.Random, n: int) -> list[Row]:
    rows = []
    for i in range(n):
        plain = rng.random() < 0.7  # most records are plain ASCII: the posting list answers them
        letters = ASCII if plain else ALPHABET
        title, content = _text(rng, 6, letters), _text(rng, 14, letters)
        # A summary inside the content adds no trigram; one of its own adds some LIKE never sees.
        summary = content[: rng.randint(0, len(content))] if rng.random() < 0.6 else _text(rng, 6, letters)
        rows.append((f"m{i}", f"2024-{1 + i % 12:02d}-{1 + i % 28:02d}", title, content, summary, "a", "s", 1.0))
    return rows


def _armed(mem: ThermalMemory) -> list[Shard]:
    """The memory's shards, ready for a direct call (as an API call arms them)."""
    for shard in mem._shards:
        shard.arm(time.monotonic() + 60)
    return list(mem._shards)


def _posted(mem: ThermalMemory, text: str, span: tuple[str, str] | None = None) -> list[int | None]:
    plan = planner.substring(text, span)
    return [matching.trigram_count(shard, plan) for shard in _armed(mem)]


def _check(mem: ThermalMemory, oracle: SeedOracle) -> int:
    """Every query's count equals the oracle's, in every window; returns how many the posting path answered."""
    answered = 0
    for q in QUERIES:
        for span in SPANS:
            assert mem.count_results(q, date_range=span) == oracle.count(q, span), (q, span)
            answered += None not in _posted(mem, q, span)
        assert mem.count_results(q, tags=["a"]) == oracle.count(q, None, ["a"]), q
    return answered


@pytest.mark.parametrize("seed", [1, 2])
def test_three_character_counts_equal_sqlite_like(tmp_path: Path, seed: int) -> None:
    rows = _rows(random.Random(seed), 400)
    archive, index = tmp_path / "a.db", tmp_path / "i.db"
    write_archive(archive, rows)
    store.build(index, import_archive(archive))
    oracle = SeedOracle(archive)
    with ThermalMemory(index) as mem:
        answered = _check(mem, oracle)
        # The ASCII three-character queries (66 of 68: outer % are free, in 3 windows) took the posting path.
        assert answered == 66 * len(SPANS)
        assert _posted(mem, "ſey") == [None] and _posted(mem, "k_y") == [None] and _posted(mem, "k%Se") == [None]
    oracle.close()


def _built_then_appended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block_bits: int, rows: list[Row]
) -> tuple[Path, Path]:
    """The archive of ``rows`` and an index built from its first 100 records, then two appends."""
    monkeypatch.setattr(grams, "BLOCK_BITS", block_bits)
    monkeypatch.setattr(grams, "_MASK", (1 << block_bits) - 1)
    archive, index = tmp_path / "a.db", tmp_path / "i.db"
    write_archive(archive, rows)
    records = sorted(import_archive(archive), key=lambda r: (r.date, r.uid))
    store.build(index, records[:100])
    assert store.append(index, records[100:250]) == 150
    assert store.append(index, records[250:]) == 50
    return archive, index


@pytest.mark.parametrize("block_bits", [16, 4])
def test_appended_records_are_marked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block_bits: int) -> None:
    archive, index = _built_then_appended(tmp_path, monkeypatch, block_bits, _rows(random.Random(3), 300))
    assert store.meta_value(index, "unsure_through") == "300"
    oracle = SeedOracle(archive)
    with ThermalMemory(index) as mem:
        assert _check(mem, oracle) == 66 * len(SPANS)
    oracle.close()


def test_records_a_writer_did_not_mark_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # What an append by a writer that predates the marks leaves: records past unsure_through
    # with no UNSURE bit. They count as marked, so the answer stays the seed's.
    rows = _rows(random.Random(4), 300)
    archive, index = tmp_path / "a.db", tmp_path / "i.db"
    write_archive(archive, rows)
    records = sorted(import_archive(archive), key=lambda r: (r.date, r.uid))
    store.build(index, records[:150])
    monkeypatch.setattr(grams, "trigram_unsure", lambda *_: False)
    conn = sqlite3.connect(index)
    with conn:  # the older writer neither marks nor moves the key
        conn.execute("DELETE FROM meta WHERE key = 'unsure_through'")
    conn.close()
    assert store.append(index, records[150:]) == 150
    conn = sqlite3.connect(index)
    with conn:
        conn.execute("INSERT INTO meta(key, value) VALUES ('unsure_through', '150')")
    conn.close()
    monkeypatch.undo()
    oracle = SeedOracle(archive)
    with ThermalMemory(index) as mem:
        assert _check(mem, oracle) == 66 * len(SPANS)
    oracle.close()
    assert store.append(index, []) == 0
    assert store.meta_value(index, "unsure_through") == "150"  # a later append does not paper over the gap


def test_an_index_without_the_marks_counts_every_candidate(tmp_path: Path) -> None:
    rows = _rows(random.Random(5), 200)
    archive, index = tmp_path / "a.db", tmp_path / "i.db"
    write_archive(archive, rows)
    store.build(index, import_archive(archive))
    conn = sqlite3.connect(index)
    with conn:  # an index of the same schema built before the marks
        conn.execute("DELETE FROM meta WHERE key = 'unsure_through'")
        conn.execute("DELETE FROM grams WHERE gram = ?", (grams.UNSURE,))
    conn.close()
    oracle = SeedOracle(archive)
    with ThermalMemory(index) as mem:
        assert _check(mem, oracle) == 0
    oracle.close()


def test_without_the_marks_the_posting_list_is_wrong(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The guard switched off: no record marked. Each of these records is in the posting list
    # of its query's trigram, and LIKE does not find the query in its title or content.
    rows: list[Row] = [
        ("m1", "2024-01-01", "\u212aey", "no", "", "a", "s", 1.0),  # Kelvin sign: the index reads "key"
        ("m2", "2024-01-02", "ſet", "no", "", "a", "s", 1.0),  # long s: the index reads "set"
        ("m3", "2024-01-03", "no", "no", "own words", "a", "s", 1.0),  # in the summary only
        ("m4", "2024-01-04", "key set own", "plain", "key", "a", "s", 1.0),  # a plain match of each
    ]
    archive, index = tmp_path / "a.db", tmp_path / "i.db"
    write_archive(archive, rows)
    monkeypatch.setattr(grams, "trigram_unsure", lambda *_: False)
    store.build(index, import_archive(archive))
    oracle = SeedOracle(archive)
    with ThermalMemory(index) as mem:
        for q in ("key", "set", "own"):
            assert oracle.count(q) == 1
            assert mem.count_results(q) == 2, q  # the posting list alone: wrong
    monkeypatch.undo()
    store.build(index, import_archive(archive))
    with ThermalMemory(index) as mem:
        for q in ("key", "set", "own", "KEY", "Set"):
            assert mem.count_results(q) == oracle.count(q) == 1, q
            assert _posted(mem, q) != [None]
    oracle.close()


def test_what_is_marked() -> None:
    assert not grams.trigram_unsure("Key", "plain text", "plain")  # summary inside the content
    assert not grams.trigram_unsure("naïve Straße İ", "é日🙂", "")  # no fold onto ASCII
    assert grams.trigram_unsure("\u212aelvin", "", "")
    assert grams.trigram_unsure("", "ſ", "")
    assert grams.trigram_unsure("a\x00b", "", "")
    assert grams.trigram_unsure("title", "content", "summary")  # trigrams of its own
    assert not grams.trigram_unsure("title", "content", "ententen")  # every run is in the content
    assert not grams.trigram_unsure("title", "content", "ab")  # too short for a trigram
    assert grams.folds_to_ascii({"\u212a"}) and not grams.folds_to_ascii({"é", "ß", "ẞ", "İ", "ı"})


# ----------------------------------------------------------------- frequent words
WORDS = ["deploy", "Deployed", "reDeploy", "latency", "LATENCY9", "ploy", "x1ten", "tenſ", "\u212aten", "la", "de"]
# An empty separator joins two words into a rarer one; a NUL hides the rest from LIKE.
SEPARATORS = [" ", " ", " ", "-", "\n", "", "\x00", "é"]
WORD_QUERIES = ["deploy", "DEPLOY", "ploy", "tency", "laten", "ployla", "1ten", "%deploy%", "ploy-", "ten\u212a"]


def _word_rows(rng: random.Random, n: int) -> list[Row]:
    def text(k: int) -> str:
        return "".join(rng.choice(WORDS) + rng.choice(SEPARATORS) for _ in range(rng.randint(0, k)))

    return [
        (f"m{i}", f"2024-{1 + i % 12:02d}-{1 + i % 28:02d}", text(3), text(8), text(2), "a", "s", 1.0) for i in range(n)
    ]


def _word_check(mem: ThermalMemory, oracle: SeedOracle) -> int:
    named = 0
    for q in WORD_QUERIES:
        for span in SPANS:
            assert mem.count_results(q, date_range=span) == oracle.count(q, span), (q, span)
            named += None not in [matching.word_count(s, planner.substring(q, span)) for s in _armed(mem)]
        assert mem.count_results(q, tags=["a"]) == oracle.count(q, None, ["a"]), q
    return named


@pytest.mark.parametrize("seed", [1, 2])
def test_word_counts_equal_sqlite_like(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    monkeypatch.setattr(grams, "WORD_MIN_RECORDS", 5)
    rows = _word_rows(random.Random(seed), 400)
    archive, index = tmp_path / "a.db", tmp_path / "i.db"
    write_archive(archive, rows)
    store.build(index, import_archive(archive))
    oracle = SeedOracle(archive)
    with ThermalMemory(index) as mem:
        # The queries some frequent word holds (not "ploy-", "ten\u212a"; "ployla" is rarer).
        assert _word_check(mem, oracle) >= 7 * len(SPANS)
    oracle.close()


@pytest.mark.parametrize("block_bits", [16, 4])
def test_appended_records_join_the_word_bitmaps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block_bits: int
) -> None:
    monkeypatch.setattr(grams, "WORD_MIN_RECORDS", 5)
    rows = _word_rows(random.Random(3), 300)
    archive, index = _built_then_appended(tmp_path, monkeypatch, block_bits, rows)
    oracle = SeedOracle(archive)
    with ThermalMemory(index) as mem:
        assert _word_check(mem, oracle) >= 7 * len(SPANS)
        deploys = [
            m
            for m in (mem.record(r[0]) for r in rows)
            if m is not None and "deploy" in grams.words_of(m.title, m.content)
        ]
        plan = planner.substring("deploy")
        bits = grams.bitmap(mem._shards[0].grams(grams.WORD + "deploy"), 0, 1 << 20)
        assert bits.bit_count() == len(deploys) > 50 and plan.literal == "deploy"  # appended ones included
    oracle.close()


def test_a_word_after_a_nul_names_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # LIKE stops reading at a NUL: a word after one is not where LIKE looks. With the cut
    # switched off, such a record is counted as a match it is not.
    monkeypatch.setattr(grams, "WORD_MIN_RECORDS", 2)
    rows: list[Row] = [
        ("m1", "2024-01-01", "deploy", "x", "", "a", "s", 1.0),
        ("m2", "2024-01-02", "x", "Deployed", "", "a", "s", 1.0),
        ("m3", "2024-01-03", "x\x00deploy", "y\x00deploy", "", "a", "s", 1.0),
        ("m4", "2024-01-04", "re-deploy", "redeploy", "deploy", "a", "s", 1.0),
    ]
    archive, index = tmp_path / "a.db", tmp_path / "i.db"
    write_archive(archive, rows)
    oracle = SeedOracle(archive)
    store.build(index, import_archive(archive))
    with ThermalMemory(index) as mem:
        assert mem.count_results("deploy") == oracle.count("deploy") == 3
        assert matching.word_count(_armed(mem)[0], planner.substring("DEPLOY")) == 3
    uncut = grams.words_of
    monkeypatch.setattr(grams, "words_of", lambda t, c: uncut(t.replace("\x00", " "), c.replace("\x00", " ")))
    store.build(index, import_archive(archive))
    with ThermalMemory(index) as mem:
        assert mem.count_results("deploy") == 4  # wrong: what the cut prevents
    oracle.close()


def test_byte_mask_and_words() -> None:
    assert grams.byte_mask(0b1011, 6) == b"110100"
    assert grams.byte_mask(0, 3) == b"000"
    assert grams.words_of("Re-Deploy x1234", "ab\x00zzzz naïve") == {"deploy", "x1234"}
