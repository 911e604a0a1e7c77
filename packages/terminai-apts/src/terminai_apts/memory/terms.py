"""Index terms exactly as the FTS5 index sees them, from SQLite's own tokenizer.

The planner looks query words up in ``term_stats`` (document frequency per indexed term),
and the index stores porter stems (``deployed`` → ``deploy``). Rather than re-implement
the stemmer, a private in-memory FTS5 table with the same tokenizer turns text into the
index's terms; it shares nothing with the index file, so it opens no write path to it.
"""

from __future__ import annotations

import sqlite3
import threading

TOKENIZER = "porter unicode61 remove_diacritics 2"


class Terms:
    """``terms(text)`` → the distinct index terms of ``text`` (in first-seen order)."""

    __slots__ = ("_conn", "_lock")

    def __init__(self) -> None:
        conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        conn.execute(f"CREATE VIRTUAL TABLE scratch USING fts5(x, tokenize='{TOKENIZER}')")
        conn.execute("CREATE VIRTUAL TABLE scratch_terms USING fts5vocab(scratch, 'instance')")
        self._conn = conn
        self._lock = threading.Lock()

    def __call__(self, text: str) -> list[str]:
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                self._conn.execute("INSERT INTO scratch(rowid, x) VALUES (1, ?)", (text,))
                rows = self._conn.execute("SELECT term FROM scratch_terms ORDER BY offset").fetchall()
            finally:
                self._conn.execute("ROLLBACK")
        return list(dict.fromkeys(r[0] for r in rows))

    def close(self) -> None:
        self._conn.close()
