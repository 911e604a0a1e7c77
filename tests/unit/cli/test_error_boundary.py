"""One error boundary and one JSON error writer for ``terminai-sandbox``.

The click-free ``run`` path, the click group around a command and the console script
around click's usage errors all end in ``common.boundary``: the same failure gives the
same exit code, the same two stderr lines and, under ``--json``, the same JSON object,
whichever path met it. No other module builds that object.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from terminai_sandbox.common.trust_options import TOO_MANY, TOO_MANY_HINT

PACKAGE = Path(__file__).resolve().parents[3] / "packages" / "terminai-sandbox" / "src" / "terminai_sandbox"
CLI = str(Path(sys.executable).with_name("terminai-sandbox"))
IMAGE = "registry.example/acme/sandbox@sha256:" + "0" * 64


def _run(argv: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / "c"), "XDG_STATE_HOME": str(home / "s")}
    env.pop("TERMINAI_SANDBOX_IMAGE", None)
    return subprocess.run([CLI, *argv], capture_output=True, text=True, env=env, timeout=60, check=False)


def test_only_the_boundary_writes_the_json_error_object() -> None:
    writers = sorted(
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if re.search(r"""["']ok["']\s*:\s*False""", path.read_text(encoding="utf-8"))
    )
    assert writers == ["common/boundary.py"]


def test_the_kernel_path_and_the_click_path_report_a_failure_alike(tmp_path: Path) -> None:
    bad = ["--json", "--image", IMAGE, "--key", "k.pub", "--policy", "p.json"]
    kernel = _run(["run", *bad, "--", "true"], tmp_path)  # the console script's click-free path
    click_path = _run(["preflight", *bad], tmp_path)  # a click command
    for proc in (kernel, click_path):
        assert proc.returncode == 3, proc.stderr
        assert json.loads(proc.stdout) == {
            "ok": False,
            "error": {"message": TOO_MANY, "hint": TOO_MANY_HINT, "exit_code": 3},
        }
    assert kernel.stderr == click_path.stderr == f"error: {TOO_MANY}\n  hint: {TOO_MANY_HINT}\n"


@pytest.mark.parametrize("command", [["run"], ["preflight"], ["verify", IMAGE]])
def test_a_usage_error_is_the_same_object_on_either_path(command: list[str], tmp_path: Path) -> None:
    proc = _run([*command, "--json", "--nope"], tmp_path)
    assert proc.returncode == 2, proc.stderr
    where = "terminai-sandbox " + command[0]
    assert json.loads(proc.stdout) == {
        "ok": False,
        "error": {"message": "No such option '--nope'.", "hint": f"see '{where} --help'", "exit_code": 2},
    }
    assert proc.stderr == f"error: No such option '--nope'.\n  hint: see '{where} --help'\n"
