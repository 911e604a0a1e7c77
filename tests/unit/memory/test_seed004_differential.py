"""The journal against the memory architecture document it implements (docs/MEMORY_API.md, "Journal files").

Two directions:

* ``SeedReader`` knows only what the document shows: ``json.loads`` of each line, the
  fields its examples name, the file names of its layout. It reads files our journal
  wrote, through the document's data flow (read the session context and goals, write a
  decision, log the posture, daily summary, compaction), and finds what was written.
* ``write_as_the_document_shows`` writes the document's own examples byte for byte
  (plain lines: no ``hash``, ``prev``, ``kind`` or ``source``); our readers read them.
  ``verify`` names those plain lines as bound to no chain, and appends after them are
  refused: the journal never extends a chain it cannot check.
"""

from __future__ import annotations

import json
import tarfile
from datetime import date
from pathlib import Path
from typing import Any

from terminai_apts.memory.journal import MemoryJournal

# The document's examples, as it prints them.
SESSION_CONTEXT = """# Station Calyx Session Context
**Updated**: 2026-01-04 20:00:00 UTC
**Posture**: Distressed → Congestion (improving)
**Active Agents**: 8/15 (Monitoring + Service lanes restored)

## Current Focus
- Infrastructure restoration (Supervisor stack restarted)
- Observability layer online (telemetry + diagnostics active)
- Agent1 idle, awaiting directive

## Recent Decisions
- [2026-01-04 19:59] Approved Supervisor restart (CBO)
- [2026-01-04 19:25] Confirmed Agent1 framework limitation for open reasoning
- [2026-01-03 19:05] Initiated Station Re-entry Mode (bounded scope)

## Known Constraints
- All gates unchanged (apply/llm/network per config)
- No Builder/CP activation during infrastructure phase
- WSL environment unavailable (fallback to Windows native)

## Next Expected Actions
- Monitor TES rise (expect 55% → 65-72% within 30 min)
- Observe posture transition (Distressed → Congestion)
- Await Overseer instruction for next re-entry phase
"""
ACTIVE_GOALS = """{
  "timestamp": 1767576000.0,
  "goals": [
    {
      "id": "g-001",
      "priority": "high",
      "summary": "Monitor TES recovery after Supervisor restart",
      "agent": "cbo",
      "created_at": 1767575974.0,
      "status": "active"
    }
  ],
  "completed_today": 3,
  "deferred": []
}
"""
DECISION_LINE = (
    '{"ts": 1767575974.0, "iso": "2026-01-04T19:59:34Z", "decision": "Approved Supervisor restart for infrastructure'
    ' restoration", "rationale": "8 agents stalled, observability offline, no autonomy escalation", "outcome": "7'
    ' agents restored, posture remains Distressed (TES unchanged)", "decision_maker": "cbo", "human_approval": true}'
)
POSTURE_LINE = (
    '{"ts": 1767575974.0, "iso": "2026-01-04T19:59:34Z", "from_posture": "Distressed", "to_posture": "Distressed",'
    ' "active_count": 8, "tes_score": 55.0, "trigger": "supervisor_restart", "agent_changes": {"navigator":'
    ' "stalled→idling", "triage": "stalled→idling", "enhanced_metrics": "stalled→idling"}}'
)
DAILY = (
    (
        "# Station Calyx Daily Summary — 2026-01-04\n\n"
        "**Posture Range**: Distressed → Congestion  \n"
        "**TES Range**: 55.0% → 68.0% (est.)  \n"
        "**Active Agent Peak**: 8/15  \n"
        "**Human Interactions**: 3 directives\n"
    )
    + """
## Key Events
- 19:59 UTC: Supervisor infrastructure restoration

## Decisions
- Approved Supervisor restart (infrastructure-only scope)
"""
)


class SeedReader:
    """Reads a memory directory the way the document describes it, and nothing more."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _lines(self, rel: str) -> list[dict[str, Any]]:
        path = self.root / rel
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def session_context(self) -> str:
        path = self.root / "hot/session_context.md"
        return path.read_text() if path.exists() else ""

    def active_goals(self) -> dict[str, Any]:
        return json.loads((self.root / "hot/active_goals.json").read_text())

    def recent_decisions(self) -> list[dict[str, Any]]:
        out = self._lines("hot/recent_decisions.jsonl")
        assert len(out) <= 10  # "Retention: Last 10 decisions"
        return out

    def posture_trend(self, last: int = 5) -> list[dict[str, Any]]:
        out = self._lines("hot/posture_log.jsonl")
        assert len(out) <= 20  # "Retention: Last 20 transitions"
        return out[-last:]

    def all_decisions(self) -> list[dict[str, Any]]:
        return self._lines("warm/decisions/decisions.jsonl")

    def posture_history(self) -> list[dict[str, Any]]:
        return self._lines("warm/posture_history.jsonl")

    def daily(self, day: str) -> str:
        return (self.root / f"warm/daily/{day}.md").read_text()

    def weekly(self, week: str) -> str:
        return (self.root / f"warm/weekly/{week}-summary.md").read_text()

    def archived_days(self, quarter: str) -> list[str]:
        with tarfile.open(self.root / f"cold/archive/{quarter}.tar.gz") as tar:
            return sorted(Path(name).stem for name in tar.getnames())

    def quarter_summary(self, quarter: str) -> str:
        return (self.root / f"cold/summaries/{quarter}-summary.md").read_text()

    def keyword_days(self, word: str) -> list[str]:
        index: dict[str, list[str]] = json.loads((self.root / "cold/index/decisions_index.json").read_text())
        return index.get(word, [])


def test_the_seed_reader_reads_what_the_journal_writes(tmp_path: Path) -> None:
    j = MemoryJournal(tmp_path)
    seed = SeedReader(tmp_path)
    # Run start (steps 1-2): nothing written yet, and nothing breaks.
    assert j.read_session_context() is None and seed.session_context() == ""
    j.write_session_context(SESSION_CONTEXT)
    j.set_goals(json.loads(ACTIVE_GOALS)["goals"], completed_today=3, timestamp=1767576000.0)
    assert seed.session_context() == SESSION_CONTEXT
    assert seed.active_goals() == json.loads(ACTIVE_GOALS)
    # Run complete (step 5): the decision, read back through the document's fields.
    written = json.loads(DECISION_LINE)
    j.write_decision(
        written["decision"],
        written["rationale"],
        written["outcome"],
        written["decision_maker"],
        written["human_approval"],
        timestamp=written["iso"],
    )
    (got,) = seed.recent_decisions()
    assert {k: got[k] for k in ("iso", "decision", "rationale", "outcome", "decision_maker", "human_approval")} == {
        k: written[k] for k in ("iso", "decision", "rationale", "outcome", "decision_maker", "human_approval")
    }
    assert isinstance(got["ts"], float) and got["ts"] == 1767556774.0  # the iso's own second (see entry_time)
    assert seed.all_decisions() == [got]
    # Check-in (steps 7-8): the posture log, with the document's transition fields.
    example = json.loads(POSTURE_LINE)
    j.update_posture("Distressed", "outage", timestamp="2026-01-04T18:00:00Z", active_count=1, tes_score=40.0)
    j.update_posture(
        example["to_posture"],
        timestamp=example["iso"],
        active_count=example["active_count"],
        tes_score=example["tes_score"],
        trigger=example["trigger"],
        agent_changes=example["agent_changes"],
    )
    j.update_posture("Congestion", "TES rising", timestamp="2026-01-04T20:30:00Z", active_count=9, tes_score=68.0)
    trend = seed.posture_trend()
    fields = ("iso", "from_posture", "to_posture", "active_count", "tes_score", "trigger", "agent_changes")
    assert {k: trend[1][k] for k in fields} == {k: example[k] for k in fields}
    assert [(t["from_posture"], t["to_posture"]) for t in trend] == [
        (None, "Distressed"),
        ("Distressed", "Distressed"),
        ("Distressed", "Congestion"),
    ]
    assert seed.posture_history() == trend
    # Step 10 and §2.4: daily compaction on the next day's first activity.
    j.compact(today=date(2026, 1, 5), only="daily")
    daily = seed.daily("2026-01-04")
    assert "Daily Summary — 2026-01-04" in daily and "**Posture Range**: Distressed → Congestion" in daily
    assert "**TES Range**: 40.0% → 68.0%" in daily and "**Active Agent Peak**: 9" in daily
    assert "- 19:59 UTC: Approved Supervisor restart" in daily and "## Decisions" in daily
    assert len(seed.recent_decisions()) == 1 and len(seed.posture_trend(20)) == 3  # rolling buffers untouched
    context = seed.session_context()
    assert "**Updated**: 2026-01-05" in context and "## Known Constraints" in context  # the "new day" reset
    assert len(context.splitlines()) <= 200
    # Weekly, then (much later) quarterly: the document's file names.
    j.write_decision("Opened builder lane", "stable", "ok", "human", True, timestamp="2026-01-06T09:00:00Z")
    j.compact(today=date(2026, 1, 14), only="weekly")
    assert "Recurring patterns" in seed.weekly("2026-W02")
    j.compact(today=date(2026, 7, 2))
    assert seed.archived_days("2026-Q1")[:3] == ["2026-01-04", "2026-01-05", "2026-01-06"]
    assert "2026-Q1" in seed.quarter_summary("2026-Q1")
    assert seed.keyword_days("supervisor") == ["2026-01-04"]
    assert j.verify() == []


def write_as_the_document_shows(root: Path) -> None:
    files = {
        "hot/session_context.md": SESSION_CONTEXT,
        "hot/active_goals.json": ACTIVE_GOALS,
        "hot/recent_decisions.jsonl": DECISION_LINE + "\n",
        "hot/posture_log.jsonl": POSTURE_LINE + "\n",
        "warm/decisions/decisions.jsonl": DECISION_LINE + "\n",
        "warm/posture_history.jsonl": POSTURE_LINE + "\n",
        "warm/daily/2026-01-04.md": DAILY,
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_the_journal_reads_files_written_as_the_document_shows(tmp_path: Path) -> None:
    write_as_the_document_shows(tmp_path)
    j = MemoryJournal(tmp_path)
    assert j.read_session_context() == SESSION_CONTEXT
    assert j.read_active_goals() == json.loads(ACTIVE_GOALS)
    (decision,) = j.recent_decisions()
    assert decision == json.loads(DECISION_LINE)  # iso present: nothing filled in
    (posture,) = j.posture_trend()
    assert posture == json.loads(POSTURE_LINE)
    records = {r.kind: r for r in j.records()}
    # The document's example ts (1767575974.0) is 2026-01-05T01:19:34Z; its iso decides.
    assert records["decision"].date == "2026-01-04T19:59:34Z" and records["posture"].date == "2026-01-04T19:59:34Z"
    assert records["decision"].title.startswith("Approved Supervisor restart") and len(records["decision"].uid) == 64
    assert records["posture"].title == "posture: Distressed"
    assert records["summary"].uid == "daily:2026-01-04"
    # Compaction buckets the plain lines by their iso and leaves the hand-written summary alone.
    report = j.compact(today=date(2026, 1, 6), only="daily")
    assert report["daily_summaries"] == 0 and report["gap_markers"] == 1
    assert (tmp_path / "warm/daily/2026-01-04.md").read_text() == DAILY
    assert "No activity recorded for 2026-01-05" in (tmp_path / "warm/daily/2026-01-05.md").read_text()
    # What verify says: the plain lines are bound to no chain, and once compaction kept seals
    # (it sealed the gap marker it wrote), the hand-written summary is a file bound to no seal.
    problems = {(p.file, p.line): p.reason for p in j.verify()}
    assert set(problems) == {
        ("warm/decisions/decisions.jsonl", 1),
        ("warm/posture_history.jsonl", 1),
        ("warm/daily/2026-01-04.md", 0),
    }
    assert "without hash and prev" in problems[("warm/decisions/decisions.jsonl", 1)]
    assert "without hash and prev" in problems[("warm/posture_history.jsonl", 1)]
    assert problems[("warm/daily/2026-01-04.md", 0)].startswith("not sealed")
    # Appending after a line it cannot check is refused; the readers keep working.
    try:
        j.write_decision("next", "r", "o", "cbo", True)
    except Exception as exc:
        assert type(exc).__name__ == "JournalError" and "not a journal entry" in str(exc)
    else:
        raise AssertionError("an append after a plain line was accepted")
    assert j.recent_decisions() == [decision]


def test_plain_lines_move_into_a_new_journal_through_the_append_command(tmp_path: Path) -> None:
    """The way from files written as the document shows to a chained journal: ``memory journal append``."""
    import io
    import sys

    from terminai_apts.cli import main

    write_as_the_document_shows(tmp_path / "plain")
    lines = (tmp_path / "plain/warm/decisions/decisions.jsonl").read_text()
    lines += (tmp_path / "plain/warm/posture_history.jsonl").read_text()
    old, sys.stdin = sys.stdin, io.StringIO(lines)
    try:
        assert main(["memory", "journal", "append", str(tmp_path / "new"), "--create", "--json"]) == 0
    finally:
        sys.stdin = old
    j = MemoryJournal(tmp_path / "new")
    seed = SeedReader(tmp_path / "new")
    assert [d["iso"] for d in seed.all_decisions()] == ["2026-01-04T19:59:34Z"]
    (moved,) = seed.posture_history()
    assert moved["to_posture"] == "Distressed" and moved["trigger"] == "supervisor_restart"
    assert moved["from_posture"] is None  # the new log's first entry: it came from no recorded posture
    assert j.verify() == []
