"""How SQLite's ``LIKE`` compares characters, for the filters that must never name fewer records.

``LIKE`` folds ASCII letters only (``ß`` is not ``SS``, ``é`` not ``É``), and reads text
through SQLite's UTF-8 decoder, which turns the noncharacters U+FFFE and U+FFFF into U+FFFD,
so ``LIKE`` holds those three equal. A filter keyed by :func:`fold`-ed text (the short-piece
bitmaps, the separator tokens) then names every record ``LIKE`` matches. Checked code point
by code point against SQLite itself (``tests/unit/memory/test_like_fold.py``).
"""

from __future__ import annotations

import string

_FOLD = str.maketrans(string.ascii_uppercase + "\ufffe\uffff", string.ascii_lowercase + "\ufffd\ufffd")


def fold(text: str) -> str:
    """``text`` with each character as ``LIKE`` compares it."""
    return text.translate(_FOLD)
