"""Interrupted operations: verify describes them (never as changed history) and they complete.

Compaction is killed at every step it announces (the crash hook) and by a real ``kill -9``
at several instants; a torn last line, a hot buffer one entry behind, a daily summary
sealed but unwritten and an index write cut short are each reported as pending, with
the command that completes them.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from terminai_apts.cli import main
from terminai_apts.errors import JournalError
from terminai_apts.memory import chainfile, checks, seals
from terminai_apts.memory.journal import DECISIONS, MemoryJournal

CTX = multiprocessing.get_context("fork")
TODAY = date(2024, 4, 11)


def _seed(root: Path) -> MemoryJournal:
    j = MemoryJournal(root)
    for i, day in enumerate(["2024-03-25", "2024-03-27", "2024-04-01", "2024-04-02", "2024-04-08", "2024-04-09"]):
        j.write_decision(f"decision {i} about PROJ-{i}", "why", "ok", "agent", i % 2 == 0, timestamp=f"{day}T10:00:00Z")
    j.update_posture("cautious", "start", timestamp="2024-03-25T11:00:00Z")
    j.update_posture("open", "trust earned", timestamp="2024-04-09T12:00:00Z")
    j.build_index([], rebuild=True)
    return j


def _verify(root: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict[str, Any], str]:
    code = main(["memory", "verify", str(root), "--json", *extra])
    out = capsys.readouterr()
    return code, json.loads(out.out), out.err


def _hashes(j: MemoryJournal) -> list[str]:
    return sorted({str(e.data["hash"]) for e in j.entries()[0]})


def _temporaries(root: Path) -> list[str]:
    return [str(p.relative_to(root)) for p in root.rglob("*") if checks.TEMP.fullmatch(str(p.relative_to(root)))]


def _steps(root: Path) -> list[str]:
    """The crash points an uninterrupted compaction of this journal announces, in order.

    Of the many ``seal:`` points (one per file written), the first and last of each kind
    of file are kept: the others are the same code at another file.
    """
    seen: list[str] = []
    MemoryJournal(root, crash_at=seen.append).compact(today=TODAY)
    kinds: dict[str, list[str]] = {}
    for step in seen:
        if step.startswith("seal:"):
            kinds.setdefault(step.rsplit("/", 1)[0], []).append(step)
    keep = {s for group in kinds.values() for s in (group[0], group[-1])}
    return [s for s in seen if not s.startswith("seal:") or s in keep]


def _crashing_compact(root: str, step: str) -> None:
    def crash(name: str) -> None:
        if name == step:
            os._exit(17)  # an abrupt death: no cleanup, no finally blocks

    MemoryJournal(root, crash_at=crash).compact(today=TODAY)


def test_compaction_killed_at_every_step_is_described_and_completed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed = tmp_path / "seed"
    _seed(seed)
    shutil.copytree(seed, tmp_path / "dry")
    steps = _steps(tmp_path / "dry")
    assert (
        "truncate" in steps and any(s.startswith("seal:cold/") for s in steps) and "anchored:decisions.jsonl" in steps
    )
    original = _hashes(MemoryJournal(seed))
    for n, step in enumerate(steps):
        root = tmp_path / f"kill{n}"
        shutil.copytree(seed, root)
        child = CTX.Process(target=_crashing_compact, args=(str(root), step))
        child.start()
        child.join(60)
        assert child.exitcode == 17, step
        code, report, err = _verify(root, capsys)
        assert report["problems"] == [], (step, report)
        if step == "plan":  # killed before the plan was written: nothing happened
            assert code == 0, (step, report)
        else:
            assert code == 22 and report["pending"][0]["file"] == "compaction.wal", (step, report)
            assert f"terminai-apts memory compact {root}" in err, (step, err)
        assert main(["memory", "compact", str(root)]) == 0
        capsys.readouterr()
        code, report, _ = _verify(root, capsys)
        assert code == 0 and report["ok"], (step, report)
        assert _hashes(MemoryJournal(root)) == original, step
        assert not _temporaries(root) and not (root / "compaction.wal").exists()


def test_verify_repair_completes_an_interrupted_compaction(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "j"
    _seed(root)
    child = CTX.Process(target=_crashing_compact, args=(str(root), "seal:cold/2024-Q1/shard.sqlite"))
    child.start()
    child.join(60)
    assert child.exitcode == 17
    (root / "warm/weekly").mkdir(parents=True, exist_ok=True)
    stale = root / "warm/weekly/.2024-W02.md.99999.tmp"  # what a writer killed mid-write leaves
    stale.write_text("half a summ")
    code, report, _ = _verify(root, capsys)
    assert code == 22 and not report["problems"]
    assert {"compaction.wal", "warm/weekly/.2024-W02.md.99999.tmp"} <= {p["file"] for p in report["pending"]}
    assert any("sealed when it completes" in p["reason"] for p in report["pending"])  # the unsealed shard
    code, report, _ = _verify(root, capsys, "--repair")
    assert code == 0 and report["ok"] and "completed the interrupted compaction" in report["repaired"]
    assert not stale.exists() and not (root / "compaction.wal").exists()


def test_a_tampered_journal_under_an_interrupted_compaction_is_still_broken(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "j"
    _seed(root)
    child = CTX.Process(target=_crashing_compact, args=(str(root), "truncate"))
    child.start()
    child.join(60)
    lines = (root / DECISIONS).read_text().splitlines()
    lines[-1] = lines[-1].replace("decision 5", "decision 50")
    (root / DECISIONS).write_text("\n".join(lines) + "\n")
    code, report, _ = _verify(root, capsys)
    assert code == 23 and report["problems"][0]["file"] == str(DECISIONS)


KILLER = """
import sys
from datetime import date
from terminai_apts.memory.journal import MemoryJournal
print("start", flush=True)
MemoryJournal(sys.argv[1]).compact(today=date(2025, 1, 2))
"""


def _big(root: Path) -> None:
    """Decisions every second day for most of a year: gap markers, weekly summaries and three quarters."""
    j = MemoryJournal(root)
    day = date(2024, 3, 1).toordinal()
    for i in range(140):
        when = date.fromordinal(day + i * 2).isoformat()
        j.write_decision(f"decision {i} on PROJ-{i}", "why", "ok", "agent", True, timestamp=f"{when}T10:00:00Z")
        if i % 7 == 0:
            j.update_posture(["open", "cautious"][i % 2], f"step {i}", timestamp=f"{when}T11:00:00Z")
    j.build_index([], rebuild=True)


@pytest.mark.slow
def test_real_kill_9_during_compaction(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seed = tmp_path / "seed"
    _big(seed)
    original = _hashes(MemoryJournal(seed))
    timing = tmp_path / "timing"
    shutil.copytree(seed, timing)
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", KILLER, str(timing)], check=True, capture_output=True)
    whole = time.monotonic() - started
    states: list[str] = []
    for n, fraction in enumerate((0.15, 0.3, 0.45, 0.6, 0.75, 0.9)):
        root = tmp_path / f"kill{n}"
        shutil.copytree(seed, root)
        proc = subprocess.Popen([sys.executable, "-c", KILLER, str(root)], stdout=subprocess.PIPE)
        assert proc.stdout is not None and proc.stdout.readline() == b"start\n"
        time.sleep(whole * fraction * 0.8)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        code, report, _ = _verify(root, capsys)
        assert report["problems"] == [], (fraction, report)
        states.append("interrupted" if code == 22 else "finished" if code == 0 else f"exit {code}")
        assert main(["memory", "compact", str(root)]) == 0
        capsys.readouterr()
        code, report, _ = _verify(root, capsys)
        assert code == 0 and report["ok"], (fraction, report)
        assert _hashes(MemoryJournal(root)) == original
        assert not _temporaries(root)
    assert "interrupted" in states, states  # the kills really landed inside the compaction


def test_torn_last_line_is_pending_then_quarantined_never_glued(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "j"
    j = _seed(root)
    with open(root / DECISIONS, "ab") as fh:
        fh.write(b'{"decision": "half wri')  # a power loss mid-append
    code, report, err = _verify(root, capsys)
    assert code == 22 and report["pending"][0]["file"] == str(DECISIONS) and "torn" in err
    entry = j.write_decision("next one", "r", "o", "agent", True, timestamp="2024-07-11T00:00:00Z")
    last = (root / DECISIONS).read_bytes().splitlines()[-1]
    assert json.loads(last) == entry  # its own line, linked to the last whole entry
    quarantined = [json.loads(x) for x in (root / "quarantine.jsonl").read_text().splitlines()]
    assert quarantined[-1]["raw"] == '{"decision": "half wri' and quarantined[-1]["reason"] == "torn last line"
    code, report, _ = _verify(root, capsys)
    assert code == 0 and report["ok"], report


def test_without_the_repair_a_torn_line_glues_the_next_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "j"
    j = _seed(root)
    with open(root / DECISIONS, "ab") as fh:
        fh.write(b'{"decision": "half wri')
    monkeypatch.setattr(chainfile, "repair_torn_tail", lambda _fd, _on_torn: False)
    with pytest.raises(JournalError, match="not a journal entry"):  # the head cannot be read past it
        j.write_decision("next one", "r", "o", "agent", True)
    monkeypatch.setattr(chainfile, "head_of", lambda _fd, _path, _genesis: "0" * 64)
    j.write_decision("next one", "r", "o", "agent", True)
    code, report, _ = _verify(root, capsys)
    assert code == 23 and "corrupt line" in report["problems"][0]["reason"]  # glued: the entry is lost


def test_a_whole_record_that_lost_its_newline_is_kept(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "j"
    j = _seed(root)
    path = root / DECISIONS
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    j.write_decision("next one", "r", "o", "agent", True, timestamp="2024-07-11T00:00:00Z")
    assert len(path.read_bytes().splitlines()) == 7 and not (root / "quarantine.jsonl").exists()
    assert _verify(root, capsys)[0] == 0


def test_a_complete_corrupt_last_line_refuses_appends(tmp_path: Path) -> None:
    root = tmp_path / "j"
    j = _seed(root)
    with open(root / DECISIONS, "ab") as fh:
        fh.write(b"{not json\n")
    with pytest.raises(JournalError, match="not a journal entry") as refused:
        j.write_decision("next one", "r", "o", "agent", True)
    assert "memory compact" in (refused.value.hint or "")
    assert j.quarantine() == 1
    j.write_decision("next one", "r", "o", "agent", True, timestamp="2024-07-11T00:00:00Z")


def test_hot_buffer_one_behind_is_pending_and_healed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "j"
    j = _seed(root)
    with j.lock():  # a crash between the chain append and the hot buffer's write
        j._append(DECISIONS, {"ts": "2024-07-11T00:00:00Z", "kind": "decision", "decision": "lost from hot"})
    code, report, _ = _verify(root, capsys)
    assert code == 22 and report["pending"][0]["file"] == "hot/recent_decisions.jsonl"
    j.write_decision("next one", "r", "o", "agent", True, timestamp="2024-07-12T00:00:00Z")
    hot = [json.loads(x)["decision"] for x in (root / "hot/recent_decisions.jsonl").read_text().splitlines()]
    assert hot[-2:] == ["lost from hot", "next one"]
    assert _verify(root, capsys)[0] == 0


def test_daily_summary_sealed_but_unwritten(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "j"
    j = _seed(root)
    with j.lock():  # the seal is written first; a crash before the file
        seals.record(root, "warm/daily/2024-07-11.md", "ab" * 32, j._torn(str(seals.SEALS)))
    code, report, _ = _verify(root, capsys)
    assert code == 22 and "never written" in report["pending"][0]["reason"]
    code, report, _ = _verify(root, capsys, "--repair")
    assert code == 0 and report["repaired"] == ["gave up the unwritten warm/daily/2024-07-11.md"]
    j.write_daily_summary("2024-07-11", "written after all")
    assert _verify(root, capsys)[0] == 0


def test_index_write_cut_short(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "j"
    j = _seed(root)
    with j.lock():  # the seal withdrawn, the index being rewritten: then a crash
        seals.record(root, "index.sqlite", None, j._torn(str(seals.SEALS)))
    with open(root / "index.sqlite", "ab") as fh:
        fh.write(b"\0" * 512)
    code, report, err = _verify(root, capsys)
    assert code == 22 and report["pending"][0]["file"] == "index.sqlite" and "--rebuild" in err
    assert main(["memory", "index", str(root), "--rebuild"]) == 0
    capsys.readouterr()
    assert _verify(root, capsys)[0] == 0
    with open(root / "index.sqlite", "ab") as fh:  # the same change without a withdrawn seal
        fh.write(b"\0" * 512)
    code, report, _ = _verify(root, capsys)
    assert code == 23 and report["problems"][0]["file"] == "index.sqlite"


def test_a_journal_from_before_seals_is_sealed_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "j"
    j = MemoryJournal(root)
    j.write_decision("old", "r", "o", "agent", True, timestamp="2023-12-28T10:00:00Z")
    j.compact(today=date(2024, 1, 3))
    (root / "warm/seals.jsonl").unlink()  # as an older version left it: no seals, no mark in the index files,
    (root / ".state.json").unlink()  # no state record
    for shard in root.glob("cold/*/shard.sqlite"):
        shard.chmod(0o644)
        import sqlite3

        with sqlite3.connect(shard) as conn:
            conn.execute("DELETE FROM meta WHERE key = 'sealed_in'")
        conn.close()
    code, report, err = _verify(root, capsys)
    assert code == 22 and not report["problems"] and "--seal-existing" in err
    assert main(["memory", "compact", str(root), "--seal-existing"]) == 0
    capsys.readouterr()
    assert _verify(root, capsys)[0] == 0
    assert main(["memory", "compact", str(root), "--seal-existing"]) == 22  # refused once seals exist
