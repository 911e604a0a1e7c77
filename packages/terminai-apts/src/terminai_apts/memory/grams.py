"""Record bitmaps of every one- and two-character piece of title and content: the seed's
``LIKE '%q%'`` for text too short for the trigram index.

A query like ``go``, ``ß`` or ``50%`` has no three-character run, so the trigram index
cannot name its candidates and ``LIKE`` would scan every row. Here every distinct piece of
one or two characters of a record's title and content (folded as ``LIKE`` folds: ASCII
letters only, so ``ß`` is not ``SS`` and ``é`` not ``É``) sets the record's bit in that
piece's bitmap. A text that is one such piece (``%`` around it is free) is then matched
exactly by its bitmap: counts are popcounts, pages the highest (newest) bits, with no row
read. Bitmaps are kept per block of ``2**BLOCK_BITS`` ids, zlib-compressed (a rare piece
costs a few bytes, a common one at most ``2**BLOCK_BITS / 8``), so an append rewrites
only the last block of the pieces it touches.

One more bitmap, under the key ``UNSURE``, marks the records whose trigram postings may
name text ``LIKE`` does not see in title or content (see :func:`trigram_unsure`): for every
other record, holding a three-character ASCII query's trigram is the seed's match, so
``count`` of such a query is a posting count with only the marked records read.

And a bitmap per frequent word (``WORD`` + a run of four or more ASCII letters and digits,
folded as ``LIKE`` folds, of the text ``LIKE`` reads; in ``WORD_MIN_RECORDS`` records or more
at build): a record holding a word that contains a longer query is a match without reading
it, which the trigram index (no positions) cannot tell (:func:`words_of`).
"""

from __future__ import annotations

import array
import itertools
import re
import sqlite3
import sys
import zlib
from collections.abc import Iterable, Iterator, Sequence

from terminai_apts.memory.like import fold

BLOCK_BITS = 16
_MASK = (1 << BLOCK_BITS) - 1
# Keys of pieces only grep/find see: two characters no real piece (at most two long) starts with.
EXTRA = "\x00+"
# Key of the records a trigram posting may name wrongly for an ASCII query (no piece starts with NUL).
UNSURE = "\x00!"
# Keys of frequent words: WORD + the word; WORD_END sorts after every one of them.
WORD, WORD_END = "\x00=", "\x00>"
# A rarer word's records cost at most this many row checks for a query it would answer.
WORD_MIN_RECORDS = 1000
_WORDS = re.compile("[a-z0-9]{4,}")
_PAIR = re.compile("..", re.DOTALL)  # pairs at even offsets; from offset 1, the odd ones

SCHEMA = """
CREATE TABLE grams(gram TEXT NOT NULL, block INTEGER NOT NULL, df INTEGER NOT NULL, bits BLOB NOT NULL);
"""
# After the bulk load (rows in key order, a packed index): 10 MB where rows inserted block
# by block into a keyed table left half of every page empty (Debian changelogs, 157k records).
_INDEX = "CREATE UNIQUE INDEX grams_key ON grams(gram, block)"


def exact_piece(text: str) -> str | None:
    """The folded piece a ``LIKE '%text%'`` is exactly the bitmap of, or None.

    That holds when ``text`` without its outer ``%`` is one or two characters and no
    wildcard; a NUL ends a string inside ``LIKE``, so text holding one is left to SQLite.
    """
    piece = text.strip("%")
    if not 1 <= len(piece) <= 2 or "%" in piece or "_" in piece or "\x00" in piece:
        return None
    return fold(piece)


def pieces(*texts: str, like: bool = True) -> set[str]:
    """Distinct folded pieces of one and two characters of each text (none spans two texts);
    ``like``: only what ``LIKE`` reads of each, the text before a NUL."""
    out: set[str] = set()
    for raw in texts:
        text = fold(raw.split("\x00", 1)[0] if like else raw)  # LIKE stops reading at a NUL
        out.update(text)
        out.update(_PAIR.findall(text))
        out.update(_PAIR.findall(text, 1))
    return out


def record_pieces(title: str, content: str, summary: str) -> Iterator[str]:
    """The keys a record sets: its ``LIKE`` pieces, then (behind ``EXTRA``) the pieces only
    ``grep`` and ``find`` see (of the summary, or after a NUL), so those can use the bitmaps too;
    ``UNSURE`` when its trigram postings may disagree with ``LIKE``."""
    seen = pieces(title, content)
    yield from seen
    if summary or "\x00" in title or "\x00" in content:
        yield from (EXTRA + piece for piece in pieces(title, summary, content, like=False) - seen)
    if trigram_unsure(title, content, summary):
        yield UNSURE


def trigram_unsure(title: str, content: str, summary: str) -> bool:
    """Whether the trigram index may hold an ASCII trigram for this record that ``LIKE`` does
    not find in its title or content; False proves it holds none.

    The index folds more than ``LIKE`` (the Kelvin sign onto ``k``, ``ſ`` onto ``s``: asked of
    SQLite's own trigram tokenizer, :func:`folds_to_ascii`), it also indexes the summary,
    which ``LIKE`` does not read, and ``LIKE`` stops at a NUL. A summary adds no trigram when
    each of its three-character runs is somewhere in the title or content as it is.
    """
    text = title + content + summary
    if "\x00" in text:
        return True
    if not text.isascii() and folds_to_ascii({c for c in text if c > "\x7f"}):
        return True
    if len(summary) < 3 or summary in content or summary in title:
        return False
    runs = {summary[i : i + 3] for i in range(len(summary) - 2)}
    return any(run not in title and run not in content for run in runs)


_ASCII_FOLD: dict[str, bool] = {}  # character -> folded onto ASCII by the trigram tokenizer


def folds_to_ascii(chars: set[str]) -> bool:
    """Whether SQLite's trigram tokenizer folds any of the non-ASCII ``chars`` onto ASCII.

    Learnt from the tokenizer itself (an in-memory table of each character three times
    over, its one trigram read back), once per character; a character that yields no
    trigram counts as folding, the safe side.
    """
    todo = [c for c in chars if c not in _ASCII_FOLD]
    if todo:
        conn = sqlite3.connect(":memory:")
        try:
            conn.execute("CREATE VIRTUAL TABLE f USING fts5(x, tokenize='trigram')")
            conn.executemany("INSERT INTO f(rowid, x) VALUES (?, ?)", [(ord(c), c * 3) for c in todo])
            conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(f, 'instance')")
            folded = {int(doc): str(term) for term, doc in conn.execute("SELECT term, doc FROM v")}
        finally:
            conn.close()
        for c in todo:
            term = folded.get(ord(c))
            _ASCII_FOLD[c] = term is None or term.isascii()
    return any(_ASCII_FOLD[c] for c in chars)


def words_of(title: str, content: str) -> set[str]:
    """The words of four or more ASCII letters and digits in title and content as ``LIKE`` reads
    them (before a NUL, ASCII letters lower-cased): each is a substring of that text, so a
    record holding a word that contains an ASCII query holds the query where ``LIKE`` looks."""
    return {word for text in (title, content) for word in _WORDS.findall(fold(text.split("\x00", 1)[0]))}


def build(conn: sqlite3.Connection, base: int, records: Iterable[tuple[int, str, str, str]]) -> None:
    """Fill ``grams`` from ``(id, title, content, summary)`` in id order, one block at a time;
    the frequent words' bitmaps once every record's words are known."""
    done: list[tuple[str, int, int, bytes]] = []
    block, current = -1, dict[str, bytearray]()
    postings: dict[str, array.array[int]] = {}
    for mid, title, content, summary in records:
        offset = mid - base
        for word in words_of(title, content):
            posting = postings.get(word)
            if posting is None:
                posting = postings[word] = array.array("q")
            posting.append(offset)
        if offset >> BLOCK_BITS != block:
            done += _packed(block, current)
            block, current = offset >> BLOCK_BITS, {}
        byte, bit = (offset & _MASK) >> 3, 1 << (offset & 7)
        for piece in record_pieces(title, content, summary):
            bits = current.get(piece)
            if bits is None:
                bits = current[piece] = bytearray(1 << (BLOCK_BITS - 3))
            bits[byte] |= bit
    done += _packed(block, current)
    for word, offsets in postings.items():
        if len(offsets) >= WORD_MIN_RECORDS:
            done += _packed_offsets(WORD + word, offsets)
    done.sort()
    conn.executemany("INSERT INTO grams(gram, block, df, bits) VALUES (?, ?, ?, ?)", done)
    conn.execute(_INDEX)


def _packed_offsets(key: str, offsets: Iterable[int]) -> list[tuple[str, int, int, bytes]]:
    blocks: dict[int, bytearray] = {}
    for offset in offsets:
        bits = blocks.get(offset >> BLOCK_BITS)
        if bits is None:
            bits = blocks[offset >> BLOCK_BITS] = bytearray(1 << (BLOCK_BITS - 3))
        bits[(offset & _MASK) >> 3] |= 1 << (offset & 7)
    return [row for block, bits in blocks.items() for row in _packed(block, {key: bits})]


def _packed(block: int, current: dict[str, bytearray]) -> list[tuple[str, int, int, bytes]]:
    return [
        (piece, block, int.from_bytes(bits, "little").bit_count(), zlib.compress(bytes(bits)))
        for piece, bits in current.items()
    ]


def add(conn: sqlite3.Connection, base: int, records: Sequence[tuple[int, str, str, str]]) -> None:
    """Set the bits of appended records ``(id, title, content, summary)`` (their blocks are rewritten)."""
    touched: dict[tuple[str, int], list[int]] = {}
    # The words that have a bitmap keep it whole; a word that becomes frequent later gets none
    # (its records are then read, as for any rare word).
    known = {
        r[0] for r in conn.execute("SELECT DISTINCT gram FROM grams WHERE gram > ? AND gram < ?", (WORD, WORD_END))
    }
    for mid, title, content, summary in records:
        offset = mid - base
        keys = [*record_pieces(title, content, summary), *(WORD + w for w in words_of(title, content))]
        for key in keys:
            if key.startswith(WORD) and key not in known:
                continue
            touched.setdefault((key, offset >> BLOCK_BITS), []).append(offset & _MASK)
    for (piece, block), offsets in touched.items():
        row = conn.execute("SELECT bits FROM grams WHERE gram = ? AND block = ?", (piece, block)).fetchone()
        bits = bytearray(zlib.decompress(row[0]) if row else bytes(1 << (BLOCK_BITS - 3)))
        for offset in offsets:
            bits[offset >> 3] |= 1 << (offset & 7)
        conn.execute(
            "INSERT OR REPLACE INTO grams(gram, block, df, bits) VALUES (?, ?, ?, ?)",
            (piece, block, int.from_bytes(bits, "little").bit_count(), zlib.compress(bytes(bits))),
        )


def byte_mask(bits: int, size: int) -> bytes:
    """``size`` bytes, ``b"1"`` at index ``k`` for each set bit ``k`` of ``bits``, ``b"0"`` elsewhere
    (SQLite reads one with ``substr``: bit tests without a Python call per row)."""
    return format(bits, "b")[::-1].ljust(size, "0")[:size].encode()


def bitmap(rows: Iterable[tuple[int, int, bytes]], lo: int, hi: int) -> int:
    """One int over id offsets ``lo..hi`` (bit ``offset``) from ``(block, df, bits)`` rows."""
    value = 0
    for block, _df, blob in rows:
        start = block << BLOCK_BITS
        if start > hi or start + _MASK < lo:
            continue
        value |= int.from_bytes(zlib.decompress(blob), "little") << start
    return value & window_mask(lo, hi)


def window_mask(lo: int, hi: int) -> int:
    """Bits ``lo..hi`` set (none when ``hi < lo``)."""
    return 0 if hi < lo else ((1 << (hi + 1)) - 1) ^ ((1 << lo) - 1)


def of_ids(ids: Iterable[int], base: int) -> int:
    """The bitmap of ids (bit ``id - base``)."""
    bits = bytearray()
    for mid in ids:
        offset = mid - base
        byte = offset >> 3
        if byte >= len(bits):
            bits.extend(bytes(byte + 1 - len(bits)))
        bits[byte] |= 1 << (offset & 7)
    return int.from_bytes(bits, "little")


def highest(value: int, count: int, skip: int = 0) -> list[int]:
    """Offsets of the set bits of ``value``, highest first: ``count`` of them after ``skip``."""
    return list(itertools.islice(descending(value), skip, skip + count)) if count > 0 else []


def lowest(value: int, count: int, skip: int = 0) -> list[int]:
    """Offsets of the set bits of ``value``, lowest first: ``count`` of them after ``skip``."""
    return list(itertools.islice(ascending(value), skip, skip + count)) if count > 0 else []


def descending(value: int) -> Iterator[int]:
    """Offsets of the set bits of ``value``, highest first (a Python step per 64-bit word)."""
    words = _words(value)
    for index in range(len(words) - 1, -1, -1):
        word = words[index]
        while word:
            top = word.bit_length() - 1
            yield (index << 6) | top
            word ^= 1 << top


def ascending(value: int) -> Iterator[int]:
    """Offsets of the set bits of ``value``, lowest first."""
    for index, packed in enumerate(_words(value)):
        word = packed
        while word:
            low = (word & -word).bit_length() - 1
            yield (index << 6) | low
            word ^= 1 << low


def _words(value: int) -> array.array[int]:
    size = (value.bit_length() + 63) >> 6
    return array.array("Q", value.to_bytes(size * 8, "little")) if sys.byteorder == "little" else _swapped(value, size)


def _swapped(value: int, size: int) -> array.array[int]:
    words = array.array("Q", value.to_bytes(size * 8, "little"))
    words.byteswap()
    return words
