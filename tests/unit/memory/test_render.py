"""The escaping of memory text for a terminal, against Unicode's own character data."""

from __future__ import annotations

import sys
import unicodedata

from terminai_apts.memory import render


def _acted_on(ch: str) -> bool:
    """What a terminal acts on or cannot show as text: controls, surrogates, and Unicode's
    Bidi_Control set (the embeddings, overrides and isolates by their bidirectional class;
    the three directional marks, format characters named ... MARK)."""
    if unicodedata.category(ch) in ("Cc", "Cs"):
        return True
    if unicodedata.bidirectional(ch) in ("RLO", "LRO", "RLE", "LRE", "PDF", "RLI", "LRI", "FSI", "PDI"):
        return True
    marks = ("LEFT-TO-RIGHT MARK", "RIGHT-TO-LEFT MARK", "ARABIC LETTER MARK")
    return unicodedata.category(ch) == "Cf" and unicodedata.name(ch, "") in marks


def test_every_code_point_a_terminal_acts_on_is_escaped_and_nothing_else() -> None:
    for code in range(sys.maxunicode + 1):
        ch = chr(code)
        shown = render.line(ch)
        if _acted_on(ch):
            assert shown != ch and shown.startswith("\\"), hex(code)
            shown.encode("ascii")  # an escape is plain ASCII
        else:
            assert shown == ch, hex(code)


def test_a_block_keeps_its_lines_and_tabs_only() -> None:
    assert render.block("a\nb\tc\rd\x1b[0m") == "a\nb\tc\\rd\\x1b[0m"
    assert render.line("a\nb\tc") == "a\\nb\\tc"


def test_a_lone_surrogate_from_invalid_utf8_prints_as_its_escape() -> None:
    title = b"caf\xff".decode("utf-8", "surrogateescape")
    assert render.line(title) == "caf\\udcff"
    render.line(title).encode("utf-8")  # strict: no surrogate is left to fail the output stream
