"""zizmor (pinned in requirements-dev, run offline by ``make lint``) holds the general rules.

Each sample breaks one rule that used to be hand-written in rules.py; the test proves
zizmor, with the project's configuration (.github/zizmor.yml, pedantic persona), refuses
it with the named audit, and that the compliant sample and the real workflows pass.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.workflows.samples import CHECKOUT, GOOD_JOB, workflow

ROOT = Path(__file__).resolve().parents[3]
ZIZMOR = Path(sys.executable).with_name("zizmor")
COMMAND = [str(ZIZMOR), "--offline", "--persona=pedantic", "--config", str(ROOT / ".github" / "zizmor.yml")]


def _audits(path: Path) -> set[str]:
    result = subprocess.run([*COMMAND, "--format", "json", str(path)], capture_output=True, text=True, check=False)
    assert result.stdout, result.stderr
    findings = json.loads(result.stdout)
    assert (result.returncode == 0) == (findings == []), result.stderr
    return {finding["ident"] for finding in findings}


def test_the_workflows_pass_zizmor() -> None:
    result = subprocess.run(
        [*COMMAND, "--no-progress", str(ROOT / ".github" / "workflows")], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_compliant_sample_passes(tmp_path: Path) -> None:
    (tmp_path / "x.yml").write_text(workflow(GOOD_JOB))
    assert _audits(tmp_path / "x.yml") == set()


@pytest.mark.parametrize(
    ("text", "audit"),
    [
        # was rules.py "top-level permissions must be {}"
        (workflow(GOOD_JOB, top=""), "excessive-permissions"),
        (workflow(GOOD_JOB, top="permissions: write-all\n"), "excessive-permissions"),
        # was rules.py "pull_request_target runs fork code with the repository's secrets"
        (workflow(GOOD_JOB, on="on: pull_request_target\n"), "dangerous-triggers"),
        (workflow(GOOD_JOB, on="on:\n  pull_request_target:\n    types: [opened]\n"), "dangerous-triggers"),
        # was rules.py "must be pinned to a full 40-hex commit SHA"
        (workflow(GOOD_JOB.replace(CHECKOUT, "actions/checkout@v4")), "unpinned-uses"),
        (workflow(GOOD_JOB.replace(CHECKOUT, "actions/checkout@11bd719")), "unpinned-uses"),
        (workflow(GOOD_JOB.replace(CHECKOUT, "actions/checkout@main # v4.2.2")), "unpinned-uses"),
        # was rules.py "must be pinned by @sha256 digest"
        (workflow(GOOD_JOB.replace("  - run: make lint\n", "  - uses: docker://alpine:3\n")), "unpinned-images"),
        # was rules.py "expression in run: (pass it through env:)"
        (workflow(GOOD_JOB.replace("make lint", 'echo "${{ secrets.TOKEN }}"')), "template-injection"),
        (workflow(GOOD_JOB.replace("make lint", "echo ${{ github.event.pull_request.title }}")), "template-injection"),
        (workflow(GOOD_JOB.replace("make lint", "echo ${{ github.sha }}")), "template-injection"),
        # overlaps rules.py's persist-credentials rule (which also refuses an explicit true)
        (workflow(GOOD_JOB.replace("    with:\n      persist-credentials: false\n", "")), "artipacked"),
        # new with zizmor: every grant beyond contents: read carries its reason
        (workflow(GOOD_JOB.replace("contents: read", "contents: write")), "undocumented-permissions"),
    ],
)
def test_zizmor_refuses_each_violation(tmp_path: Path, text: str, audit: str) -> None:
    (tmp_path / "x.yml").write_text(text)
    assert audit in _audits(tmp_path / "x.yml")
