"""The real memory API (SQLite) injected as `thermal`, queried from sandboxed code."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from terminai_apts.executor import SandboxConfig, execute, thermal_spec
from terminai_apts.memory import store
from terminai_apts.memory.records import NewMemory


@pytest.fixture()
def memory_db(tmp_path: Path) -> Path:
    path = tmp_path / "memory.db"
    store.build(
        path,
        [
            NewMemory(
                uid=f"u{i}",
                date=f"2026-01-0{i + 1}",
                recorded_at=f"2026-01-0{i + 1}",
                title=f"deploy plan {i}",
                content=f"rollout step {i} for the sandbox",
                tags=("ops",),
            )
            for i in range(3)
        ],
    )
    path.chmod(0o644)  # the child reads it after dropping to an unprivileged uid
    tmp_path.chmod(0o755)
    return path


def test_thermal_search_from_sandbox(memory_db: Path) -> None:
    code = "hits = thermal.search_results('rollout')\nprint(len(hits['hits']), hits['total'])"
    result = execute(code, SandboxConfig(timeout_seconds=10), api=thermal_spec(str(memory_db)))
    assert result.success, result.error
    assert result.stdout == "3 3\n"


def test_thermal_records_are_immutable(memory_db: Path) -> None:
    code = "hit = thermal.search_results('rollout')['hits'][0]\nhit.score = 0"
    result = execute(code, SandboxConfig(timeout_seconds=10), api=thermal_spec(str(memory_db)))
    assert not result.success


def test_cli_exec_db(memory_db: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "terminai_apts.cli", "exec", "--json", "--db", str(memory_db)],
        input="print(thermal.count())",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["stdout"] == "3\n"


def test_thermal_over_a_compacted_journal(tmp_path: Path) -> None:
    from datetime import date

    from terminai_apts.memory.journal import MemoryJournal

    journal = MemoryJournal(tmp_path / "journal")
    journal.write_decision("rollout canary", "risk", "ok", "agent", True, timestamp="2025-02-01T00:00:00Z")
    journal.write_decision("rollout everywhere", "confidence", "ok", "agent", True, timestamp="2025-08-01T00:00:00Z")
    journal.compact(today=date(2025, 8, 2), only="quarterly")  # 2025-Q1 becomes a sealed shard
    journal.build_index([], rebuild=True)
    for path in (tmp_path, *tmp_path.rglob("*")):  # the child reads after dropping to an unprivileged uid
        path.chmod(0o755 if path.is_dir() else path.stat().st_mode | 0o444)
    code = (
        "res = thermal.search_results('rollout', order='oldest')\n"
        "print([h['memory']['tier'] for h in res['hits']], res['total'])"
    )
    result = execute(code, SandboxConfig(timeout_seconds=10), api=thermal_spec(str(journal.root)))
    assert result.success, result.error
    assert result.stdout == "['cold', 'warm'] 2\n"
