"""The filters' folding is SQLite's ``LIKE``'s, checked against SQLite itself.

Every code point goes through SQLite's own UTF-8 reader (``unicode()``) and case folding
(``lower()`` without ICU folds what ``LIKE`` folds); the short-piece bitmaps are then held
to ``LIKE``: whenever ``text LIKE '%piece%'``, the record's pieces hold the query's piece.
A character folded apart from one ``LIKE`` holds equal would drop records.
"""

from __future__ import annotations

import sqlite3

from hypothesis import assume, given, settings
from hypothesis import strategies as st
from terminai_apts.memory import grams, like

from tests.unit.memory.test_separator_tokens import ALPHABET, _another


def test_every_code_point_is_folded_as_sqlite_reads_and_folds_it() -> None:
    """All 1,112,063 code points but NUL."""
    points = [chr(i) for i in range(1, 0x110000) if not 0xD800 <= i < 0xE000]
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE c(x TEXT)")
    conn.executemany("INSERT INTO c VALUES (?)", [(c,) for c in points])
    seen = {x: chr(n) for x, n in conn.execute("SELECT x, unicode(lower(x)) FROM c")}
    conn.close()
    wrong = [hex(ord(c)) for c in points if like.fold(c) != seen[c]]
    assert wrong == [], wrong[:20]


_LIKE = sqlite3.connect(":memory:")


@st.composite
def _text_and_piece(draw: st.DrawFn) -> tuple[str, str]:
    text = draw(st.text(alphabet=ALPHABET, min_size=1, max_size=30))
    start = draw(st.integers(0, len(text) - 1))
    piece = text[start : start + draw(st.integers(1, 2))]
    return text, "".join(_another(c) if draw(st.booleans()) else c for c in piece)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(pair=_text_and_piece())
def test_a_piece_that_like_finds_is_a_piece_of_the_record(pair: tuple[str, str]) -> None:
    text, piece = pair
    exact = grams.exact_piece(piece)
    assume(exact is not None and bool(_LIKE.execute("SELECT ? LIKE ?", (text, f"%{piece}%")).fetchone()[0]))
    assert exact in grams.pieces(text, ""), (text, piece)
