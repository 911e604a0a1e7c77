"""SLSA v1 provenance: built from declared inputs, deterministic, the shape in-toto's own
bindings accept, refused when malformed, and verified keyless like the SBOM attestation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from in_toto_attestation.predicates.provenance.v1 import provenance_pb2
from in_toto_attestation.v1.resource_descriptor import ResourceDescriptor
from in_toto_attestation.v1.statement import Statement
from terminai_sandbox import provenance
from terminai_sandbox.artifacts.oci_layout import OciLayout
from terminai_sandbox.common.reference import ImageRef
from terminai_sandbox.errors import SbomError, VerificationError
from terminai_sandbox.signing import keyless
from terminai_sandbox.signing.verify.image import verify_image
from terminai_sandbox.signing.verify.trust import KeylessIdentity, VerificationPolicy

from tests.fixtures.oci import write_layout
from tests.fixtures.plan import COMMIT, SOURCE, sample_plan
from tests.unit.signing.sigstore_testing import IDENTITY, ISSUER, TestSigstore


def _layout(root: Path, labels: dict[str, str]) -> tuple[OciLayout, str]:
    config = json.dumps({"created": "2026-11-20T02:11:10Z", "config": {"Labels": labels}}).encode()
    digest = write_layout(root, config=config, layers=[])
    return OciLayout.open(root), digest


def _planned_labels() -> dict[str, str]:
    """The labels a build of the sample plan writes into the image config."""
    return dict(sample_plan().labels)


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[provenance.ProvenanceOptions, str]:
    layout, digest = _layout(tmp_path / "oci", _planned_labels())
    sbom = tmp_path / "sbom.cdx.json"
    sbom.write_text("{}\n")
    options = provenance.ProvenanceOptions(
        layout=layout,
        plan=sample_plan(),
        repository="r.example/terminai/sandbox",
        version="1.2.3",
        builder_id="https://github.com/terminai/sovereign-sandbox/.github/workflows/release.yml@refs/tags/v1.2.3",
        sbom=sbom,
    )
    return options, digest


def test_predicate_records_the_declared_inputs_deterministically(
    inputs: tuple[provenance.ProvenanceOptions, str],
) -> None:
    options, _ = inputs
    first = provenance.dumps(provenance.generate(options))
    assert first == provenance.dumps(provenance.generate(options))  # generate twice, compare bytes
    predicate = json.loads(first)
    definition = predicate["buildDefinition"]
    assert definition["buildType"] == provenance.BUILD_TYPE
    assert definition["externalParameters"]["source"] == f"git+{SOURCE}@{COMMIT}"
    assert definition["externalParameters"]["imageSpec"] == "images/sandbox/image.toml"
    # What the plan declared, and nothing else: the stage keys tie the record to layers.lock.
    assert definition["internalParameters"] == options.plan.parameters()
    assert definition["internalParameters"]["sourceDateEpoch"] == 1795140670
    assert definition["internalParameters"]["stageKeys"]["wheels"] == options.plan.stage("wheels").key
    deps = definition["resolvedDependencies"]
    assert deps == [d.descriptor() for d in options.plan.dependencies()]
    assert deps[0] == {"uri": f"git+{SOURCE}@{COMMIT}", "digest": {"gitCommit": COMMIT}}
    assert {"name": "images/sandbox/debian.lock", "digest": {"sha256": "1" * 64}} in deps
    assert {"uri": "pkg:deb/debian/libc6@2.36-9?arch=amd64", "digest": {"sha256": "a" * 64}} in deps
    assert {"uri": "pkg:pypi/restrictedpython@9.0", "digest": {"sha256": "b" * 64}} in deps
    assert predicate["runDetails"]["builder"]["id"] == options.builder_id
    assert predicate["runDetails"]["byproducts"][0]["name"] == "sbom.cdx.json"


def test_in_toto_bindings_accept_the_statement_and_predicate(inputs: tuple[provenance.ProvenanceOptions, str]) -> None:
    options, digest = inputs
    predicate = provenance.generate(options)
    # ParseDict refuses any field the SLSA v1 schema does not define (no ignore_unknown_fields).
    parsed = json_format.ParseDict(predicate, provenance_pb2.Provenance())  # type: ignore[attr-defined]
    assert parsed.build_definition.build_type == provenance.BUILD_TYPE
    assert parsed.build_definition.external_parameters and parsed.run_details.builder.id
    for descriptor in [*parsed.build_definition.resolved_dependencies, *parsed.run_details.byproducts]:
        ResourceDescriptor.copy_from_pb(descriptor).validate()
    subject = ResourceDescriptor(name="r.example/terminai/sandbox", digest={"sha256": digest.removeprefix("sha256:")})
    Statement([subject.pb], provenance.PREDICATE_TYPE, predicate).validate()


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda p: p["runDetails"]["builder"].pop("id"), "builder.id"),
        (lambda p: p["buildDefinition"].pop("buildType"), "buildType"),
        (lambda p: p["buildDefinition"].update(externalParameters={}), "externalParameters"),
        (lambda p: p["buildDefinition"]["resolvedDependencies"].append({}), "neither uri"),
        (lambda p: p["buildDefinition"]["resolvedDependencies"][0].update(digest={"sha256": 1}), "malformed digest"),
        (lambda p: p.pop("runDetails"), "runDetails"),
    ],
)
def test_malformed_provenance_is_refused(
    inputs: tuple[provenance.ProvenanceOptions, str], mutate: Any, message: str
) -> None:
    predicate = provenance.generate(inputs[0])
    provenance.check_predicate(predicate)
    mutate(predicate)
    with pytest.raises(VerificationError, match=message):
        provenance.check_predicate(predicate)


def test_an_image_without_its_source_commit_is_refused(tmp_path: Path) -> None:
    layout, _ = _layout(tmp_path / "oci", {"org.opencontainers.image.source": SOURCE})
    options = provenance.ProvenanceOptions(layout=layout, plan=sample_plan(), repository="r/x", version="1")
    with pytest.raises(SbomError, match="source commit"):
        provenance.generate(options)


@pytest.mark.parametrize(
    ("label", "value"),
    [
        ("org.opencontainers.image.revision", "0" * 40),
        ("dev.terminai.assembler-format", "1"),
        ("dev.terminai.contract.version", "0.9.0"),
    ],
)
def test_a_plan_of_another_checkout_than_the_image_is_refused(tmp_path: Path, label: str, value: str) -> None:
    layout, _ = _layout(tmp_path / "oci", {**_planned_labels(), label: value})
    options = provenance.ProvenanceOptions(layout=layout, plan=sample_plan(), repository="r/x", version="1")
    with pytest.raises(SbomError, match=f"the image's {label} is '{value}', but the build plan gives"):
        provenance.generate(options)


def test_keyless_provenance_attestation_verifies_and_a_stranger_is_refused(
    inputs: tuple[provenance.ProvenanceOptions, str], tmp_path: Path
) -> None:
    options, digest = inputs
    instance = TestSigstore()
    signer = instance.signer()
    repository = "r.example/terminai/sandbox"
    bundles = [
        keyless.sign_statement(signer, repository, digest),
        keyless.sign_statement(
            signer,
            repository,
            digest,
            predicate_type=provenance.PREDICATE_TYPE,
            predicate=provenance.generate(options),
        ),
    ]
    release = options.layout.root.parent
    (release / "signatures.json").write_text(json.dumps({"digest": digest, "bundles": bundles}))
    # the offline source reads the layout at release/oci
    assert options.layout.root == release / "oci"
    root = instance.write_trusted_root(tmp_path / "trusted_root.json")
    ref = ImageRef.parse(f"{repository}@{digest}")
    policy = VerificationPolicy(identities=(KeylessIdentity(identity=IDENTITY, issuer=ISSUER),))
    result = verify_image(
        ref, policy, client=None, offline_dir=release, attestations=("slsaprovenance1",), trusted_root=root
    )
    assert result.claims[0]["predicateType"] == provenance.PREDICATE_TYPE
    assert result.claims[0]["predicate"]["runDetails"]["builder"]["id"] == options.builder_id
    stranger = VerificationPolicy(identities=(KeylessIdentity(identity="other@example.test", issuer=ISSUER),))
    with pytest.raises(VerificationError):
        verify_image(
            ref, stranger, client=None, offline_dir=release, attestations=("slsaprovenance1",), trusted_root=root
        )
