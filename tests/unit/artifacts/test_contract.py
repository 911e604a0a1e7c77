"""Contract: the supported contract version and the image label, from the one shipped manifest."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from terminai_sandbox.artifacts.contract import LABEL, Contract, incompatibility, parse_version, supported_version
from terminai_sandbox.errors import ArtifactError
from terminai_sandbox.launch import preflight

ROOT = Path(__file__).resolve().parents[3]
MANIFEST = ROOT / "contracts" / "t-apts" / "contract.json"


def test_the_shipped_contract_is_the_repository_manifest() -> None:
    data = json.loads(MANIFEST.read_text())
    shipped = Contract.shipped()
    assert shipped == Contract(data["contract"], data["contract_version"])
    assert supported_version() == shipped.version
    # preflight's default is this version, not a constant of its own
    assert preflight.PreflightOptions(trust=None).supported_contract == shipped.version
    assert preflight.CONTRACT_LABEL == LABEL == "dev.terminai.contract.version"


def test_the_build_labels_images_with_the_same_name() -> None:
    from terminai_sandbox import assemble

    from tests.fixtures.plan import sample_plan, sources

    assert assemble.CONTRACT_LABEL is LABEL  # re-exported, not defined again
    assert dict(sample_plan().labels)[LABEL] == sources().contract_version


@pytest.mark.parametrize(
    ("image", "supported", "problem"),
    [
        ("1.3.0", "1.3.0", None),
        ("1.4.0", "1.3.0", None),  # a newer minor adds, never removes
        ("1.3.0", "1.3.9", None),  # a patch never matters
        ("1.2.9", "1.3.0", "older than the required 1.3.0"),
        ("2.0.0", "1.3.0", "major differs"),
        ("0.9.0", "1.3.0", "major differs"),
        (None, "1.3.0", f"the image has no {LABEL} label"),
        ("", "1.3.0", f"the image has no {LABEL} label"),
        ("1.3", "1.3.0", "is malformed"),
        ("1.x.0", "1.3.0", "is malformed"),
        ("1.3.0", "one", "this launcher's supported contract version 'one' is malformed"),
    ],
)
def test_compatibility_is_semantic_versioning(image: str | None, supported: str, problem: str | None) -> None:
    found = incompatibility(image, supported)
    assert (found is None) == (problem is None)
    if problem is not None:
        assert found is not None and problem in found
    if parse_version(supported) is not None:
        contract = Contract("t-apts", supported)
        assert contract.compatible(image) is (problem is None)
        assert contract.incompatibility(image) == found


@pytest.mark.parametrize("version", ["1.0", "1.0.0.0", "v1.0.0", "1.0.0-rc1", "", "١.٠.٠"])
def test_a_version_that_is_not_major_minor_patch_is_refused(version: str) -> None:
    with pytest.raises(ArtifactError, match=r"not MAJOR\.MINOR\.PATCH") as caught:
        Contract("t-apts", version)
    assert "contract_version" in caught.value.hint


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (None, "no contract manifest at"),
        ("{", "is not valid JSON"),
        ("[]", "is not a JSON object"),
        ('{"contract": "t-apts"}', "needs 'contract' and 'contract_version' strings"),
        ('{"contract": "t-apts", "contract_version": 1}', "needs 'contract' and 'contract_version' strings"),
        ('{"contract": "t-apts", "contract_version": "1.2"}', "not MAJOR.MINOR.PATCH"),
    ],
)
def test_a_malformed_manifest_is_refused_naming_the_file(tmp_path: Path, text: str | None, message: str) -> None:
    path = tmp_path / "contract.json"
    if text is not None:
        path.write_text(text)
    with pytest.raises(ArtifactError, match=message) as caught:
        Contract.load(path)
    assert str(path) in caught.value.message and caught.value.exit_code == 3 and caught.value.hint


def test_a_contract_is_immutable_and_hashable() -> None:
    contract = Contract("t-apts", "1.3.0")
    with pytest.raises(AttributeError, match="immutable"):
        contract.version = "9.9.9"  # type: ignore[misc]
    assert {contract, Contract("t-apts", "1.3.0")} == {contract}
    assert repr(contract) == "Contract(name='t-apts', version='1.3.0')"


def test_reading_the_contract_stays_stdlib_only() -> None:
    # preflight imports it on every session start: no typing, dataclasses or third-party stacks
    code = (
        "import sys; from terminai_sandbox.artifacts.contract import supported_version; supported_version(); "
        "print(sorted(m for m in ('typing', 'dataclasses', 'click', 'docker', 'requests', 'cryptography') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
