"""Every `python -m` entry point of the contract runs and prints what its schema says."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from contract_support import errors, load_manifest

from conftest import NOW

_ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONSTARTUP",)}
_PLAN_MODULES = [e["module"] for e in load_manifest()["entry_points"] if e.get("stdout_schema") == "cleanup-plan"]


def _run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, check=False, env=_ENV, timeout=60, cwd=cwd
    )


def _validate(document: Any, schema: dict[str, Any]) -> None:
    problems = errors(document, schema)
    assert not problems, problems[:10]
    try:
        import jsonschema
    except ImportError:
        return  # the image has no jsonschema; the built-in checker above is authoritative there
    jsonschema.validate(document, schema)


@pytest.mark.parametrize("module", _PLAN_MODULES)
def test_cleanup_entry_point_prints_a_valid_plan(module: str, downloads: Path, manifest: dict[str, Any]) -> None:
    result = _run("-m", module, str(downloads), "--now", NOW)
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)  # stdout holds the plan and nothing else
    _validate(plan, manifest["schemas"]["cleanup-plan"])
    labels = {e["path"]: e["label"] for e in plan["entries"]}
    assert labels["movie.mkv.part"] == "TRANSIT"
    assert labels["fresh.txt"] == "TRANSIT"
    assert labels["empty.txt"] == "DELETE"
    assert labels["a (1).pdf"] == "DELETE"
    assert labels["a.pdf"] == "KEEP"
    assert labels["big.iso"] == "DELETE"
    assert labels["old/thesis.docx"] == "ARCHIVE"
    assert labels["link.pdf"] == "KEEP"
    assert labels["keep.md"] == "KEEP"


def test_shim_and_canonical_entry_points_print_identical_plans(downloads: Path) -> None:
    outputs = {_run("-m", module, str(downloads), "--now", NOW).stdout for module in _PLAN_MODULES}
    assert len(outputs) == 1


def test_cleanup_entry_point_refuses_a_missing_folder(tmp_path: Path) -> None:
    result = _run("-m", "apts.action.cleanup", str(tmp_path / "nope"), "--now", NOW)
    assert result.returncode != 0
    assert result.stdout == ""
    assert "does not exist" in result.stderr


def test_health_entry_point_is_satisfied_and_silent_on_stdout() -> None:
    result = _run("-m", "terminai_apts.health")
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    report = json.loads(_run("-m", "terminai_apts.health", "--json").stdout)
    assert report["ok"] is True and report["problems"] == []


def test_importing_the_shim_prints_nothing() -> None:
    result = _run("-c", "import apts, apts.model, apts.action, apts.action.cleanup")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "" and result.stderr == ""


def test_installed_manifest_matches_this_suite(manifest: dict[str, Any]) -> None:
    from terminai_apts.health import load_manifest as installed

    assert installed() == manifest
