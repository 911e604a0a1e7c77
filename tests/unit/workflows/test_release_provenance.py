"""The release workflow emits the SLSA provenance, attests it keyless and verifies it before tagging."""

from __future__ import annotations

import re
from pathlib import Path

from terminai_sandbox.release.state import STEPS

from tests.unit.workflows import rules

RELEASE = Path(__file__).resolve().parents[3] / ".github" / "workflows" / "release.yml"


def _runs(job: str) -> str:
    return "\n".join(step.get("run") or "" for step in rules.load(RELEASE)["jobs"][job]["steps"])


def test_provenance_is_generated_attested_verified_and_published() -> None:
    assert "terminai-sandbox release describe" in _runs("build")
    assert "terminai-sandbox release sign --keyless" in _runs("sign")  # attests the SBOM and the provenance
    assert "terminai-sandbox release verify" in _runs("verify")  # requires both attestations
    # each platform's provenance, as release.json records it (tests/unit/workflows/test_release_platforms.py)
    assert ".provenance.path" in _runs("publish") and "assets/*.provenance.slsa.json" in _runs("publish")
    # provenance is made without root: the runner's GITHUB_WORKFLOW_REF (the builder id) reaches it
    assert not any("sudo" in line and "describe" in line for line in _runs("build").splitlines())


def test_the_workflow_runs_every_release_step_once_in_order() -> None:
    """CI runs the steps of `terminai-sandbox release` (the code `make demo` runs whole), no copy of them."""
    workflow = rules.load(RELEASE)
    called = [
        match.group(1)
        for job in workflow["jobs"].values()
        for step in job["steps"]
        for match in re.finditer(r"terminai-sandbox release (\w+)", step.get("run") or "")
    ]
    assert called == list(STEPS)
    # one writer of release.json: no job assembles it by hand
    text = RELEASE.read_text()
    assert "jq -n" not in text and "> dist/release.json" not in text
    assert "contracts: {ok: true" not in text


def test_each_job_hands_the_state_to_the_next() -> None:
    jobs = rules.load(RELEASE)["jobs"]
    chain = [
        ("push", None, "state-push"),
        ("sign", "state-push", "state-sign"),
        ("verify", "state-sign", "state-verify"),
    ]
    chain += [("tag", "state-verify", "state-tag"), ("launcher", "state-tag", None)]
    for job, takes, gives in chain:
        names = {
            (str(step.get("uses", "")).split("@")[0], step["with"]["name"])
            for step in jobs[job]["steps"]
            if "with" in step and "name" in step["with"]
        }
        if takes:
            assert ("actions/download-artifact", takes) in names, job
        if gives:
            assert ("actions/upload-artifact", gives) in names, job
