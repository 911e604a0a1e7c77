"""Packing rows into bounded text batches for sub-queries (``ThermalMemory.scan``), without SQLite."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from terminai_apts.memory.records import Batch

Row = tuple[str, str, str, str, str]  # (id, date, title, summary, content)


def pack(rows: Iterable[Row], chars: int, limit: int) -> Iterator[Batch]:
    """``[id] date title: summary`` lines (each cut at ``chars``), at most ``chars`` per batch.

    Rows are read lazily: once ``limit`` batches are out, no further row is asked for.
    """
    count, size = 0, 0
    ids: list[str] = []
    parts: list[str] = []
    for mid, date, title, summary, content in rows:
        line = f"[{mid}] {date[:10]} {title}: {(summary or content)}"[:chars] + "\n"
        if size + len(line) > chars and parts:
            yield Batch(ids=tuple(ids), text="".join(parts))
            count += 1
            ids, parts, size = [], [], 0
            if count >= limit:
                return
        ids.append(mid)
        parts.append(line)
        size += len(line)
    if parts:
        yield Batch(ids=tuple(ids), text="".join(parts))
