"""The import-layering contracts (pyproject.toml, ``[tool.importlinter]``) hold and bite.

``make lint`` runs ``lint-imports`` on the tree; these tests run it on a copy of the two
packages with one forbidden import added, to prove each kind of contract fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
IGNORE = shutil.ignore_patterns("__pycache__", "*.lock", "contracts")


def _lint(env_path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "300"}  # one line per contract in the report
    if env_path:
        env["PYTHONPATH"] = env_path
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--config", str(ROOT / "pyproject.toml")],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        cwd=ROOT,
    )


def test_the_tree_keeps_every_contract() -> None:
    result = _lint()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        ("terminai_sandbox/oci_media.py", "import terminai_sandbox.cli", "host: one-way floors"),
        ("terminai_sandbox/launch/audit.py", "import terminai_sandbox.signing.sign", "host: the launcher uses"),
        ("terminai_sandbox/common/reference.py", "import terminai_sandbox.launch.config", "host: one-way floors"),
        ("terminai_sandbox/common/which.py", "import requests", "host: common/ imports no third-party"),
        ("terminai_sandbox/registry.py", "import terminai_apts.memory", "host: of the toolset"),
        ("terminai_apts/model.py", "import terminai_apts.executor", "image: evolution > executor"),
        (
            "terminai_apts/executor/os_layer/seccomp.py",
            "import terminai_apts.executor.python_layer.guards",
            "image executor:",
        ),
        (
            "terminai_apts/executor/python_layer/guards.py",
            "import terminai_apts.executor.os_layer.seccomp",
            "image executor:",
        ),
        ("terminai_apts/executor/host/channel.py", "import terminai_apts.executor.process.zygote", "image executor:"),
        ("terminai_apts/executor/python_layer/values.py", "import terminai_apts.executor.host.run", "image executor:"),
        ("terminai_apts/executor/frames.py", "import terminai_apts.executor.python_layer.wrappers", "image executor:"),
        ("terminai_apts/health.py", "import apts", "image: nothing imports the apts shim"),
    ],
)
def test_a_forbidden_import_breaks_its_contract(tmp_path: Path, module: str, line: str, contract: str) -> None:
    for package in ("terminai-apts", "terminai-sandbox"):
        shutil.copytree(ROOT / "packages" / package / "src", tmp_path, dirs_exist_ok=True, ignore=IGNORE)
    target = tmp_path / module
    target.write_text(target.read_text() + f"\n{line}  # noqa\n")
    result = _lint(str(tmp_path))
    assert result.returncode == 1, result.stdout
    broken = [row for row in result.stdout.splitlines() if " BROKEN" in row]
    # A floor that reaches the launcher also lets kube reach it: that contract (which
    # allows no indirect import) breaks beside the one the import is against.
    also = [row for row in broken if not row.startswith(contract)]
    assert len(broken) - len(also) == 1, result.stdout
    assert all(row.startswith("host: kube verifies and describes") for row in also), result.stdout
