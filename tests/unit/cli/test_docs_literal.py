"""Steps of the docs that a reader follows literally, run as written."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from terminai_apts.executor import SandboxConfig, execute, thermal_spec

BIN = Path(sys.executable).parent


def _archive(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE memories(id INTEGER PRIMARY KEY, date TEXT, title TEXT, content TEXT,"
        " summary TEXT, tags TEXT, source TEXT, confidence REAL)"
    )
    conn.execute("INSERT INTO memories VALUES (1, '2025-12-10', 'GPU allocation', 'a', 's', 'gpu', 't', 1.0)")
    conn.commit()
    conn.close()


def test_agent_api_thermal_spec_with_a_relative_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # docs/AGENT_API.md: execute(code, SandboxConfig(security_mode="high"), api=thermal_spec("memory.db"))
    _archive(tmp_path / "archive.sqlite")
    subprocess.run(
        [str(BIN / "terminai-apts"), "memory", "index", "memory.db", "--archive", "archive.sqlite"],
        cwd=tmp_path,
        check=True,
        capture_output=True,
    )
    monkeypatch.chdir(tmp_path)
    code = 'for r in thermal.search(query="GPU allocation", limit=10):\n    print(r.title)\n'
    result = execute(code, SandboxConfig(security_mode="high"), api=thermal_spec("memory.db"))
    assert result.success, result.error
    assert result.stdout == "GPU allocation\n"
    assert os.path.isabs(thermal_spec("memory.db").args[0])


def test_readme_run_line_names_the_mount_it_needs() -> None:
    readme = (Path(__file__).parents[3] / "README.md").read_text()
    line = next(x for x in readme.splitlines() if "apts.action.cleanup /downloads" in x)
    before = readme[: readme.index(line)].splitlines()[-1]
    assert "SANDBOX_MOUNTS=" in before and ":/downloads" in before
