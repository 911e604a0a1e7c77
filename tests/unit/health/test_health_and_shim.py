from __future__ import annotations

import copy
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import apts
import apts.action
import apts.action.cleanup
import apts.model
import terminai_apts.action.cleanup
import terminai_apts.model
from terminai_apts.health import check, load_manifest


def run(*args: str, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    env = {**os.environ, **(env_extra or {})}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, check=False, env=env, timeout=60)


def test_shim_reexports_the_same_objects() -> None:
    assert apts.model.ObjectTableLabels is terminai_apts.model.ObjectTableLabels
    assert apts.model.CleanupPlan is terminai_apts.model.CleanupPlan
    assert apts.action.cleanup.cleanup_downloads is terminai_apts.action.cleanup.cleanup_downloads
    assert apts.action.cleanup.main is terminai_apts.action.cleanup.main
    assert apts.action.cleanup is sys.modules["apts.action.cleanup"]


def test_shim_module_runs_without_warnings(tmp_path: Path) -> None:
    result = run("-W", "error", "-m", "apts.action.cleanup", str(tmp_path), "--now", "2026-01-01")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert json.loads(result.stdout)["entries"] == []


def test_health_passes_on_the_installed_toolset() -> None:
    report = check()
    assert report.ok, report.problems
    assert report.contract_version == load_manifest()["contract_version"]
    assert report.checked > 20


def test_health_names_a_missing_member_and_extra_symbol() -> None:
    manifest = copy.deepcopy(load_manifest())
    symbols = manifest["modules"]["terminai_apts.model"]["symbols"]
    symbols["ObjectTableLabels"]["members"].append("SHRED")
    del symbols["CleanupPolicy"]
    symbols["cleanup_gone"] = {"kind": "function", "parameters": []}
    problems = check(manifest).problems
    assert "terminai_apts.model.ObjectTableLabels.SHRED: enum member missing" in problems
    assert "terminai_apts.model.CleanupPolicy: public symbol not listed in the contract" in problems
    assert "terminai_apts.model.cleanup_gone: missing" in problems


def test_health_detects_a_changed_signature() -> None:
    manifest = copy.deepcopy(load_manifest())
    params = manifest["modules"]["terminai_apts.action.cleanup"]["symbols"]["cleanup_downloads"]["parameters"]
    params[1]["default"] = "False"
    problems = check(manifest).problems
    assert any("cleanup_downloads: parameters changed" in p for p in problems)


def test_planted_missing_transit_fails_health_on_stderr_only(tmp_path: Path) -> None:
    # A sitecustomize that removes TRANSIT from the enum, as a broken image would ship it.
    (tmp_path / "sitecustomize.py").write_text(
        textwrap.dedent("""
        import terminai_apts.model as m
        from enum import Enum
        members = {k: v.value for k, v in m.ObjectTableLabels.__members__.items() if k != "TRANSIT"}
        m.ObjectTableLabels = Enum("ObjectTableLabels", members, type=str)
    """)
    )
    result = run("-m", "terminai_apts.health", env_extra={"PYTHONPATH": str(tmp_path)})
    assert result.returncode == 1
    assert result.stdout == ""
    assert "terminai_apts.model.ObjectTableLabels.TRANSIT: enum member missing" in result.stderr
    as_json = run("-m", "terminai_apts.health", "--json", env_extra={"PYTHONPATH": str(tmp_path)})
    assert as_json.returncode == 1 and json.loads(as_json.stdout)["ok"] is False


def test_health_reports_an_unreadable_manifest(tmp_path: Path) -> None:
    bad = tmp_path / "m.json"
    bad.write_text("{not json")
    result = run("-m", "terminai_apts.health", "--manifest", str(bad))
    assert result.returncode == 2 and "manifest cannot be read" in result.stderr


def test_a_bad_health_command_line_is_one_error_line_with_a_hint() -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "terminai_apts.health", "--bogus"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert lines == ["error: unrecognized arguments: --bogus", "  hint: see 'python -m terminai_apts.health --help'"]
