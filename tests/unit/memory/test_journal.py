"""MemoryJournal: hot/warm writes, hash chains, quarantine, locking and crash-safe compaction."""

from __future__ import annotations

import json
import multiprocessing
import os
from datetime import date
from pathlib import Path

import pytest
from terminai_apts.errors import IntegrityError, JournalError, UsageError
from terminai_apts.memory import cold as cold_tier
from terminai_apts.memory import store
from terminai_apts.memory.api import ThermalMemory
from terminai_apts.memory.journal import DECISIONS, MemoryJournal

CTX = multiprocessing.get_context("fork")


def _seed(root: Path) -> MemoryJournal:
    j = MemoryJournal(root)
    stamps = ["2024-01-10", "2024-02-11", "2024-04-02", "2024-04-03", "2024-07-09", "2024-07-10"]
    for i, day in enumerate(stamps):
        j.write_decision(f"decision {i} about PROJ-{i}", "why", "ok", "agent", i % 2 == 0, timestamp=f"{day}T10:00:00Z")
    j.update_posture("cautious", "start", timestamp="2024-01-10T11:00:00Z")
    j.update_posture("cautious", "same again", timestamp="2024-01-11T11:00:00Z")
    j.update_posture("open", "trust earned", timestamp="2024-07-10T12:00:00Z")
    return j


def _hashes(j: MemoryJournal) -> list[str]:
    good, _bad = j.entries()
    return [e.data["hash"] for e in good]


def test_writes_rolling_buffers_and_limits(tmp_path: Path) -> None:
    j = _seed(tmp_path)
    assert len(_hashes(j)) == 8  # 6 decisions + 2 posture transitions (the repeat is not recorded)
    for i in range(12):
        j.write_decision(f"extra {i}", "r", "o", "agent", False, timestamp=f"2024-07-11T10:00:{i:02d}Z")
    hot = (tmp_path / "hot/recent_decisions.jsonl").read_text().splitlines()
    assert len(hot) == 10 and json.loads(hot[-1])["decision"] == "extra 11"
    j.write_session_context("line\n" * 200)
    with pytest.raises(JournalError, match="200"):
        j.write_session_context("line\n" * 201)
    j.set_goals([{"goal": "ship"}], timestamp=1767576000.0)
    assert json.loads((tmp_path / "hot/active_goals.json").read_text()) == {
        "timestamp": 1767576000.0,
        "goals": [
            {
                "id": "g-001",
                "priority": "normal",
                "summary": "ship",
                "agent": "",
                "created_at": 1767576000.0,
                "status": "active",
                "goal": "ship",
            }
        ],
        "completed_today": 0,
        "deferred": [],
    }
    j.write_daily_summary("2024-07-11", "busy day")
    with pytest.raises(JournalError, match="never modified"):
        j.write_daily_summary("2024-07-11", "rewrite")
    entry = json.loads(hot[0])
    assert entry["ts"] and entry["source"] == "agent"
    assert j.verify() == []


def test_missing_files_degrade(tmp_path: Path) -> None:
    j = MemoryJournal(tmp_path / "empty")
    assert j.entries() == ([], []) and j.verify() == [] and j.records() == []


@pytest.mark.parametrize("attack", ["edit", "remove", "reorder"])
def test_chain_tamper_detected(tmp_path: Path, attack: str) -> None:
    j = _seed(tmp_path)
    path = tmp_path / DECISIONS
    lines = path.read_text().splitlines()
    if attack == "edit":
        lines[2] = lines[2].replace("decision 2", "decision 20")
    elif attack == "remove":
        del lines[2]
    else:
        lines[2], lines[3] = lines[3], lines[2]
    path.write_text("\n".join(lines) + "\n")
    problems = j.verify()
    assert problems and problems[0].file == str(DECISIONS) and problems[0].line == 3
    assert ("edited" in problems[0].reason) == (attack == "edit")
    with pytest.raises(IntegrityError):
        j.verify_or_raise()


def test_corrupt_line_quarantined_never_crashes(tmp_path: Path) -> None:
    j = _seed(tmp_path)
    with open(tmp_path / DECISIONS, "a") as fh:
        fh.write("{not json\n")
    good, bad = j.entries()
    assert len(good) == 8 and len(bad) == 1
    assert any("corrupt" in p.reason for p in j.verify())
    assert len(j.records()) == 8
    assert j.quarantine() == 1
    assert "{not json" in (tmp_path / "quarantine.jsonl").read_text()
    assert j.verify() == []


def _writer(root: str, n: int, tag: int) -> None:
    j = MemoryJournal(root)
    for i in range(n):
        j.write_decision(f"p{tag}-{i}", "r", "o", f"proc{tag}", False)


def test_concurrent_writers_keep_one_chain(tmp_path: Path) -> None:
    procs = [CTX.Process(target=_writer, args=(str(tmp_path), 25, t)) for t in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    j = MemoryJournal(tmp_path)
    assert len(_hashes(j)) == 100 and j.verify() == []


STEPS = [
    "plan",
    "daily",
    "weekly",
    "archive:2024-Q1:decisions.jsonl",
    "archive:2024-Q1:posture_history.jsonl",
    "summary:2024-Q1",
    "shard:2024-Q1",
    "archive:2024-Q2:decisions.jsonl",
    "shard:2024-Q2",
    "truncate",
    "hot",
    "done",
]
TODAY = date(2024, 7, 12)


def _crashing_compact(root: str, step: str) -> None:
    def crash(name: str) -> None:
        if name == step:
            os._exit(17)  # an abrupt death: no cleanup, no finally blocks

    MemoryJournal(root, crash_at=crash).compact(today=TODAY)


@pytest.mark.parametrize("step", STEPS)
def test_compaction_killed_at_every_step_loses_and_duplicates_nothing(tmp_path: Path, step: str) -> None:
    j = _seed(tmp_path)
    original = sorted(_hashes(j))
    child = CTX.Process(target=_crashing_compact, args=(str(tmp_path), step))
    child.start()
    child.join(60)
    assert child.exitcode == 17, "the crash point was never reached"
    assert sorted(set(_hashes(j))) == original  # nothing lost even mid-way
    report = j.compact(today=TODAY)  # resumes from the write-ahead plan
    after = _hashes(j)
    assert sorted(after) == original and len(after) == len(set(after))
    assert j.verify() == []
    assert not (tmp_path / "compaction.wal").exists()
    assert report["quarters_archived"] == 2
    warm = [json.loads(x)["iso"][:7] for x in (tmp_path / DECISIONS).read_text().splitlines()]
    assert warm == ["2024-07", "2024-07"]
    db = tmp_path.parent / f"{tmp_path.name}-idx.db"  # outside the journal: verify reports strangers
    store.build(db, j.records())
    with ThermalMemory(db) as mem:
        summaries = [*(tmp_path / "warm/daily").glob("*.md"), *(tmp_path / "warm/weekly").glob("*.md")]
        archived = cold_tier.archived_dailies(tmp_path)  # Q1's daily summaries, 90+ days old, moved to cold/archive/
        assert archived and not set(archived) & {str(p.relative_to(tmp_path)) for p in summaries}
        assert mem.count_results(since="2000-01-01") == len(original) + len(summaries) + len(archived)
    shard = tmp_path / "cold/2024-Q1/shard.sqlite"
    with ThermalMemory(shard, immutable=True) as cold:
        assert cold.count() == 3  # two decisions and one posture transition in Q1
    # Appending after compaction continues the chain across the archive boundary.
    j.write_decision("after compaction", "r", "o", "agent", True)
    assert j.verify() == []


def test_compaction_idempotent_and_gap_markers(tmp_path: Path) -> None:
    j = _seed(tmp_path)
    first = j.compact(today=TODAY)
    assert first["gap_markers"] > 100
    assert first["daily_summaries"] == 6  # one generated summary per past active day
    assert first["weekly_summaries"] == 3  # W02, W06 and W14; W28 is the current week
    # 2024-Q1 ended more than 90 days before TODAY: its daily summaries moved to cold/archive/.
    assert first["dailies_archived"] == len(cold_tier.archive_members(tmp_path / "cold/archive/2024-Q1.tar.gz"))
    archived = cold_tier.archived_dailies(tmp_path)
    assert archived["warm/daily/2024-01-12.md"][1].endswith(b"No activity recorded for 2024-01-12\n")
    assert not (tmp_path / "warm/daily/2024-01-12.md").exists()
    assert "No activity recorded for 2024-04-04" in (tmp_path / "warm/daily/2024-04-04.md").read_text()
    again = j.compact(today=TODAY)
    assert again == {
        "gap_markers": 0,
        "daily_summaries": 0,
        "weekly_summaries": 0,
        "quarters_archived": 0,
        "dailies_archived": 0,
        "context_reset": 0,
    }
    assert j.verify() == []


def test_schedules_run_alone(tmp_path: Path) -> None:
    j = _seed(tmp_path)
    weekly = j.compact(today=TODAY, only="weekly")
    assert weekly["weekly_summaries"] == 3 and weekly["gap_markers"] == weekly["quarters_archived"] == 0
    week = (tmp_path / "warm/weekly/2024-W02-summary.md").read_text()
    assert "decision 0 about PROJ-0" in week and "posture -> cautious" in week
    assert not (tmp_path / "warm/daily").exists() and not (tmp_path / "cold").exists()
    daily = j.compact(today=TODAY, only="daily")
    assert daily["gap_markers"] > 100 and daily["quarters_archived"] == 0 and not (tmp_path / "cold").exists()
    assert j.compact(today=TODAY, only="quarterly")["quarters_archived"] == 2
    with pytest.raises(UsageError, match="monthly"):
        j.compact(today=TODAY, only="monthly")


def test_superseding_decision_marks_the_old_record(tmp_path: Path) -> None:
    j = MemoryJournal(tmp_path)
    old = j.write_decision("use sqlite for memory", "simple", "ok", "agent", True, timestamp="2024-01-01T00:00:00Z")
    with pytest.raises(UsageError, match="names no recorded decision"):
        j.write_decision("x", "r", "o", "agent", True, supersedes="f" * 64)
    new = j.write_decision(
        "use sqlite with fts5", "faster", "ok", "agent", True, supersedes=old["hash"], timestamp="2024-02-01T00:00:00Z"
    )
    db = tmp_path.parent / f"{tmp_path.name}-idx.db"  # outside the journal: verify reports strangers
    store.build(db, j.records())
    later = j.write_decision(
        "use sqlite with fts5 and trigram",
        "grep",
        "ok",
        "agent",
        True,
        supersedes=new["hash"],
        timestamp="2024-03-01T00:00:00Z",
    )
    assert store.append(db, j.records()) == 1  # the append path links too
    with ThermalMemory(db) as mem:
        by_title = {h.memory.title: h.memory for h in mem.search_results("sqlite", order="oldest")}
    assert by_title["use sqlite for memory"].superseded_by == by_title["use sqlite with fts5"].id
    assert by_title["use sqlite with fts5"].superseded_by == by_title["use sqlite with fts5 and trigram"].id
    assert by_title["use sqlite with fts5 and trigram"].superseded_by is None and later["supersedes"] == new["hash"]
