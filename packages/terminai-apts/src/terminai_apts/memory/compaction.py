"""Journal compaction: daily summaries and gap markers, weekly summaries, quarterly archives and sealed shards.

Runs from a write-ahead plan (``compaction.wal``) whose steps are idempotent, so a kill at
any instant loses and duplicates nothing; :meth:`MemoryJournal.compact` is the entry point.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from terminai_apts import durable
from terminai_apts.errors import UsageError
from terminai_apts.memory import cold, seals, store
from terminai_apts.memory import journal_files as jf
from terminai_apts.memory.chainfile import CHAIN
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
    ``daily`` (a generated summary for each past active day without one, a gap marker
    for each past day without entries); weekly: ``weekly`` (``YYYY-Www-summary.md`` per
    closed ISO week, written once, with its recurring patterns); quarterly: ``archive:Q``
    (cold copies of each closed quarter's entries, then its summaries and sealed shard),
    ``truncate`` (warm files keep only open-quarter entries, anchored to the archived
    tail hash), ``index`` (``cold/index/decisions_index.json``) and ``daily-archive:Q``
    (daily summaries of quarters ended 90+ days ago into ``cold/archive/Q.tar.gz``);
    daily again: ``hot`` (trim the rolling buffers) and ``context`` (the session
    context's "new day" reset); ``done`` (remove the plan). Every file
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
                held = {jf.entry_quarter(e.data) for e in good if not e.file.startswith("cold/")} - {""}
                quarters = sorted(q for q in held if q < current)
            plan = {"today": today.isoformat(), "schedules": schedules, "quarters": quarters}
            atomic_write(wal, json.dumps(plan).encode())
        day = date.fromisoformat(plan["today"])
        # Resuming, files this plan wrote before the kill may still wait for their seal.
        sealer = _Sealer(journal, crash_at, adopt=resumed)
        schedules = plan.get("schedules", list(SCHEDULES))
        gaps = generated = weeks = moved = reset = 0
        if "daily" in schedules:
            crash_at("daily")
            gaps, generated = _daily_files(journal, day, sealer)
        if "weekly" in schedules:
            crash_at("weekly")
            weeks = _weekly_summaries(journal, day, sealer)
        for quarter in plan["quarters"]:
            _archive_quarter(journal, crash_at, quarter, sealer)
        if plan["quarters"]:
            crash_at("truncate")
            for rel in (DECISIONS, POSTURE):
                _truncate(journal, crash_at, rel, set(plan["quarters"]))
        if "quarterly" in schedules:
            crash_at("index")
            _write_decisions_index(journal, crash_at)
            moved = _archive_dailies(journal, crash_at, day, sealer)
        if "daily" in schedules:
            crash_at("hot")
            _trim_hot(journal)
            crash_at("context")
            reset = _new_day_context(journal, day)
        crash_at("done")
        wal.unlink()
        durable.fsync_dir(journal.root)
        remove_temporaries(journal.root)
    return {
        "gap_markers": gaps,
        "daily_summaries": generated,
        "weekly_summaries": weeks,
        "quarters_archived": len(plan["quarters"]),
        "dailies_archived": moved,
        "context_reset": reset,
    }


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
    """One ``warm/weekly/YYYY-Www-summary.md`` per closed ISO week with activity; never rewritten.

    A week summarised under the earlier name ``YYYY-Www.md`` is not summarised again.
    """
    good, _bad = journal.entries()
    by_week: dict[str, list[dict[str, Any]]] = {}
    for e in good:
        day = jf.entry_day(e.data)
        if day:
            by_week.setdefault(jf.week(day), []).append(e.data)
    written = 0
    for week, items in sorted(by_week.items()):
        rel = f"warm/weekly/{week}-summary.md"
        if week >= jf.week(today.isoformat()) or sealer.exists(f"warm/weekly/{week}.md") or sealer.exists(rel):
            continue
        atomic_write(journal.root / rel, _weekly_text(journal.root, week, items))
        sealer.wrote(rel)
        written += 1
    return written


def _weekly_text(root: Path, week: str, items: list[dict[str, Any]]) -> bytes:
    items = sorted(items, key=jf.entry_sort_key)
    lines = ["<!-- source: compaction -->", f"# {week}: {len(items)} entries", ""]
    for d in items:
        lines.append(f"- {jf.entry_day(d)} {_what(d)}")
    monday = date.fromisocalendar(int(week[:4]), int(week[6:8]), 1)
    days = [(monday + timedelta(days=n)).isoformat() for n in range(7)]
    dailies = [d for d in days if (root / f"warm/daily/{d}.md").exists()]
    lines += ["", "## Daily summaries", *(f"- warm/daily/{d}.md" for d in dailies), *([] if dailies else ["- none"])]
    lines += ["", "## Recurring patterns (for the overseer)", *_recurring(items)]
    return ("\n".join(lines) + "\n").encode()


def _what(d: dict[str, Any]) -> str:
    if _is_posture(d):
        why = d.get("reason") or d.get("trigger") or ""
        return f"posture -> {jf.posture_to(d)}: {why}"
    return str(d.get("decision", ""))


def _is_posture(d: dict[str, Any]) -> bool:
    return jf.entry_kind(d) == "posture"


def _recurring(items: list[dict[str, Any]]) -> list[str]:
    """What came back within the week: tags, triggers, postures entered and decisions repeated."""
    out: list[str] = []
    tags: dict[str, list[str]] = {}
    for d in items:
        if not _is_posture(d):
            for t in {str(t).lower() for t in d.get("tags", []) or []}:
                tags.setdefault(t, []).append(jf.entry_day(d))
    out += [
        f"- tag `{t}`: {len(v)} decisions ({', '.join(sorted(set(v)))})" for t, v in sorted(tags.items()) if len(v) > 1
    ]
    triggers = Counter(str(d["trigger"]) for d in items if _is_posture(d) and d.get("trigger"))
    out += [f"- trigger `{t}`: {n} posture entries" for t, n in sorted(triggers.items()) if n > 1]
    entered = Counter(str(jf.posture_to(d)) for d in items if _is_posture(d))
    out += [f"- posture `{p}` entered {n} times" for p, n in sorted(entered.items()) if n > 1]
    texts = Counter(str(d.get("decision", "")).strip().lower() for d in items if not _is_posture(d))
    out += [f"- decision repeated {n} times: {t}" for t, n in sorted(texts.items()) if t and n > 1]
    return out or ["- none: no tag, trigger, posture or decision recurred this week"]


def _daily_files(journal: Journal, today: date, sealer: _Sealer) -> tuple[int, int]:
    """``warm/daily/DAY.md`` for each past day without one: generated from an active day's
    entries, a gap marker for a day without any (from the first active day on); days of a
    quarter whose summaries were archived are left alone. Returns (gap markers, summaries)."""
    good, _bad = journal.entries()
    by_day: dict[str, list[dict[str, Any]]] = {}
    for e in good:
        day_ = jf.entry_day(e.data)
        if day_:
            by_day.setdefault(day_, []).append(e.data)
    if not by_day:
        return 0, 0
    closed = cold.archived_quarters(journal.root)
    gaps = generated = 0
    day = date.fromisoformat(min(by_day))
    while day < today:
        name = day.isoformat()
        rel = f"warm/daily/{name}.md"
        if jf.quarter(name) not in closed and not sealer.exists(rel):
            if name in by_day:
                atomic_write(journal.root / rel, daily_summary(name, by_day[name]))
                generated += 1
            else:
                text = f"<!-- source: compaction; gap marker -->\nNo activity recorded for {name}\n"
                atomic_write(journal.root / rel, text.encode())
                gaps += 1
            sealer.wrote(rel)
        day += timedelta(days=1)
    return gaps, generated


def daily_summary(day: str, items: list[dict[str, Any]]) -> bytes:
    """A day's summary in the daily summary's structure, generated from its entries (marked so)."""
    items = sorted(items, key=jf.entry_sort_key)
    decisions = [d for d in items if not _is_posture(d)]
    postures = [d for d in items if _is_posture(d)]
    moved = [str(jf.posture_from(d)) for d in postures[:1] if jf.posture_from(d)]
    moved += [str(jf.posture_to(d)) for d in postures]
    tes = [float(d["tes_score"]) for d in postures if isinstance(d.get("tes_score"), int | float)]
    peak = [int(d["active_count"]) for d in postures if isinstance(d.get("active_count"), int)]
    human = sum(1 for d in decisions if d.get("human_approval") is True)
    lines = [
        "<!-- source: compaction; generated from the day's journal entries, not written by hand -->",
        f"# Daily Summary — {day}",
        "",
        f"**Posture Range**: {jf.posture_range(moved)}  ",
        f"**TES Range**: {f'{tes[0]:.1f}% → {tes[-1]:.1f}%' if tes else 'not recorded'}  ",
        f"**Active Agent Peak**: {max(peak) if peak else 'not recorded'}  ",
        f"**Human Interactions**: {human} decisions with human approval",
        "",
        "## Key Events",
    ]
    for d in items:
        lines.append(f"- {jf.entry_iso(d)[11:16]} UTC: {_what(d)}")
        if not _is_posture(d) and d.get("outcome"):
            lines.append(f"  - Outcome: {d.get('outcome')}")
    lines += ["", "## Decisions"]
    lines += [f"- {d.get('decision', '')} ({d.get('decision_maker', '')})" for d in decisions] or ["- none recorded"]
    changes = [f"- {a}: {c}" for d in postures for a, c in sorted((d.get("agent_changes") or {}).items())]
    lines += ["", "## Agent Performance", *(changes or ["- not recorded"])]
    lines += [
        "",
        "## Continuity Notes",
        f"- Generated by compaction from {len(decisions)} decisions and {len(postures)} posture entries;"
        " no summary was written for this day.",
        "",
        "## Next Session Context",
        "- see hot/session_context.md",
    ]
    return ("\n".join(lines) + "\n").encode()


def _archive_quarter(journal: Journal, crash_at: Callable[[str], None], quarter: str, sealer: _Sealer) -> None:
    folder = journal.root / "cold" / quarter
    for rel in (DECISIONS, POSTURE):
        target = folder / rel.name
        crash_at(f"archive:{quarter}:{rel.name}")
        if target.exists():
            continue  # rename is atomic: an existing archive is complete
        entries, _bad = read_jsonl(journal.root / rel, journal.root)
        chosen = [e.data for e in entries if jf.entry_quarter(e.data) == quarter]
        atomic_write(target, jf.jsonl(chosen))
    crash_at(f"summary:{quarter}")
    summary = folder / "summary.md"
    if not sealer.exists(f"cold/{quarter}/summary.md"):
        entries, _b = read_jsonl(folder / DECISIONS.name, journal.root)
        lines = [f"# {quarter}: {len(entries)} decisions", ""] + [
            f"- {jf.entry_day(e.data)} {e.data.get('decision', '')}" for e in entries
        ]
        atomic_write(summary, ("\n".join(lines) + "\n").encode())
        sealer.wrote(f"cold/{quarter}/summary.md")
    crash_at(f"narrative:{quarter}")
    if not sealer.exists(cold.summary_rel(quarter)):
        decisions, _b = read_jsonl(folder / DECISIONS.name, journal.root)
        postures, _b = read_jsonl(folder / POSTURE.name, journal.root)
        text = cold.quarter_summary(quarter, [e.data for e in decisions], [e.data for e in postures])
        atomic_write(journal.root / cold.summary_rel(quarter), text)
        sealer.wrote(cold.summary_rel(quarter))
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
    keep = [e.data for e in entries if jf.entry_quarter(e.data) not in quarters]
    dropped = [e.data for e in entries if jf.entry_quarter(e.data) in quarters]
    if not dropped:
        return
    # The first kept entry links to the last archived one: record that anchor first.
    last = dropped[-1]
    atomic_write(journal.root / rel.with_suffix(".anchor"), str(last.get("hash") or CHAIN.digest(last)).encode())
    crash_at(f"anchored:{rel.name}")  # anchored, the archived entries not yet cut
    lines = [json.dumps(d, sort_keys=True) for d in keep] + [b.data["raw"] for b in bad]
    atomic_write(journal.root / rel, "".join(line + "\n" for line in lines).encode())


def _write_decisions_index(journal: Journal, crash_at: Callable[[str], None]) -> None:
    """``cold/index/decisions_index.json``, rebuilt from the archived decisions and sealed.

    Verify derives its content from the archives (so a crash before the seal is no
    problem); the seal makes its removal a change verify reports.
    """
    data = cold.decisions_index(journal.root)
    if data is None:
        return
    path = journal.root / cold.DECISIONS_INDEX
    if not path.exists() or path.read_bytes() != data:
        atomic_write(path, data)
    known = seals.latest(journal.root).get(cold.DECISIONS_INDEX)
    if known is None or known.sha256 != cold.sha256(data):
        crash_at(f"seal:{cold.DECISIONS_INDEX}")
        journal.seal(cold.DECISIONS_INDEX)


def _archive_dailies(journal: Journal, crash_at: Callable[[str], None], today: date, sealer: _Sealer) -> int:
    """Move the daily summaries of each quarter ended 90+ days ago into ``cold/archive/YYYY-Qn.tar.gz``.

    The archive is written and sealed first; then each summary it holds byte for byte is
    removed from ``warm/daily/`` (verify accepts a sealed summary that is absent only when
    an archive holds exactly its sealed bytes). Returns how many summaries were moved.
    """
    by_quarter: dict[str, dict[str, bytes]] = {}
    for path in sorted((journal.root / "warm/daily").glob("*.md")):
        try:
            q = jf.quarter(date.fromisoformat(path.stem).isoformat())
        except ValueError:
            continue
        if cold.daily_due(q, today):
            by_quarter.setdefault(q, {})[f"daily/{path.name}"] = path.read_bytes()
    moved = 0
    for q, files in sorted(by_quarter.items()):
        rel = cold.archive_rel(q)
        crash_at(f"daily-archive:{q}")
        if not sealer.exists(rel):
            atomic_write(journal.root / rel, cold.archive_bytes(files))
            sealer.wrote(rel)
        held = cold.archive_members(journal.root / rel)
        for name, data in files.items():
            if held.get(name) == data:
                (journal.root / "warm" / name).unlink()
                moved += 1
        durable.fsync_dir(journal.root / "warm/daily")
    return moved


_UPDATED = re.compile(r"^\*\*Updated\*\*:\s*(\d{4}-\d\d-\d\d)", re.MULTILINE)
_HEADER = re.compile(r"^\*\*(Updated|Posture)\*\*:")
MAX_CONTEXT_LINES = 200


def _new_day_context(journal: Journal, today: date) -> int:
    """The "new day" reset of ``hot/session_context.md``; 1 when it was reset.

    A context last updated before ``today`` (its ``**Updated**:`` line, else the file's
    modification time) gets a new ``**Updated**`` line marking the new day, the latest
    ``**Posture**`` and a ``## Recent Decisions`` section from the hot buffer (the last
    three); every other line is kept, and the result is cut to 200 lines.
    """
    path = journal.root / "hot/session_context.md"
    try:
        text = path.read_bytes().decode("utf-8")
        changed = datetime.fromtimestamp(path.stat().st_mtime, UTC).date().isoformat()
    except (OSError, UnicodeDecodeError):
        return 0
    found = _UPDATED.search(text)
    last = found.group(1) if found else changed
    if last >= today.isoformat():
        return 0
    decisions, _b = read_jsonl(journal.root / "hot/recent_decisions.jsonl", journal.root)
    postures, _b = read_jsonl(journal.root / "hot/posture_log.jsonl", journal.root)
    posture = jf.posture_to(postures[-1].data) if postures else None
    recent = [
        f"- [{jf.entry_iso(d)[:16].replace('T', ' ')}] {d.get('decision', '')} ({d.get('decision_maker', '')})"
        for d in (e.data for e in decisions[-3:])
    ] or ["- none recorded"]
    lines = text.splitlines()
    title = lines[0] if lines and lines[0].startswith("# ") else "# Session Context"
    body = lines[1:] if lines and lines[0].startswith("# ") else lines
    first_section = next((n for n, line in enumerate(body) if line.startswith("## ")), len(body))
    preamble = [line for line in body[:first_section] if not _HEADER.match(line)]
    while preamble and not preamble[0].strip():
        preamble = preamble[1:]
    sections = body[first_section:]
    kept: list[str] = []
    skipping = False
    for line in sections:
        if line.startswith("## "):
            skipping = line.strip().lower() == "## recent decisions"
        if not skipping:
            kept.append(line)
    new = [
        title,
        f"**Updated**: {today.isoformat()} 00:00:00 UTC (new day; {last} is summarised in warm/daily/{last}.md)",
        f"**Posture**: {posture if posture is not None else 'not recorded'}",
        *preamble,
        *([""] if preamble and preamble[-1].strip() else []),
        "## Recent Decisions",
        *recent,
        "",
        *kept,
    ]
    while new and not new[-1].strip():
        new.pop()
    atomic_write(path, ("\n".join(new[:MAX_CONTEXT_LINES]) + "\n").encode())
    return 1
