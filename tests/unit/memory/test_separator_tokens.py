"""Separator tokens are a sound filter for SQLite's ``LIKE``, and the index keeps them exact.

The oracle is SQLite itself: whenever ``text LIKE '%run%'`` holds (ASCII case folded by
SQLite, not by us), every token of the run must be a token of the text, or the seed's
search would miss that record. Texts mix ASCII in both cases, letters whose case ``LIKE``
does not fold (``É``, ``ß``, the Kelvin sign, dotted ``İ``), the noncharacters U+FFFE and
U+FFFF that SQLite reads as U+FFFD, digits, underscores, NUL, newlines and other separators;
runs are cut from them with ASCII case flipped and those three swapped.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from terminai_apts.memory import separator_tokens, store
from terminai_apts.memory.api import ThermalMemory
from terminai_apts.memory.cli import import_archive

from tests.unit.memory.seed_statements import SeedStatements
from tests.unit.memory.test_seed_phrases import _write

ALPHABET = "aAbBzZ09_ -.,:/\t\n\x00éÉßKİıΣσ€\ufffd\ufffe\uffff"
_LIKE = sqlite3.connect(":memory:")


def _like(text: str, run: str) -> bool:
    return bool(_LIKE.execute("SELECT ? LIKE ?", (text, f"%{run}%")).fetchone()[0])


@st.composite
def _text_and_run(draw: st.DrawFn) -> tuple[str, str]:
    text = draw(st.text(alphabet=ALPHABET, min_size=7, max_size=60))
    start = draw(st.integers(0, len(text) - 7))
    run = text[start : start + draw(st.integers(7, len(text) - start))]
    flips = draw(st.lists(st.booleans(), min_size=len(run), max_size=len(run)))
    return text, "".join(_another(c) if flip else c for c, flip in zip(run, flips, strict=True))


def _another(c: str) -> str:
    """A character ``LIKE`` may hold equal to ``c`` (the assumption below keeps only those it does)."""
    if c in "\ufffd\ufffe\uffff":
        return {"\ufffd": "\ufffe", "\ufffe": "\uffff", "\uffff": "\ufffd"}[c]
    return c.swapcase() if c.isascii() else c


@settings(max_examples=400, deadline=None, derandomize=True)
@given(pair=_text_and_run())
def test_a_run_that_like_finds_has_only_tokens_of_the_text(pair: tuple[str, str]) -> None:
    text, run = pair
    assume("\x00" not in run and _like(text, run))  # LIKE reads its pattern up to a NUL
    assert set(separator_tokens.tokens(run)) <= set(separator_tokens.tokens(text)), (text, run)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(text=st.text(alphabet=ALPHABET, max_size=40), other=st.text(alphabet=ALPHABET, max_size=40))
def test_a_record_holds_the_tokens_of_its_title_and_of_its_content(text: str, other: str) -> None:
    held = set(separator_tokens.of_record(text, other).split())
    assert held == set(separator_tokens.tokens(text)) | set(separator_tokens.tokens(other))


def test_tokens_are_the_seven_characters_around_each_separator() -> None:
    assert len(separator_tokens.tokens("cache timeout")) == 1  # "che tim"
    assert separator_tokens.tokens("Cache Timeout") == separator_tokens.tokens("cACHE tIMEOUT")
    assert separator_tokens.tokens("cÉe tim") != separator_tokens.tokens("cée tim")  # LIKE does not fold É
    assert separator_tokens.tokens("a b") == [] and separator_tokens.tokens("timeout") == []
    assert len(separator_tokens.tokens("one, two")) == 2  # the comma and the space


def _held(conn: sqlite3.Connection, title: str, content: str) -> set[int]:
    """Rows of ``memories_sep`` that hold every token of the text."""
    found: set[int] | None = None
    for token in separator_tokens.of_record(title, content).split():
        rows = {
            r[0] for r in conn.execute("SELECT rowid FROM memories_sep WHERE memories_sep MATCH ?", (f'"{token}"',))
        }
        found = rows if found is None else found & rows
    return found or set()


def test_the_triggers_keep_the_tokens_of_every_insert_update_and_delete(tmp_path: Path) -> None:
    _write(tmp_path / "archive.db", [("m1", "2026-01-04", "Cache Timeout", "disk full again", "", "", "ops", 0.9)])
    index = tmp_path / "index.db"
    store.build(index, import_archive(tmp_path / "archive.db"))
    conn = store.open_writer(index)
    with conn:
        (mid,) = conn.execute("SELECT id FROM memories WHERE uid = 'm1'").fetchone()
        assert _held(conn, "Cache Timeout", "disk full again") == {mid}
        conn.execute("UPDATE memories SET title = 'queue stalled', content = 'worker lost' WHERE id = ?", (mid,))
        assert _held(conn, "Cache Timeout", "") == set() and _held(conn, "queue stalled", "worker lost") == {mid}
        conn.execute("DELETE FROM memories WHERE id = ?", (mid,))
        assert _held(conn, "queue stalled", "worker lost") == set()
        conn.execute("INSERT INTO memories_sep(memories_sep) VALUES ('integrity-check')")
    conn.close()


def test_a_writer_without_the_token_function_fails_instead_of_leaving_the_filter_stale(tmp_path: Path) -> None:
    """sqlite3 or any other tool writing the index is refused by the triggers, not obeyed."""
    _write(tmp_path / "archive.db", [("m1", "2026-01-04", "Cache Timeout", "x", "", "", "ops", 0.9)])
    index = tmp_path / "index.db"
    store.build(index, import_archive(tmp_path / "archive.db"))
    conn = sqlite3.connect(index)
    with pytest.raises(sqlite3.OperationalError, match="no such function: separator_tokens"):
        conn.execute("UPDATE memories SET content = 'cache timeout' WHERE uid = 'm1'")
    conn.close()


@pytest.mark.parametrize("query", ["abc\ufffddef", "abc\uffffdef", "abc\ufffedef"])
def test_the_noncharacters_sqlite_reads_as_the_replacement_character_are_found_as_the_seed_finds_them(
    tmp_path: Path, query: str
) -> None:
    """``LIKE`` holds U+FFFD, U+FFFE and U+FFFF equal (SQLite decodes the last two as the
    first), so each query finds all four records, as the seed's statement does."""
    texts = ["abc\ufffddef", "abc\ufffedef", "abc\uffffdef", "abc\ufffddef"]
    rows = [(f"m{i}", f"2026-01-0{i + 1}", "t", text, "", "", "ops", 0.9) for i, text in enumerate(texts)]
    _write(tmp_path / "archive.db", rows)
    store.build(tmp_path / "index.db", import_archive(tmp_path / "archive.db"))
    oracle = SeedStatements(tmp_path / "archive.db")
    with ThermalMemory(tmp_path / "index.db") as ours:
        assert [m.id for m in ours.search(query)] == [m.id for m in oracle.search(query)] == ["m3", "m2", "m1", "m0"]
        assert ours.count(query) == oracle.count(query) == 4
    oracle.close()
