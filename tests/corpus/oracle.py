"""An independent oracle of seed 000's memory API, written from its documented SQL over
the archive's raw rows (``memory_fixture.raw()``), in plain Python: it never touches our
index, planner or executor. The corpus's expected outputs are what each program prints
when CPython runs it with this ``thermal`` (``run``).

The seed's contract (its prompt and reference implementation):

* ``search(query, date_range=None, tags=None, limit=20)``: ``(title LIKE '%q%' OR content
  LIKE '%q%')`` (LIKE: case-insensitive for ASCII), ``date BETWEEN a AND b`` (inclusive),
  any of ``tags`` (``OR``), ``ORDER BY date DESC LIMIT limit``. (The seed's own SQL binds
  the date range to the title match only, an ``OR``/``AND`` precedence slip; this is what
  it documents.)
* ``grep(pattern, limit=50)``: the pattern, case-insensitively, in title or content,
  newest first. (The corpus uses plain words only, where a regular expression and a
  substring agree.)
* ``filter(date_after=None, date_before=None, tags=None, limit=50)``: ``date >= a``,
  ``date <= b``, any of ``tags``, newest first.
* ``count(query)``: how many memories ``search`` would match without a limit.
* ``get(memory_id)``: the memory with that archive id, or ``None``.
* ``summarize(query, max_results=5)``: ``"Found N memories for 'q':"`` then one line per
  memory, newest first (the corpus reads only its first line).

Memories have ``id, date, title, content, summary, tags, source, confidence``.
"""

from __future__ import annotations

import contextlib
import io
import re
from dataclasses import dataclass, field
from typing import Any

from tests.corpus import memory_fixture


@dataclass(frozen=True)
class Memory:
    id: str
    date: str
    title: str
    content: str
    summary: str
    tags: list[str] = field(hash=False)
    source: str
    confidence: float


def _like(needle: str, *fields: str) -> bool:
    """SQLite's ``LIKE '%needle%'``: case-insensitive for ASCII letters only."""

    def fold(text: str) -> str:
        return "".join(ch.lower() if ch.isascii() else ch for ch in text)

    return any(fold(needle) in fold(f) for f in fields)


class SeedThermal:
    def __init__(self, rows: list[dict[str, Any]] | None = None) -> None:
        rows = memory_fixture.raw() if rows is None else rows
        self._rows = [Memory(**{k: (list(v) if k == "tags" else v) for k, v in r.items()}) for r in rows]

    def _newest_first(self, rows: list[Memory]) -> list[Memory]:
        return sorted(rows, key=lambda m: m.date, reverse=True)

    @staticmethod
    def _any_tag(m: Memory, tags: list[str] | None) -> bool:
        return not tags or any(t in m.tags for t in tags)

    def search(
        self, query: str, date_range: tuple[str, str] | None = None, tags: list[str] | None = None, limit: int = 20
    ) -> list[Memory]:
        out = [
            m
            for m in self._rows
            if _like(query, m.title, m.content)
            and (date_range is None or date_range[0] <= m.date <= date_range[1])
            and self._any_tag(m, tags)
        ]
        return self._newest_first(out)[:limit]

    def grep(self, pattern: str, limit: int = 50) -> list[Memory]:
        rx = re.compile(pattern, re.IGNORECASE)
        return self._newest_first([m for m in self._rows if rx.search(m.title) or rx.search(m.content)])[:limit]

    def filter(
        self,
        date_after: str | None = None,
        date_before: str | None = None,
        tags: list[str] | None = None,
        limit: int = 50,
    ) -> list[Memory]:
        out = [
            m
            for m in self._rows
            if (date_after is None or m.date >= date_after)
            and (date_before is None or m.date <= date_before)
            and self._any_tag(m, tags)
        ]
        return self._newest_first(out)[:limit]

    def count(self, query: str) -> int:
        return len(self.search(query, limit=len(self._rows)))

    def get(self, memory_id: str) -> Memory | None:
        return next((m for m in self._rows if m.id == memory_id), None)

    def summarize(self, query: str, max_results: int = 5) -> str:
        found = self.search(query, limit=max_results)
        lines = [f"Found {len(found)} memories for '{query}':"]
        lines += [f"- [{m.date}] {m.title}: {m.summary}" for m in found]
        return "\n".join(lines)


def run(code: str) -> str:
    """What ``code`` prints under CPython with the oracle as ``thermal``."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "<corpus>", "exec"), {"thermal": SeedThermal(), "__name__": "__main__"})
    return out.getvalue()
