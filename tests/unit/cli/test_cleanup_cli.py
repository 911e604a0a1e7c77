"""``terminai-apts cleanup``: the cleanup tool as a sub-command, and a plan that reaches outside its folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

CLI = str(Path(sys.executable).parent / "terminai-apts")
NOW = "2030-01-01T00:00:00Z"
OLD = 1577836800  # 2020-01-01


def _cleanup(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, "cleanup", *args], capture_output=True, text=True, check=False)


def test_cleanup_subcommand_prints_the_same_plan_as_the_module(tmp_path: Path) -> None:
    (tmp_path / "setup.exe").write_bytes(b"x" * 10)
    os.utime(tmp_path / "setup.exe", (OLD, OLD))
    sub = _cleanup(str(tmp_path), "--now", NOW)
    module = subprocess.run(
        [sys.executable, "-m", "apts.action.cleanup", str(tmp_path), "--now", NOW],
        capture_output=True,
        text=True,
        check=False,
    )
    assert sub.returncode == module.returncode == 0
    assert sub.stdout == module.stdout and json.loads(sub.stdout)["entries"]


def test_a_plan_entry_outside_the_folder_is_refused_by_name(tmp_path: Path) -> None:
    folder = tmp_path / "downloads"
    folder.mkdir()
    (folder / "setup.exe").write_bytes(b"x" * 10)
    os.utime(folder / "setup.exe", (OLD, OLD))
    outside = tmp_path / "precious.exe"
    outside.write_bytes(b"y" * 10)
    os.utime(outside, (OLD, OLD))
    plan = json.loads(_cleanup(str(folder), "--now", NOW).stdout)
    moved = [e for e in plan["entries"] if e["label"] in ("DELETE", "ARCHIVE")]
    assert moved, plan["entries"]
    moved[0]["path"] = "../precious.exe"  # same size and mtime as the real file it names
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    done = _cleanup(str(folder), "--plan", str(tmp_path / "plan.json"), "--apply", "--approved-by", "tester")
    assert done.returncode == 20 and "outside the planned folder" in done.stderr, done
    assert "'../precious.exe'" in done.stderr and "nothing was moved" in done.stderr
    assert outside.read_bytes() == b"y" * 10
    # The refusal is for the whole plan: no journal, no move of any entry.
    assert not (folder / ".terminai-cleanup").exists()


def test_repl_runs_a_last_cell_that_has_no_closing_blank_line() -> None:
    done = subprocess.run([CLI, "repl"], input="x = 2\nprint(x * 21)", capture_output=True, text=True, check=False)
    assert done.returncode == 0 and "42" in done.stdout, done


def test_an_empty_folder_argument_is_refused_and_nothing_moves(tmp_path: Path) -> None:
    # `terminai-apts cleanup "$DIR"` with DIR unset: the current directory must not be cleaned.
    (tmp_path / "setup.exe").write_bytes(b"x" * 10)
    os.utime(tmp_path / "setup.exe", (OLD, OLD))
    for empty in ("", "  "):
        done = subprocess.run(
            [CLI, "cleanup", empty, "--now", NOW, "--apply", "--approved-by", "me"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 2 and "the folder to clean is empty" in done.stderr, done
        assert "hint:" in done.stderr and "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["setup.exe"]
