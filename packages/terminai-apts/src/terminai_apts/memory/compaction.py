"""Journal compaction: daily gap markers, weekly summaries, quarterly archives and sealed shards.

Runs from a write-ahead plan (``compaction.wal``) whose steps are idempotent, so a kill at
any instant loses and duplicates nothing; :meth:`MemoryJournal.compact` is the entry point.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from terminai_apts import durable
from terminai_apts.errors import UsageError
from terminai_apts.memory import journal_files as jf
from terminai_apts.memory import seals, store
from terminai_apts.memory.checks import TEMP
from terminai_apts.memory.journal_files import DECISIONS, POSTURE, atomic_write, read_jsonl
from terminai_apts.memory.records import NewMemory

SCHEDULES = ("daily", "weekly", "quarterly")
SHARD_NAME = "shard.sqlite"  # a sealed quarter's index, under cold/QUARTER/


class Journal(Protocol):
    """What compaction needs of :class:`terminai_apts.memory.journal.MemoryJournal`."""

    root: Path

    def lock(self) -> AbstractContextManager[None]: ...
    def entries(self) -> tuple[list[jf.Entry], list[jf.Entry]]: ...
    def records(self, *, cold: bool = True) -> list[NewMemory]: ...
    def seal(self, rel: str) -> None: ...


def compact(
    journal: Journal, crash_at: Callable[[str], None], *, today: date | None = None, only: str | None = None
) -> dict[str, int]:
    """Daily, weekly and quarterly compaction from a write-ahead plan; resumes an interrupted run.

    ``only`` runs one schedule (``daily``, ``weekly`` or ``quarterly``); the default runs
    all three. Steps (each idempotent): ``plan`` (write ``compaction.wal``); daily:
    ``daily`` (gap markers for past days without a summary); weekly: ``weekly`` (a
    summary per closed ISO week, written once); quarterly: ``archive:Q`` (cold copies of
    each closed quarter's entries, then its summary and sealed shard) and ``truncate``
    (warm files keep only open-quarter entries, anchored to the archived tail hash);
    daily again: ``hot`` (trim the rolling buffers); ``done`` (remove the plan). Every file
    written is sealed right after (crash point ``seal:REL``); resuming, a file the killed
    run wrote but did not seal is sealed then. A plan left by a killed run is finished
    first, whatever ``only`` asks; temporary files of dead writers are removed.
    """
    if only not in (None, *SCHEDULES):
        raise UsageError(f"compaction schedule must be one of {', '.join(SCHEDULES)}, not {only!r}")
    today = today or datetime.now(UTC).date()
    with journal.lock():
        # Writers hold the lock while a temporary file exists: any left now is a dead writer's.
        remove_temporaries(journal.root)
        wal = journal.root / "compaction.wal"
        resumed = wal.exists()
        if resumed:
            plan = json.loads(wal.read_text())
        else:
            crash_at("plan")
            schedules = [only] if only else list(SCHEDULES)
            quarters: list[str] = []
            if "quarterly" in schedules:
                good, _bad = journal.entries()
                current = jf.quarter(today.isoformat())
                quarters = sorted(
                    {
                        jf.quarter(str(e.data.get("ts", "")))
                        for e in good
                        if not e.file.startswith("cold/") and jf.quarter(str(e.data.get("ts", ""))) < current
                    }
                )
            plan = {"today": today.isoformat(), "schedules": schedules, "quarters": quarters}
            atomic_write(wal, json.dumps(plan).encode())
        day = date.fromisoformat(plan["today"])
        # Resuming, files this plan wrote before the kill may still wait for their seal.
        sealer = _Sealer(journal, crash_at, adopt=resumed)
        schedules = plan.get("schedules", list(SCHEDULES))
        gaps = weeks = 0
        if "daily" in schedules:
            crash_at("daily")
            gaps = _daily_gaps(journal, day, sealer)
        if "weekly" in schedules:
            crash_at("weekly")
            weeks = _weekly_summaries(journal, day, sealer)
        for quarter in plan["quarters"]:
            _archive_quarter(journal, crash_at, quarter, sealer)
        if plan["quarters"]:
            crash_at("truncate")
            for rel in (DECISIONS, POSTURE):
                _truncate(journal, crash_at, rel, set(plan["quarters"]))
        if "daily" in schedules:
            crash_at("hot")
            _trim_hot(journal)
        crash_at("done")
        wal.unlink()
        durable.fsync_dir(journal.root)
        remove_temporaries(journal.root)
    return {"gap_markers": gaps, "weekly_summaries": weeks, "quarters_archived": len(plan["quarters"])}


def remove_temporaries(root: Path) -> list[str]:
    """Delete temporary files dead writers left (call with the journal's lock held); returns them."""
    removed: list[str] = []
    for path in sorted(root.rglob(".*.tmp*")):
        rel = str(path.relative_to(root))
        if path.is_file() and TEMP.fullmatch(rel):
            path.unlink()
            removed.append(rel)
    return removed


class _Sealer:
    """Seals what compaction writes; resuming, also what the killed run wrote but did not seal.

    A file already sealed is never sealed again here: compaction would otherwise bless
    a summary changed by hand since.
    """

    def __init__(self, journal: Journal, crash_at: Callable[[str], None], *, adopt: bool) -> None:
        self._journal = journal
        self._crash_at = crash_at
        self._adopt = adopt
        self._known = set(seals.latest(journal.root)) if adopt else set()

    def wrote(self, rel: str) -> None:
        self._crash_at(f"seal:{rel}")  # written, not yet sealed
        self._journal.seal(rel)

    def exists(self, rel: str) -> bool:
        """True when ``rel`` exists (sealing it first if the killed run wrote it): skip writing it."""
        if not (self._journal.root / rel).exists():
            return False
        if self._adopt and rel not in self._known:
            self._journal.seal(rel)
            self._known.add(rel)
        return True


def _trim_hot(journal: Journal) -> None:
    for rel, keep in ((Path("hot/recent_decisions.jsonl"), 10), (Path("hot/posture_log.jsonl"), 20)):
        entries, _b = read_jsonl(journal.root / rel, journal.root)
        if len(entries) > keep:
            atomic_write(
                journal.root / rel,
                jf.jsonl([e.data for e in entries[-keep:]]),
            )


def _weekly_summaries(journal: Journal, today: date, sealer: _Sealer) -> int:
    """One ``warm/weekly/YYYY-Www.md`` per closed ISO week with activity; never rewritten."""
    good, _bad = journal.entries()
    by_week: dict[str, list[dict[str, Any]]] = {}
    for e in good:
        if e.data.get("ts"):
            by_week.setdefault(jf.week(str(e.data["ts"])), []).append(e.data)
    written = 0
    for week, items in sorted(by_week.items()):
        rel = f"warm/weekly/{week}.md"
        path = journal.root / rel
        if week >= jf.week(today.isoformat()) or sealer.exists(rel):
            continue
        lines = ["<!-- source: compaction -->", f"# {week}: {len(items)} entries", ""]
        for d in sorted(items, key=lambda d: str(d.get("ts"))):
            what = (
                d.get("decision")
                if d.get("kind") == "decision"
                else f"posture -> {d.get('posture')}: {d.get('reason')}"
            )
            lines.append(f"- {str(d.get('ts'))[:10]} {what}")
        atomic_write(path, ("\n".join(lines) + "\n").encode())
        sealer.wrote(rel)
        written += 1
    return written


def _daily_gaps(journal: Journal, today: date, sealer: _Sealer) -> int:
    good, _bad = journal.entries()
    days = {str(e.data.get("ts", ""))[:10] for e in good if e.data.get("ts")}
    if not days:
        return 0
    written = 0
    day = date.fromisoformat(min(days))
    while day < today:
        rel = f"warm/daily/{day.isoformat()}.md"
        if day.isoformat() not in days and not sealer.exists(rel):
            atomic_write(
                journal.root / rel,
                f"<!-- source: compaction; gap marker -->\nNo activity recorded on {day.isoformat()}.\n".encode(),
            )
            sealer.wrote(rel)
            written += 1
        day += timedelta(days=1)
    return written


def _archive_quarter(journal: Journal, crash_at: Callable[[str], None], quarter: str, sealer: _Sealer) -> None:
    folder = journal.root / "cold" / quarter
    for rel in (DECISIONS, POSTURE):
        target = folder / rel.name
        crash_at(f"archive:{quarter}:{rel.name}")
        if target.exists():
            continue  # rename is atomic: an existing archive is complete
        entries, _bad = read_jsonl(journal.root / rel, journal.root)
        chosen = [e.data for e in entries if jf.quarter(str(e.data.get("ts", ""))) == quarter]
        atomic_write(target, jf.jsonl(chosen))
    crash_at(f"summary:{quarter}")
    summary = folder / "summary.md"
    if not sealer.exists(f"cold/{quarter}/summary.md"):
        entries, _b = read_jsonl(folder / DECISIONS.name, journal.root)
        lines = [f"# {quarter}: {len(entries)} decisions", ""] + [
            f"- {e.data.get('ts', '')[:10]} {e.data.get('decision', '')}" for e in entries
        ]
        atomic_write(summary, ("\n".join(lines) + "\n").encode())
        sealer.wrote(f"cold/{quarter}/summary.md")
    crash_at(f"shard:{quarter}")
    if not sealer.exists(f"cold/{quarter}/{SHARD_NAME}"):
        build_quarter_shard(journal, quarter)
        sealer.wrote(f"cold/{quarter}/{SHARD_NAME}")


def build_quarter_shard(journal: Journal, quarter: str) -> None:
    """Build ``cold/QUARTER/shard.sqlite`` from the quarter's archived entries (unsealed)."""
    recs = [r for r in journal.records() if r.origin.startswith(f"cold/{quarter}/")]
    shard = journal.root / "cold" / quarter / SHARD_NAME
    store.build(shard, recs, first_id=store.shard_base(quarter) + 1, meta=seals.SEALED_META)
    shard.chmod(0o444)  # sealed: opened with immutable=1 from now on


def _truncate(journal: Journal, crash_at: Callable[[str], None], rel: Path, quarters: set[str]) -> None:
    entries, bad = read_jsonl(journal.root / rel, journal.root)
    keep = [e.data for e in entries if jf.quarter(str(e.data.get("ts", ""))) not in quarters]
    dropped = [e.data for e in entries if jf.quarter(str(e.data.get("ts", ""))) in quarters]
    if not dropped:
        return
    # The first kept entry links to the last archived one: record that anchor first.
    atomic_write(journal.root / rel.with_suffix(".anchor"), str(dropped[-1]["hash"]).encode())
    crash_at(f"anchored:{rel.name}")  # anchored, the archived entries not yet cut
    lines = [json.dumps(d, sort_keys=True) for d in keep] + [b.data["raw"] for b in bad]
    atomic_write(journal.root / rel, "".join(line + "\n" for line in lines).encode())
