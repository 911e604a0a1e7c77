"""Separator tokens: the phrase filter of the seed's substring search (``memories_sep``).

Each character of a text that is not a letter or digit (a space, ``-``, ``.``, ``_``) gives
one token: the seven characters centred on it, folded as SQLite's ``LIKE`` compares them,
hashed to 32 bits. A record whose title or content is ``LIKE '%cache timeout%'`` holds the
run, so the seven characters around its space (``che tim``), so the run's token: the tokens
of a run are a subset of the tokens of every text containing it, which makes them a sound
filter (a hash collision or a longer word only adds candidates, which ``LIKE`` then drops).
Unlike trigrams with positions, a token needs no position list, and seven characters
across a word boundary name few records: ``cache timeout`` has 63 candidates where two
trigrams close together had 216.
"""

from __future__ import annotations

import re
import sqlite3
import zlib

from terminai_apts.memory import like

# The lookahead finds overlapping windows; ``[\W_]`` is "not a letter or digit" as
# ``str.isalnum`` says, the same test on both sides, so which characters count only costs speed.
_WINDOW = re.compile(r"(?=(.{3}[\W_].{3}))", re.DOTALL)
SQL_FUNCTION = "separator_tokens"


def tokens(text: str) -> list[str]:
    """The distinct tokens of ``text``, in the order they first occur."""
    windows = dict.fromkeys(_WINDOW.findall(like.fold(text)))
    return [format(zlib.crc32(w.encode("utf-8", "surrogatepass")), "08x") for w in windows]


def of_record(title: str, content: str) -> str:
    """The tokens of a record's title and content, as ``memories_sep`` stores them (one column, space-separated)."""
    return " ".join(dict.fromkeys(tokens(title) + tokens(content)))


def register(conn: sqlite3.Connection) -> None:
    """Give a writer's connection the function the index's triggers call (deterministic:
    a delete must find the tokens its insert stored)."""
    conn.create_function(SQL_FUNCTION, 2, of_record, deterministic=True)
