"""The journal's files: parsed JSONL entries, atomic replacement and the time buckets of compaction.

Shared by :mod:`terminai_apts.memory.journal` (writes, verification, records) and
:mod:`terminai_apts.memory.compaction`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from terminai_apts import durable, ledger

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


def _parse_iso(text: str) -> datetime | None:
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def _from_unix(value: float) -> datetime | None:
    try:
        return datetime.fromtimestamp(value, UTC)
    except (OverflowError, OSError, ValueError):
        return None


def entry_time(entry: Mapping[str, Any]) -> datetime | None:
    """When a journal entry happened, in UTC, whichever form it carries (None: no readable time).

    The one reader of entry times. ``iso`` (``2026-01-04T19:59:34Z``) is what a person
    reads and what the day's summary shows, so it decides: a numeric ``ts`` (unix seconds)
    that names the same second only adds its fraction; one that disagrees is ignored (the
    seed's own example entry has ``ts`` 1767575974.0, which is 2026-01-05T01:19:34Z).
    Without ``iso``, a numeric ``ts``; else an ISO-string ``ts`` (journals written before).
    """
    ts = entry.get("ts")
    unix = _from_unix(float(ts)) if isinstance(ts, int | float) and not isinstance(ts, bool) else None
    iso = entry.get("iso")
    shown = _parse_iso(iso) if isinstance(iso, str) and iso.strip() else None
    if shown is not None:
        return unix if unix is not None and iso_of(unix) == iso_of(shown) else shown
    if unix is not None:
        return unix
    return _parse_iso(ts) if isinstance(ts, str) and ts.strip() else None


def iso_of(when: datetime) -> str:
    """``when`` as the journal's ``iso`` field: ``2026-01-04T19:59:34Z`` (whole seconds, UTC)."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def entry_iso(entry: Mapping[str, Any]) -> str:
    """An entry's time as ``YYYY-MM-DDTHH:MM:SSZ``, or ``""`` when it carries none."""
    when = entry_time(entry)
    return iso_of(when) if when is not None else ""


def entry_day(entry: Mapping[str, Any]) -> str:
    """An entry's UTC day ``YYYY-MM-DD``, or ``""`` when it carries no time."""
    return entry_iso(entry)[:10]


def entry_sort_key(entry: Mapping[str, Any]) -> float:
    """Seconds since the epoch (undated entries first): for ordering entries by time."""
    when = entry_time(entry)
    return when.timestamp() if when is not None else float("-inf")


def stamp(timestamp: str | float | None) -> tuple[float, str]:
    """``(ts, iso)`` for a new entry: ``timestamp`` (ISO 8601 text or unix seconds) or now.

    Raises ``ValueError`` for text that is not ISO 8601 or a number out of range.
    """
    if timestamp is None:
        when = datetime.now(UTC)
    elif isinstance(timestamp, int | float) and not isinstance(timestamp, bool):
        found = _from_unix(float(timestamp))
        if found is None:
            raise ValueError(f"timestamp {timestamp!r} is out of range")
        when = found
    else:
        parsed = _parse_iso(str(timestamp))
        if parsed is None:
            raise ValueError(f"timestamp {timestamp!r} is not ISO 8601 (2026-01-04T19:59:34Z) or unix seconds")
        when = parsed
    return round(when.timestamp(), 6), iso_of(when)


def posture_range(postures: list[str]) -> str:
    """The postures a summary's span moved through, ``A → B → C`` (repeats run together)."""
    runs: list[str] = []
    for posture in postures:
        if not runs or runs[-1] != posture:
            runs.append(posture)
    return " → ".join(runs) if runs else "no transitions recorded"


def fingerprint(path: Path) -> list[int] | None:
    """What any change to a file's bytes changes (None: no such file): device, inode, size,
    mtime and ctime. A write, a rename over it or a restored mtime (``touch -d``) all set a
    new ctime, which no unprivileged process can set back."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    return [info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns]


def atomic_write(path: Path, data: bytes, *, derived: bool = False) -> None:
    """Replace ``path`` with ``data`` (see :func:`terminai_apts.durable.write`), creating its folder.

    What a killed writer of ``path`` left beside it goes first: the next ordinary write
    cleans up, not only ``verify --repair``. ``derived``: ``path`` is rebuilt from a chain
    already flushed (a hot buffer), so its rename is not flushed on its own: after a power
    loss it may hold an earlier whole version, which the next write rebuilds.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    durable.remove_leftovers(path)
    durable.write(path, data, directory=not derived)


def jsonl(items: list[dict[str, Any]]) -> bytes:
    """Entries as JSON lines with sorted keys (the form every journal file is written in)."""
    return "".join(json.dumps(d, sort_keys=True) + "\n" for d in items).encode()


# Lines up to this size are kept inside their quarantine record (as text and base64);
# longer ones in a file named by their sha256 (the record would exceed ledger.MAX_LINE).
INLINE = 1 << 18
KEPT_LINES = "quarantine"


def kept_bytes(root: Path, raw: bytes) -> dict[str, Any]:
    """The fields a quarantine record keeps a line's original bytes in (the caller holds the lock)."""
    text = raw.decode("utf-8", "replace")
    if len(raw) <= INLINE:
        return {"raw": text, "raw_base64": base64.b64encode(raw).decode()}
    digest = hashlib.sha256(raw).hexdigest()
    rel = f"{KEPT_LINES}/{digest}.bin"
    atomic_write(root / rel, raw)
    return {"raw": text[:200], "raw_file": rel, "raw_sha256": digest, "raw_size": len(raw)}


def read_jsonl(path: Path, root: Path) -> tuple[list[Entry], list[Entry]]:
    """Parsed entries and quarantined lines (:func:`ledger.read` refuses them); a missing file is empty.

    A refused line's entry holds its text (``raw``), its bytes and why it was refused (``why``).
    """
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
        data, why = ledger.read(line)
        if data is None:
            bad.append(
                Entry(file=name, line=n, data={"raw": line.decode("utf-8", "replace"), "bytes": line, "why": why})
            )
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
    """The last second of ``YYYY-Www`` (a weekly file's stem, ``-summary`` or not)."""
    return f"{date.fromisocalendar(int(week[:4]), int(week[6:8]), 7).isoformat()}T23:59:59Z"


def quarter(when: str) -> str:
    return f"{when[:4]}-Q{(int(when[5:7]) - 1) // 3 + 1}"


def entry_quarter(entry: Mapping[str, Any]) -> str:
    """An entry's ``YYYY-Qn``, or ``""`` when it carries no time (such entries are never archived)."""
    day = entry_day(entry)
    return quarter(day) if day else ""


def entry_kind(entry: Mapping[str, Any]) -> str:
    """``decision``, ``posture`` or ``note``: the ``kind`` field, or guessed from the seed's fields."""
    kind = entry.get("kind")
    if isinstance(kind, str) and kind:
        return kind
    if "decision" in entry:
        return "decision"
    return "posture" if "to_posture" in entry else "note"


def posture_to(entry: Mapping[str, Any]) -> Any:
    """The posture an entry moved to: ``to_posture`` (the seed's field) or ``posture``."""
    return entry.get("to_posture", entry.get("posture"))


def posture_from(entry: Mapping[str, Any]) -> Any:
    """The posture an entry moved from: ``from_posture`` (the seed's field) or ``previous``."""
    return entry.get("from_posture", entry.get("previous"))
