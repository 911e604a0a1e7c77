"""The journal's files: parsed JSONL entries, atomic replacement and the time buckets of compaction.

Shared by :mod:`terminai_apts.memory.journal` (writes, verification, records) and
:mod:`terminai_apts.memory.compaction`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from terminai_apts import durable

DECISIONS = Path("warm/decisions/decisions.jsonl")
POSTURE = Path("warm/posture_history.jsonl")


@dataclass(frozen=True, slots=True, kw_only=True)
class Entry:
    """A parsed journal line with its location."""

    file: str
    line: int
    data: dict[str, Any]


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` (see :func:`terminai_apts.durable.write`), creating its folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    durable.write(path, data)


def jsonl(items: list[dict[str, Any]]) -> bytes:
    """Entries as JSON lines with sorted keys (the form every journal file is written in)."""
    return "".join(json.dumps(d, sort_keys=True) + "\n" for d in items).encode()


def read_jsonl(path: Path, root: Path) -> tuple[list[Entry], list[Entry]]:
    """Parsed entries and quarantined (unparsable) lines; a missing file is empty."""
    good: list[Entry] = []
    bad: list[Entry] = []
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return good, bad
    name = str(path.relative_to(root))
    for n, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            if not isinstance(data, dict):
                raise ValueError("not an object")
        except ValueError:
            bad.append(Entry(file=name, line=n, data={"raw": line.decode("utf-8", "replace")}))
            continue
        good.append(Entry(file=name, line=n, data=data))
    return good, bad


def numbered_lines(path: Path) -> list[tuple[int, bytes]]:
    """Numbered non-blank lines (numbers count blank lines too, as ``read_jsonl`` does)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return []
    return [(n, line) for n, line in enumerate(raw.splitlines(), start=1) if line.strip()]


def week(day: str) -> str:
    year, week, _ = date.fromisoformat(day[:10]).isocalendar()
    return f"{year}-W{week:02d}"


def week_end(week: str) -> str:
    return f"{date.fromisocalendar(int(week[:4]), int(week[6:]), 7).isoformat()}T23:59:59Z"


def quarter(stamp: str) -> str:
    return f"{stamp[:4]}-Q{(int(stamp[5:7]) - 1) // 3 + 1}"
