"""An oracle for the memory API, written from seed 000's documented contract and SQL only.

Seed 000 keeps its archive in one plain SQLite table and answers every call with one
statement over it: a case-insensitive ``LIKE '%q%'`` over title or content, ``BETWEEN``
for a date range, ``>=``/``<=`` for ``date_after``/``date_before``, any of the given tags,
``ORDER BY date DESC`` and ``LIMIT``. This module runs exactly those statements on the
same archive, in a table of the seed's schema, so it shares no code with the index. Two
choices the seed leaves open are fixed here and documented in docs/AGENT_API.md:
records on the same date come by id, descending (SQLite's order of ties is unspecified),
and a memory "has" a tag when the tag is one of its comma-separated tags (trimmed). The
seed's ``search`` binds its date range to the title match only (an ``OR``/``AND``
precedence slip); the oracle does what the seed documents: ``(title OR content) AND date``.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

SCHEMA = (
    "CREATE TABLE memories(id TEXT PRIMARY KEY, date TEXT, title TEXT, content TEXT, summary TEXT,"
    " tags TEXT, source TEXT, confidence REAL)"
)
ORDER = " ORDER BY date DESC, id DESC"


@dataclass(frozen=True)
class SeedMemory:
    """A memory as the seed hands it out: its eight columns, tags split on commas."""

    id: str
    date: str
    title: str
    content: str
    summary: str
    tags: list[str]
    source: str
    confidence: float


Row = tuple[str, str, str, str, str, str, str, float]


def write_archive(path: Path, rows: Sequence[Row]) -> None:
    """An archive in the seed's schema: ``(id, date, title, content, summary, tags, source, confidence)``."""
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(SCHEMA)
        conn.executemany("INSERT INTO memories VALUES (?,?,?,?,?,?,?,?)", rows)
    conn.close()


class SeedOracle:
    """``search``, ``count``, ``filter``, ``grep``, ``get`` and ``summarize`` as the seed's SQL answers them."""

    def __init__(self, path: Path) -> None:
        self._conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)

    def close(self) -> None:
        self._conn.close()

    @staticmethod
    def _memory(row: Sequence[object]) -> SeedMemory:
        tags = [t.strip() for t in str(row[5] or "").split(",") if t.strip()]
        return SeedMemory(
            id=str(row[0]),
            date=str(row[1]),
            title=str(row[2]),
            content=str(row[3]),
            summary=str(row[4]),
            tags=tags,
            source=str(row[6]),
            confidence=float(row[7]),  # type: ignore[arg-type]
        )

    @staticmethod
    def _tags(tags: Sequence[str] | None) -> tuple[str, list[object]]:
        """Any of the tags: the tag is one of the comma-separated entries (case as LIKE folds it)."""
        if not tags:
            return "", []
        clause = " OR ".join("(',' || replace(tags, ' ', '') || ',') LIKE ('%,' || ? || ',%')" for _ in tags)
        return f" AND ({clause})", list(tags)

    def _text_where(
        self, query: str, date_range: tuple[str, str] | None, tags: Sequence[str] | None
    ) -> tuple[str, list[object]]:
        sql = " WHERE (title LIKE ? OR content LIKE ?)"
        params: list[object] = [f"%{query}%", f"%{query}%"]
        if date_range:
            sql += " AND date BETWEEN ? AND ?"
            params += [date_range[0], date_range[1]]
        clause, values = self._tags(tags)
        return sql + clause, params + values

    def search(
        self,
        query: str,
        date_range: tuple[str, str] | None = None,
        tags: Sequence[str] | None = None,
        limit: int = 20,
    ) -> list[SeedMemory]:
        where, params = self._text_where(query, date_range, tags)
        rows = self._conn.execute(f"SELECT * FROM memories{where}{ORDER} LIMIT ?", [*params, limit]).fetchall()
        return [self._memory(r) for r in rows]

    def count(self, query: str, date_range: tuple[str, str] | None = None, tags: Sequence[str] | None = None) -> int:
        where, params = self._text_where(query, date_range, tags)
        return int(self._conn.execute(f"SELECT COUNT(*) FROM memories{where}", params).fetchone()[0])

    def filter(
        self,
        date_after: str | None = None,
        date_before: str | None = None,
        tags: Sequence[str] | None = None,
        limit: int = 50,
    ) -> list[SeedMemory]:
        sql, params = " WHERE 1=1", []
        if date_after:
            sql += " AND date >= ?"
            params.append(date_after)
        if date_before:
            sql += " AND date <= ?"
            params.append(date_before)
        clause, values = self._tags(tags)
        rows = self._conn.execute(
            f"SELECT * FROM memories{sql}{clause}{ORDER} LIMIT ?", [*params, *values, limit]
        ).fetchall()
        return [self._memory(r) for r in rows]

    def grep(self, pattern: str, limit: int = 50) -> list[SeedMemory]:
        """A case-insensitive regular expression over title, summary and content, newest first."""
        found = []
        for row in self._conn.execute(f"SELECT * FROM memories{ORDER}"):
            if re.search(pattern, f"{row[2]}\n{row[4]}\n{row[3]}", re.IGNORECASE):
                found.append(self._memory(row))
                if len(found) == limit:
                    break
        return found

    def get(self, memory_id: str) -> SeedMemory | None:
        row = self._conn.execute("SELECT * FROM memories WHERE id = ?", (memory_id,)).fetchone()
        return None if row is None else self._memory(row)

    def summarize(self, query: str, max_results: int = 5) -> str:
        results = self.search(query, limit=max_results)
        if not results:
            return f"No memories found for '{query}'."
        lines = [f"Found {len(results)} memories for '{query}':"]
        lines += [f"- [{m.date}] {m.title}: {m.summary}" for m in results]
        return "\n".join(lines)
