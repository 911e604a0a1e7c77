"""The release workflow emits the SLSA provenance, attests it keyless and verifies it before tagging."""

from __future__ import annotations

from pathlib import Path

from tests.unit.workflows import rules

RELEASE = Path(__file__).resolve().parents[3] / ".github" / "workflows" / "release.yml"


def _runs(job: str) -> str:
    return "\n".join(step.get("run") or "" for step in rules.load(RELEASE)["jobs"][job]["steps"])


def test_provenance_is_generated_attested_verified_and_published() -> None:
    assert "terminai-sandbox provenance" in _runs("build")
    assert "--type slsaprovenance1 --keyless" in _runs("sign")
    assert "--attestation slsaprovenance1" in _runs("verify")
    assert "dist/provenance.slsa.json" in _runs("publish")
    # provenance is made without root: the runner's GITHUB_WORKFLOW_REF (the builder id) reaches it
    assert not any(
        "sudo" in line and "provenance" in line for line in _runs("build").splitlines() if "chown" not in line
    )
