"""Per-term record bitmaps for the most frequent terms: exact counts of common-word queries.

FTS5 counts ``"postgres" "migration"`` by merging two doclists; when both words are in
10–30% of a million records that merge alone takes ~10 ms. A bitmap per frequent term
(bit ``id - base`` set when the record contains the term; a Python int, so AND and
``bit_count`` run in C) answers the same count in well under a millisecond. Only terms in
at least ``MIN_DF`` records and 2% of the index get one, zlib-compressed (a bitmap at 2%
density shrinks several-fold; inflating one takes microseconds): a query with any rarer
word is cheap for FTS5 itself.
"""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import Iterable, Sequence

MIN_DF = 2_000  # below this a term's doclist is short enough for FTS5 to count directly
MIN_SHARE = 50  # and a bitmap needs df >= records / MIN_SHARE: a sparse one costs more than its doclist


def build(conn: sqlite3.Connection, base: int, records: int) -> None:
    """Fill ``term_bits`` from the FTS index for every term in ``MIN_DF`` or more records.

    A term's records come from a MATCH on the term itself, which the tokenizer maps back
    to the same term for nearly every porter stem; a bitmap whose popcount is not exactly
    the term's document frequency is not stored, so a count can never come out wrong.
    """
    floor = max(MIN_DF, records // MIN_SHARE)
    common = conn.execute("SELECT term, df FROM term_stats WHERE df >= ?", (floor,)).fetchall()
    for term, df in common:
        bits = bytearray()
        for (rowid,) in conn.execute(
            "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?", ('"' + term.replace('"', '""') + '"',)
        ):
            _set(bits, rowid - base)
        if int.from_bytes(bits, "little").bit_count() == df:
            conn.execute("INSERT INTO term_bits(term, bits) VALUES (?, ?)", (term, zlib.compress(bytes(bits))))


def add(conn: sqlite3.Connection, base: int, postings: Iterable[tuple[int, Sequence[str]]]) -> None:
    """Set the bits of newly appended records ``(id, terms)`` in the bitmaps that exist."""
    loaded: dict[str, bytearray] = {}
    for mid, terms in postings:
        for term in terms:
            if term not in loaded:
                row = conn.execute("SELECT bits FROM term_bits WHERE term = ?", (term,)).fetchone()
                if row is None:
                    continue
                loaded[term] = bytearray(zlib.decompress(row[0]))
            _set(loaded[term], mid - base)
    conn.executemany(
        "UPDATE term_bits SET bits = ? WHERE term = ?", [(zlib.compress(bytes(b)), t) for t, b in loaded.items()]
    )


def count(blobs: Sequence[bytes], lo: int | None = None, hi: int | None = None) -> int:
    """Records with every term: popcount of the AND, limited to bit positions ``lo..hi``."""
    value = int.from_bytes(zlib.decompress(blobs[0]), "little")
    for blob in blobs[1:]:
        value &= int.from_bytes(zlib.decompress(blob), "little")
    if lo is not None and lo > 0:
        value >>= lo
        hi = None if hi is None else hi - lo
    if hi is not None:
        value &= (1 << (hi + 1)) - 1 if hi >= 0 else 0
    return value.bit_count()


def _set(bits: bytearray, position: int) -> None:
    byte = position >> 3
    if byte >= len(bits):
        bits.extend(bytes(byte + 1 - len(bits)))
    bits[byte] |= 1 << (position & 7)
