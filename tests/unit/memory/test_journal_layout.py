"""The journal's file formats and readers: entry times, posture fields, goals, readers, summaries, cold tier, CLI."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from terminai_apts.cli import main
from terminai_apts.errors import JournalError, UsageError
from terminai_apts.memory import cold
from terminai_apts.memory import journal_files as jf
from terminai_apts.memory.journal import DECISIONS, MemoryJournal


def _run(capsys: pytest.CaptureFixture[str], *argv: str, stdin: str | None = None) -> tuple[int, str, str]:
    if stdin is not None:
        import sys

        old = sys.stdin
        sys.stdin = io.StringIO(stdin)
        try:
            code = main(list(argv))
        finally:
            sys.stdin = old
    else:
        code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


# ------------------------------------------------------------------ entry times
def test_one_time_reader_accepts_every_form() -> None:
    assert jf.entry_iso({"ts": "2024-01-10T10:00:00.123456Z"}) == "2024-01-10T10:00:00Z"  # journals written before
    assert jf.entry_iso({"ts": 1704880800.0}) == "2024-01-10T10:00:00Z"
    assert jf.entry_iso({"iso": "2024-01-10T10:00:00Z"}) == "2024-01-10T10:00:00Z"
    # The iso decides when the two disagree (the seed's own example does): it is what people read.
    assert jf.entry_iso({"ts": 1767575974.0, "iso": "2026-01-04T19:59:34Z"}) == "2026-01-04T19:59:34Z"
    agree = jf.entry_time({"ts": 1704880800.25, "iso": "2024-01-10T10:00:00Z"})
    assert agree is not None and agree.microsecond == 250000  # an agreeing ts adds its fraction
    assert jf.entry_iso({}) == "" and jf.entry_iso({"ts": "yesterday"}) == "" and jf.entry_quarter({}) == ""
    assert jf.stamp("2024-01-10T10:00:00Z") == (1704880800.0, "2024-01-10T10:00:00Z")
    with pytest.raises(ValueError):
        jf.stamp("not a time")


def test_new_entries_carry_ts_and_iso(tmp_path: Path) -> None:
    j = MemoryJournal(tmp_path)
    d = j.write_decision("ship", "r", "o", "cbo", True, timestamp="2026-01-04T19:59:34Z")
    assert d["ts"] == 1767556774.0 and d["iso"] == "2026-01-04T19:59:34Z"
    now = j.write_decision("now", "r", "o", "cbo", False)
    assert isinstance(now["ts"], float) and now["iso"] == jf.iso_of(datetime.fromtimestamp(now["ts"], UTC))
    assert j.write_decision("unix", "r", "o", "cbo", False, timestamp=1767556774.5)["iso"] == "2026-01-04T19:59:34Z"
    with pytest.raises(UsageError, match="ISO 8601"):
        j.write_decision("bad", "r", "o", "cbo", False, timestamp="soon")
    assert j.verify() == []


def test_old_iso_string_entries_still_compact_and_index(tmp_path: Path) -> None:
    """A chain mixing the earlier form (``ts`` ISO text) with the new one buckets both by their time."""
    j = MemoryJournal(tmp_path)
    with j.lock():
        old = j._append(DECISIONS, {"ts": "2024-01-10T10:00:00.000000Z", "kind": "decision", "decision": "old form"})
        j._roll(Path("hot/recent_decisions.jsonl"), old, 10, DECISIONS)
    j.write_decision("new form", "r", "o", "cbo", True, timestamp="2024-05-02T10:00:00Z")
    report = j.compact(today=date(2024, 5, 3))
    assert report["quarters_archived"] == 1 and report["daily_summaries"] == 2
    assert "old form" in (tmp_path / "cold/2024-Q1/decisions.jsonl").read_text()
    assert [r.date for r in j.records() if r.kind == "decision"] == ["2024-01-10T10:00:00Z", "2024-05-02T10:00:00Z"]
    assert [d["iso"] for d in j.recent_decisions()] == ["2024-01-10T10:00:00Z", "2024-05-02T10:00:00Z"]
    assert j.verify() == []


# ------------------------------------------------------------------ posture
def test_posture_entries_carry_the_transition_fields(tmp_path: Path) -> None:
    j = MemoryJournal(tmp_path)
    first = j.update_posture("Distressed", "outage", timestamp="2026-01-04T18:00:00Z", active_count=1, tes_score=40)
    assert first is not None and first["from_posture"] is None and first["to_posture"] == "Distressed"
    assert j.update_posture("Distressed", "poll", timestamp="2026-01-04T18:30:00Z") is None  # a poll, not a change
    held = j.update_posture(
        "Distressed",
        timestamp="2026-01-04T19:59:34Z",
        active_count=8,
        tes_score=55.0,
        trigger="supervisor_restart",
        agent_changes={"navigator": "stalled→idling", "triage": "stalled→idling"},
    )
    assert held is not None  # the station changed while its posture held: recorded, as in the seed's example
    assert {k: held[k] for k in ("from_posture", "to_posture", "active_count", "tes_score", "trigger")} == {
        "from_posture": "Distressed",
        "to_posture": "Distressed",
        "active_count": 8,
        "tes_score": 55.0,
        "trigger": "supervisor_restart",
    }
    assert held["agent_changes"] == {"navigator": "stalled→idling", "triage": "stalled→idling"}
    assert held["posture"] == "Distressed" and held["previous"] == "Distressed"  # the earlier names stay
    with pytest.raises(UsageError):
        j.update_posture("Calm", agent_changes={"x": 1})  # type: ignore[dict-item]
    for i in range(25):
        j.update_posture(["Congestion", "Calm"][i % 2], f"step {i}", timestamp=f"2026-01-05T10:{i:02d}:00Z")
    trend = j.posture_trend()
    assert len(trend) == 5 and [t["to_posture"] for t in trend] == [
        "Congestion",
        "Calm",
        "Congestion",
        "Calm",
        "Congestion",
    ]
    assert len(j.posture_trend(50)) == 20  # the hot buffer's 20 transitions at most
    assert j.verify() == []


# ------------------------------------------------------------------ goals and readers
def test_goals_are_written_in_the_snapshot_form_and_read_in_both(tmp_path: Path) -> None:
    j = MemoryJournal(tmp_path)
    assert j.read_active_goals() == {"timestamp": None, "goals": [], "completed_today": 0, "deferred": []}
    goal = {"id": "g-001", "priority": "high", "summary": "Monitor TES", "agent": "cbo", "created_at": 1.0}
    snap = j.set_goals([goal], completed_today=3, timestamp=1767576000.0)
    on_disk = json.loads((tmp_path / "hot/active_goals.json").read_text())
    assert on_disk == snap == j.read_active_goals()
    assert on_disk["goals"] == [{**goal, "status": "active"}] and on_disk["completed_today"] == 3
    (tmp_path / "hot/active_goals.json").write_text(json.dumps([{"goal": "ship"}]))  # the earlier bare list
    assert j.read_active_goals()["goals"] == [{"goal": "ship"}]
    (tmp_path / "hot/active_goals.json").write_text("{cut")
    assert j.read_active_goals()["goals"] == []
    with pytest.raises(UsageError):
        j.set_goals({"goals": []})  # type: ignore[arg-type]
    assert j.verify() == []


def test_readers_never_raise(tmp_path: Path) -> None:
    j = MemoryJournal(tmp_path / "absent")
    assert j.read_session_context() is None and j.recent_decisions() == [] and j.posture_trend() == []
    j = MemoryJournal(tmp_path)
    (tmp_path / "hot").mkdir()
    (tmp_path / "hot/session_context.md").write_bytes(b"\xff\xfe not text")
    assert j.read_session_context() is None
    (tmp_path / "hot/session_context.md").unlink()
    (tmp_path / "hot/session_context.md").mkdir()
    assert j.read_session_context() is None
    (tmp_path / "hot/session_context.md").rmdir()
    j.write_session_context("# Session Context\n")
    assert j.read_session_context() == "# Session Context\n"
    (tmp_path / "hot/recent_decisions.jsonl").write_text('{"decision": "a", "ts": 1.0}\n{cut\n')
    assert [d["decision"] for d in j.recent_decisions()] == ["a"]
    with pytest.raises(UsageError):
        j.recent_decisions(-1)


# ------------------------------------------------------------------ daily and weekly
def _week_of_work(root: Path) -> MemoryJournal:
    j = MemoryJournal(root)
    for n, day in enumerate(["2024-01-08", "2024-01-09", "2024-01-11"]):
        j.write_decision(
            f"restart supervisor {n}",
            "stalled",
            "restored",
            "cbo",
            True,
            tags=("supervisor",),
            timestamp=f"{day}T10:00:00Z",
        )
        j.update_posture("Distressed", "", trigger="supervisor_restart", tes_score=50 + n, timestamp=f"{day}T11:00:00Z")
    return j


def test_daily_compaction_writes_summaries_gap_markers_and_a_new_day_context(tmp_path: Path) -> None:
    j = _week_of_work(tmp_path)
    j.write_session_context(
        "# Session Context\n**Updated**: 2024-01-11 12:00:00 UTC\n**Posture**: Distressed\n\n"
        "## Current Focus\n- restoration\n\n## Recent Decisions\n- stale line\n\n## Known Constraints\n- gates\n"
    )
    report = j.compact(today=date(2024, 1, 12), only="daily")
    assert report["daily_summaries"] == 3 and report["gap_markers"] == 1 and report["context_reset"] == 1
    day = (tmp_path / "warm/daily/2024-01-08.md").read_text()
    assert day.startswith("<!-- source: compaction; generated")
    for heading in (
        "# Daily Summary — 2024-01-08",
        "**Posture Range**",
        "**TES Range**: 50.0% → 50.0%",
        "## Key Events",
    ):
        assert heading in day
    assert "- 10:00 UTC: restart supervisor 0" in day and "## Next Session Context" in day
    assert (tmp_path / "warm/daily/2024-01-10.md").read_text().endswith("No activity recorded for 2024-01-10\n")
    context = j.read_session_context() or ""
    assert context.startswith("# Session Context\n**Updated**: 2024-01-12 00:00:00 UTC (new day;")
    assert "stale line" not in context and "- [2024-01-11 10:00] restart supervisor 2 (cbo)" in context
    assert "## Current Focus\n- restoration" in context and "## Known Constraints\n- gates" in context
    assert j.compact(today=date(2024, 1, 12), only="daily")["context_reset"] == 0  # once a day
    # A long context stays within the 200-line guardrail after the reset.
    j.write_session_context("**Updated**: 2024-01-11\n" + "- line\n" * 199)
    j.compact(today=date(2024, 1, 13), only="daily")
    assert len((j.read_session_context() or "").splitlines()) == 200
    assert j.verify() == []


def test_weekly_summary_name_and_recurring_patterns(tmp_path: Path) -> None:
    j = _week_of_work(tmp_path)
    assert j.compact(today=date(2024, 1, 20), only="weekly")["weekly_summaries"] == 1
    week = (tmp_path / "warm/weekly/2024-W02-summary.md").read_text()
    patterns = week.split("## Recurring patterns (for the overseer)\n", 1)[1]
    assert "- tag `supervisor`: 3 decisions (2024-01-08, 2024-01-09, 2024-01-11)" in patterns
    assert "- trigger `supervisor_restart`: 3 posture entries" in patterns
    assert "- posture `Distressed` entered 3 times" in patterns
    assert [r.uid for r in j.records() if r.kind == "summary"] == ["weekly:2024-W02"]
    assert j.verify() == []


def test_a_week_summarised_under_the_earlier_name_is_not_summarised_again(tmp_path: Path) -> None:
    j = _week_of_work(tmp_path)
    (tmp_path / "warm/weekly").mkdir(parents=True)
    (tmp_path / "warm/weekly/2024-W02.md").write_text("# 2024-W02 (earlier name)\n")
    with j.lock():
        j.seal("warm/weekly/2024-W02.md")
    assert j.compact(today=date(2024, 1, 20), only="weekly")["weekly_summaries"] == 0
    assert [r.uid for r in j.records() if r.kind == "summary"] == ["weekly:2024-W02"]
    assert j.verify() == []


# ------------------------------------------------------------------ cold tier
def _cold_journal(root: Path) -> MemoryJournal:
    j = MemoryJournal(root)
    j.write_decision(
        "Approved supervisor restart", "r", "o", "cbo", True, tags=("infra",), timestamp="2024-01-10T10:00:00Z"
    )
    j.write_decision("Deferred builder lane", "r", "o", "human", False, timestamp="2024-02-11T10:00:00Z")
    j.update_posture("Calm", "recovered", timestamp="2024-02-11T11:00:00Z")
    j.write_decision("Opened builder lane", "r", "o", "cbo", True, timestamp="2024-07-09T10:00:00Z")
    j.compact(today=date(2024, 7, 12))
    return j


def test_cold_layout(tmp_path: Path) -> None:
    j = _cold_journal(tmp_path / "a")
    root = j.root
    archive = root / "cold/archive/2024-Q1.tar.gz"
    members = cold.archive_members(archive)
    assert sorted(members) == [f"daily/{p}" for p in sorted(members_days(members))]
    assert members["daily/2024-01-10.md"].startswith(b"<!-- source: compaction; generated")
    assert not list((root / "warm/daily").glob("2024-0[1-3]-*.md"))  # moved, not copied
    assert (root / "warm/daily/2024-04-01.md").exists()  # Q2 ended less than 90 days ago: kept warm
    with tarfile.open(archive) as tar:
        infos = tar.getmembers()
    assert [i.name for i in infos] == sorted(i.name for i in infos)
    assert {(i.mtime, i.uid, i.gid, i.uname, i.gname, i.mode) for i in infos} == {(0, 0, 0, "", "", 0o644)}
    assert archive.read_bytes()[4:8] == b"\0\0\0\0"  # gzip header mtime 0
    assert gzip.decompress(archive.read_bytes())  # a plain gzip stream
    assert (
        _cold_journal(tmp_path / "b").root.joinpath("cold/archive/2024-Q1.tar.gz").read_bytes() == archive.read_bytes()
    )
    summary = (root / "cold/summaries/2024-Q1-summary.md").read_text()
    assert "# Quarterly Summary — 2024-Q1" in summary and "- 2024-01-10: Approved supervisor restart (cbo)" in summary
    index = json.loads((root / "cold/index/decisions_index.json").read_text())
    assert (
        index["supervisor"] == ["2024-01-10"]
        and index["infra"] == ["2024-01-10"]
        and index["builder"] == ["2024-02-11"]
    )
    assert "opened" not in index  # only archived decisions
    daily = [r for r in j.records() if r.uid == "daily:2024-01-10"]
    assert len(daily) == 1 and daily[0].tier == "cold" and daily[0].origin.startswith("cold/archive/2024-Q1.tar.gz:")
    assert j.verify() == []
    assert j.compact(today=date(2024, 7, 12))["dailies_archived"] == 0  # nothing rewritten, no gap marker comes back
    assert not list((root / "warm/daily").glob("2024-0[1-3]-*.md"))
    with pytest.raises(JournalError, match="archived"):
        j.write_daily_summary("2024-02-01", "late")
    assert j.verify() == []


def members_days(members: dict[str, bytes]) -> list[str]:
    return [name.removeprefix("daily/") for name in members]


@pytest.mark.parametrize(
    "rel", ["cold/archive/2024-Q1.tar.gz", "cold/summaries/2024-Q1-summary.md", "cold/index/decisions_index.json"]
)
@pytest.mark.parametrize("change", ["edit", "remove"])
def test_verify_catches_changes_to_the_cold_files(tmp_path: Path, rel: str, change: str) -> None:
    j = _cold_journal(tmp_path)
    path = tmp_path / rel
    data = path.read_bytes()
    if change == "remove":
        path.unlink()
    elif rel.endswith(".gz"):
        path.write_bytes(cold.archive_bytes({**cold.archive_members(path), "daily/2024-01-10.md": b"rewritten\n"}))
    else:
        path.write_bytes(data.replace(b"2024-01-10", b"2024-01-09"))
    problems = j.verify()
    assert problems and any(p.file == rel or p.file.startswith("warm/daily/") for p in problems), problems
    path.write_bytes(data)
    assert j.verify() == []


def test_an_archived_daily_summary_put_back_changed_is_caught(tmp_path: Path) -> None:
    j = _cold_journal(tmp_path)
    (tmp_path / "warm/daily/2024-01-10.md").write_text("rewritten history\n")
    assert [p.file for p in j.verify()] == ["warm/daily/2024-01-10.md"]


# ------------------------------------------------------------------ the shell commands
def test_journal_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = str(tmp_path / "j")
    code, out, err = _run(capsys, "memory", "journal", "decide", root, "--decision", "x", "--by", "cbo")
    assert code == 22 and "--create" in err
    code, out, _ = _run(
        capsys,
        "memory", "journal", "decide", root, "--create", "--decision", "Approved restart", "--by", "cbo",
        "--human-approval", "--tag", "infra", "--ts", "2026-01-04T19:59:34Z", "--json",
    )  # fmt: skip
    entry = json.loads(out)
    assert code == 0 and entry["iso"] == "2026-01-04T19:59:34Z" and entry["human_approval"] is True
    code, out, _ = _run(
        capsys,
        "memory", "journal", "posture", root, "Distressed", "--trigger", "supervisor_restart", "--active-count", "8",
        "--tes-score", "55", "--agent-change", "navigator=stalled→idling", "--json",
    )  # fmt: skip
    posture = json.loads(out)
    assert posture["recorded"] and posture["entry"]["agent_changes"] == {"navigator": "stalled→idling"}
    line = json.dumps({"ts": 1767576000.0, "iso": "2026-01-04T20:00:00Z", "to_posture": "Congestion", "tes_score": 60})
    code, out, _ = _run(capsys, "memory", "journal", "append", root, "--json", stdin=line + "\n")
    assert code == 0 and json.loads(out)["entries"][0]["from_posture"] == "Distressed"
    code, _out, err = _run(capsys, "memory", "journal", "append", root, "--entry", '{"foo": 1}')
    assert code == 2 and "neither a decision nor a posture entry" in err
    code, _out, err = _run(capsys, "memory", "journal", "posture", root, "Calm", "--agent-change", "oops")
    assert code == 2 and "NAME=CHANGE" in err
    goals = tmp_path / "goals.json"
    goals.write_text(json.dumps({"goals": [{"summary": "Monitor TES", "priority": "high"}], "completed_today": 2}))
    code, out, _ = _run(capsys, "memory", "journal", "goals", root, "--set", str(goals), "--json")
    assert json.loads(out)["goals"][0]["summary"] == "Monitor TES" and json.loads(out)["completed_today"] == 2
    code, out, _ = _run(capsys, "memory", "journal", "context", root, "--set", "-", "--json", stdin="# Now\n- x\n")
    assert json.loads(out) == {"written": 2}
    code, out, _ = _run(capsys, "memory", "journal", "read", root, "--json")
    found = json.loads(out)
    assert found["session_context"] == "# Now\n- x\n" and found["active_goals"]["goals"][0]["priority"] == "high"
    assert [d["decision"] for d in found["recent_decisions"]] == ["Approved restart"]
    assert [p["to_posture"] for p in found["posture_trend"]] == ["Distressed", "Congestion"]
    code, out, _ = _run(capsys, "memory", "journal", "read", root)
    assert code == 0 and "Distressed -> Congestion" in out
    code, out, _ = _run(capsys, "memory", "verify", root, "--json")
    assert code == 0 and json.loads(out)["ok"]
    hot = tmp_path / "j/hot/recent_decisions.jsonl"
    hot.write_text(hot.read_text().replace("Approved restart", "FORGED"))  # what `read` shows, not the chain
    code, out, err = _run(capsys, "memory", "journal", "read", root)
    assert code == 23 and "FORGED" not in out and "hot/recent_decisions.jsonl" in err


NEW_STEPS = [
    "narrative:2024-Q1",
    "seal:cold/summaries/2024-Q1-summary.md",
    "index",
    "seal:cold/index/decisions_index.json",
    "daily-archive:2024-Q1",
    "seal:cold/archive/2024-Q1.tar.gz",
    "context",
]


def _killed_compaction(root: str, step: str) -> None:
    import os

    def crash(name: str) -> None:
        if name == step:
            os._exit(17)

    MemoryJournal(root, crash_at=crash).compact(today=date(2024, 7, 12))


@pytest.mark.parametrize("step", NEW_STEPS)
def test_compaction_killed_at_the_new_steps_resumes_clean(tmp_path: Path, step: str) -> None:
    import multiprocessing

    j = MemoryJournal(tmp_path)
    j.write_decision("Approved supervisor restart", "r", "o", "cbo", True, timestamp="2024-01-10T10:00:00Z")
    j.update_posture("Calm", "recovered", timestamp="2024-02-11T11:00:00Z")
    j.write_decision("Opened builder lane", "r", "o", "cbo", True, timestamp="2024-07-09T10:00:00Z")
    j.write_session_context("**Updated**: 2024-07-09\n## Current Focus\n- lanes\n")
    before = sorted(str(e.data["hash"]) for e in j.entries()[0])
    child = multiprocessing.get_context("fork").Process(target=_killed_compaction, args=(str(tmp_path), step))
    child.start()
    child.join(60)
    assert child.exitcode == 17, "the crash point was never reached"
    assert j.verify() == []  # an interrupted compaction is pending, never a problem
    j.compact(today=date(2024, 7, 12))
    assert sorted(str(e.data["hash"]) for e in j.entries()[0]) == before
    assert j.verify() == [] and not j.inspect().pending
    assert (tmp_path / "cold/archive/2024-Q1.tar.gz").exists() and not list((tmp_path / "warm/daily").glob("2024-01-*"))
    assert (j.read_session_context() or "").startswith("# Session Context\n**Updated**: 2024-07-12")
