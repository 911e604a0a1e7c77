"""``terminai-apts memory ...``: every sub-command, JSON output and clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from terminai_apts.cli import main
from terminai_apts.memory.journal import DECISIONS, MemoryJournal


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_round_trip(tmp_path: Path, seed_archive: Path, capsys: pytest.CaptureFixture[str]) -> None:
    j = MemoryJournal(tmp_path / "journal")
    j.write_decision("adopt postgres", "scale", "done", "lead", True)
    db = str(tmp_path / "mem.db")
    code, out, _ = _run(
        capsys, "memory", "index", db, "--journal", str(j.root), "--archive", str(seed_archive), "--json"
    )
    assert code == 0 and json.loads(out) == {"built": 3}
    code, out, _ = _run(capsys, "memory", "index", db, "--journal", str(j.root), "--json")
    assert json.loads(out) == {"added": 0}
    code, out, _ = _run(capsys, "memory", "search", db, "postgres", "--order", "relevance", "--json")
    found = json.loads(out)
    assert code == 0 and found["total"] == 1 and found["hits"][0]["origin"].endswith("decisions.jsonl:1")
    assert {"total", "truncated", "elapsed_ms", "plan"} <= set(found)
    code, out, _ = _run(capsys, "memory", "grep", db, r"sqlite\.", "--json")
    assert json.loads(out)["total"] == 1
    code, out, _ = _run(capsys, "memory", "filter", db, "--source", "lead", "--json")
    assert json.loads(out)["total"] == 2
    code, out, _ = _run(capsys, "memory", "count", db, "--since", "2024-01-01")
    assert out.strip() == "1"
    code, out, _ = _run(capsys, "memory", "get", db, "1", "--json")
    assert json.loads(out)["title"] == "Old decision"
    code, out, _ = _run(capsys, "memory", "summarize", db, "postgres")
    assert "adopt postgres" in out
    code, out, _ = _run(capsys, "memory", "verify", str(j.root), "--json")
    assert code == 0 and json.loads(out)["ok"]
    code, out, _ = _run(capsys, "memory", "compact", str(j.root), "--only", "weekly", "--json")
    assert code == 0 and json.loads(out)["quarters_archived"] == 0 and "weekly_summaries" in json.loads(out)
    code, out, _ = _run(capsys, "memory", "compact", str(j.root), "--json")
    assert code == 0 and "quarters_archived" in json.loads(out)


def test_cli_errors(tmp_path: Path, seed_archive: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "memory", "search", str(tmp_path / "none.db"), "x")
    assert code == 24  # MemoryStoreError (docs/EXIT_CODES.md)
    assert "does not exist" in err
    code, _, err = _run(capsys, "memory", "search", str(seed_archive), "x")
    assert code != 0 and "original schema" in err and "hint" in err
    db = tmp_path / "m.db"
    _run(capsys, "memory", "index", str(db), "--archive", str(seed_archive))
    code, _, err = _run(capsys, "memory", "search", str(db), "x", "--since", "yesterday-ish")
    assert code == 2 and "not a valid date" in err
    code, _, err = _run(capsys, "memory", "grep", str(db), "([a-")
    assert code == 2 and "bad regular expression" in err
    code, _, err = _run(capsys, "memory", "get", str(db), "99")
    assert code != 0 and "no memory" in err
    j = MemoryJournal(tmp_path / "j")
    j.write_decision("a", "b", "c", "d", False)
    j.write_decision("e", "f", "g", "h", False)
    path = j.root / DECISIONS
    path.write_text(path.read_text().replace('"a"', '"A"'))
    code, out, err = _run(capsys, "memory", "verify", str(j.root))
    assert code == 23 and ":1: entry edited" in out and "chain broken" in err


def test_cli_on_a_journal_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    j = MemoryJournal(tmp_path / "journal")
    j.write_decision("adopt postgres", "scale", "done", "lead", True, timestamp="2023-02-01T00:00:00Z")
    j.write_decision("tune postgres", "latency", "done", "lead", True)
    _run(capsys, "memory", "compact", str(j.root), "--only", "quarterly")
    code, out, _ = _run(capsys, "memory", "index", str(j.root), "--json")
    assert code == 0 and json.loads(out) == {"built": 1}  # the sealed quarter stays in its shard
    code, out, _ = _run(capsys, "memory", "search", str(j.root), "postgres", "--order", "oldest", "--json")
    found = json.loads(out)
    assert found["total"] == 2 and [h["title"] for h in found["hits"]] == ["adopt postgres", "tune postgres"]
    assert "2023-Q1" in found["plan"] and found["hits"][0]["tier"] == "cold"
