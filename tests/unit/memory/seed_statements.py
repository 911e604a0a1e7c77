"""Seed 000's ``ThermalMemoryAPI`` as its statements answer it, over the raw archive.

Written from the seed's Layer 5 (its SQL, its Python around the SQL, its
``_row_to_memory``), sharing nothing with the index: each call is one statement on the
archive's own ``memories`` table, opened read-only, with SQLite's row objects turned into
the seed's record. One change, the one docs/AGENT_API.md names: the seed's ``search``
writes ``WHERE content LIKE ? OR title LIKE ? AND date BETWEEN ...``, where ``AND`` binds
first; here the text match is bracketed, as the seed's docstring means it. Everything
else (falsy checks, the hard cap, ``LIMIT``/``OFFSET`` as SQLite reads them, ``ORDER BY
date DESC`` with SQLite's own order of ties) is the seed's.

``SEED_FILE`` (or ``$TERMINAI_SEED_000``) names the seed document; ``seed_api()`` loads the
seed's own class from it, to hold this oracle against (``make seed-check``).
"""

from __future__ import annotations

import os
import re
import sqlite3
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SEED_FILE = Path(
    os.environ.get("TERMINAI_SEED_000", Path(__file__).parents[4] / "shared/seeds/000_74862871061b54ac.txt")
)
_SELECT = "SELECT id, date, title, content, summary, tags, source, confidence FROM memories"


@dataclass
class Memory:
    """The seed's record: its eight fields, each set once."""

    id: Any
    date: Any
    title: Any
    content: Any
    summary: Any
    tags: Any
    source: Any
    confidence: Any

    def __setattr__(self, key: str, value: Any) -> None:
        if hasattr(self, key):
            raise AttributeError("Memory objects are immutable")
        super().__setattr__(key, value)


class SeedStatements:
    """``search``, ``grep``, ``filter``, ``count``, ``summarize`` and ``get`` on an archive
    (a file, opened read-only, or a connection)."""

    def __init__(self, archive: Path | sqlite3.Connection) -> None:
        if isinstance(archive, sqlite3.Connection):
            self._conn = archive
        else:
            self._conn = sqlite3.connect(f"file:{archive}?mode=ro", uri=True)
        self._conn.row_factory = sqlite3.Row

    def close(self) -> None:
        self._conn.close()

    def _memories(self, sql: str, params: list[Any]) -> list[Memory]:
        return [_memory(row) for row in self._conn.execute(sql, params).fetchall()]

    def search(
        self, query: Any, date_range: Any = None, tags: Any = None, limit: Any = 20, offset: Any = 0
    ) -> list[Memory]:
        limit = min(limit, 100)
        sql = f"{_SELECT} WHERE (content LIKE ? OR title LIKE ?)"
        params: list[Any] = [f"%{query}%"] * 2
        if date_range:
            sql += " AND date BETWEEN ? AND ?"
            params.extend(date_range)
        if tags:
            sql += " AND (" + " OR ".join("tags LIKE ?" for _ in tags) + ")"
            params.extend(f"%{tag}%" for tag in tags)
        return self._memories(sql + " ORDER BY date DESC LIMIT ? OFFSET ?", [*params, limit, offset])

    def grep(self, pattern: Any, limit: Any = 50) -> list[Memory]:
        like = pattern.replace(".*", "%").replace(".+", "_%")
        limit = min(limit, 100)
        sql = f"{_SELECT} WHERE content LIKE ? OR title LIKE ? ORDER BY date DESC LIMIT ?"
        return self._memories(sql, [f"%{like}%", f"%{like}%", limit])

    def filter(
        self,
        source: Any = None,
        min_confidence: Any = None,
        date_after: Any = None,
        date_before: Any = None,
        limit: Any = 50,
    ) -> list[Memory]:
        limit = min(limit, 100)
        conds: list[str] = []
        params: list[Any] = []
        if source:
            conds.append("source = ?")
            params.append(source)
        if min_confidence is not None:
            conds.append("confidence >= ?")
            params.append(min_confidence)
        if date_after:
            conds.append("date >= ?")
            params.append(date_after)
        if date_before:
            conds.append("date <= ?")
            params.append(date_before)
        where = " AND ".join(conds) if conds else "1=1"
        return self._memories(f"{_SELECT} WHERE {where} ORDER BY date DESC LIMIT ?", [*params, limit])

    def count(self, query: Any = None) -> int:
        if query:
            sql, params = "SELECT COUNT(*) FROM memories WHERE content LIKE ? OR title LIKE ?", [f"%{query}%"] * 2
        else:
            sql, params = "SELECT COUNT(*) FROM memories", []
        return int(self._conn.execute(sql, params).fetchone()[0])

    def summarize(self, query: Any, max_results: Any = 5) -> str:
        found = self.search(query, limit=max_results)
        if not found:
            return f"No memories found matching '{query}'"
        lines = [f"Found {len(found)} memories for '{query}':"]
        for m in found:
            lines += [f"  [{m.date}] {m.title}", f"    {m.summary[:150]}..."]
        return "\n".join(lines)

    def get(self, memory_id: Any) -> Memory | None:
        row = self._conn.execute(f"{_SELECT} WHERE id = ?", [memory_id]).fetchone()
        return _memory(row) if row else None


def _memory(row: sqlite3.Row) -> Memory:
    tags = row["tags"].split(",") if row["tags"] else []
    return Memory(
        id=row["id"],
        date=row["date"],
        title=row["title"],
        content=row["content"],
        summary=row["summary"],
        tags=tags,
        source=row["source"],
        confidence=row["confidence"],
    )


def seed_api() -> type:
    """The seed's own ``ThermalMemoryAPI``, loaded from its document (its search bracketed as above)."""
    text = SEED_FILE.read_text(encoding="utf-8")
    start = text.index("### Layer 5: Read-Only Thermal Memory API")
    code = re.search(r"```python\n(.*?)```", text[start:], re.S)
    assert code is not None, f"no Layer 5 code block in {SEED_FILE}"
    source = code.group(1)
    precedence = 'WHERE content LIKE ? OR title LIKE ?\n        """\n        params'
    assert precedence in source, "the seed's search statement changed: re-read it"
    source = source.replace(precedence, 'WHERE (content LIKE ? OR title LIKE ?)\n        """\n        params', 1)
    # dataclasses looks the defining module up in sys.modules
    module = sys.modules.setdefault("seed000", types.ModuleType("seed000"))
    exec(compile(source, str(SEED_FILE), "exec"), module.__dict__)
    return module.ThermalMemoryAPI  # type: ignore[no-any-return]
