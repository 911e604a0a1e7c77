"""Provenance attested and verified against a real loopback registry, through the CLI an
auditor uses; a tampered or malformed provenance is refused."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from in_toto_attestation.v1.resource_descriptor import ResourceDescriptor
from in_toto_attestation.v1.statement import Statement
from terminai_sandbox import provenance
from terminai_sandbox.assemble import BuildResult
from terminai_sandbox.cli import main
from terminai_sandbox.registry import RegistryClient
from terminai_sandbox.secret import Secret
from terminai_sandbox.signing import keyless, sign
from terminai_sandbox.signing.formats import dsse, keys
from terminai_sandbox.signing.formats import sig as sig_format
from terminai_sandbox.signing.store import RegistryStore

from tests.fixtures.registry import RegistryServer
from tests.unit.signing.sigstore_testing import IDENTITY, ISSUER, TestSigstore

ROOT = Path(__file__).resolve().parents[3]
SLSA = provenance.PREDICATE_TYPE


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


@pytest.fixture
def signer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    monkeypatch.setenv("COSIGN_PASSWORD", "test-password")
    key = keys.generate()
    (tmp_path / "cosign.key").write_bytes(keys.encrypt_private(key, Secret(b"test-password")))
    (tmp_path / "cosign.pub").write_bytes(keys.public_pem(key))
    return tmp_path / "cosign.key", tmp_path / "cosign.pub"


def _push_and_sign(client: RegistryClient, built: BuildResult, host: str, repo: str, key: Path) -> str:
    digest = client.push_layout(built.oci_layout, repo).digest
    code, out = _run("sign", f"{host}/{repo}@{digest}", "--key", str(key))
    assert code == 0, out
    return digest


def test_provenance_is_attested_verified_and_tampering_refused(
    registry: RegistryServer, built_image: BuildResult, signer: tuple[Path, Path], tmp_path: Path
) -> None:
    key, pub = signer
    client = RegistryClient(registry.host)
    repo = "terminai/provenance"
    digest = _push_and_sign(client, built_image, registry.host, repo, key)
    reference = f"{registry.host}/{repo}@{digest}"
    predicate_file = tmp_path / "provenance.slsa.json"
    code, out = _run(
        "provenance",
        str(built_image.oci_layout.root),
        "-o",
        str(predicate_file),
        "--repository",
        f"{registry.host}/{repo}",
        "--image-dir",
        str(ROOT / "images" / "sandbox"),
    )
    assert code == 0, out
    # a provenance document is not attested under the SBOM's type
    code, out = _run("attest", reference, "--predicate", str(predicate_file), "--type", "cyclonedx", "--key", str(key))
    assert code == 3 and "is a slsaprovenance1 document, not cyclonedx" in out, out
    # the SBOM alone does not satisfy a provenance requirement
    sbom_file = tmp_path / "sbom.cdx.json"
    sbom_file.write_text(json.dumps({"bomFormat": "CycloneDX", "specVersion": "1.6", "components": []}))
    code, out = _run("attest", reference, "--predicate", str(sbom_file), "--type", "cyclonedx", "--key", str(key))
    assert code == 0, out
    code, out = _run("verify", reference, "--key", str(pub), "--attestation", "slsaprovenance1")
    assert code == 11 and "step 6" in out, out

    code, out = _run(
        "attest", reference, "--predicate", str(predicate_file), "--type", "slsaprovenance1", "--key", str(key)
    )
    assert code == 0, out
    code, out = _run("verify", reference, "--key", str(pub), "--attestation", "slsaprovenance1", "--json")
    assert code == 0, out
    claims = [c for c in json.loads(out)["claims"] if c["predicateType"] == SLSA]
    assert claims and claims[0]["predicate"] == json.loads(predicate_file.read_text())
    # the stored statement is the shape in-toto's bindings accept (as a v1 statement)
    envelope = next(
        e
        for e in RegistryStore(client, repo).attestations(digest)
        if b"slsa.dev" in base64.b64decode(json.loads(e)["payload"])
    )
    statement = json.loads(base64.b64decode(json.loads(envelope)["payload"]))
    subjects = [ResourceDescriptor(name=s["name"], digest=s["digest"]).pb for s in statement["subject"]]
    Statement(subjects, statement["predicateType"], statement["predicate"]).validate()
    assert statement["subject"][0]["digest"]["sha256"] == digest.removeprefix("sha256:")
    code, out = _run(
        "verify", reference, "--key", str(pub), "--attestation", "cyclonedx", "--attestation", "slsaprovenance1"
    )
    assert code == 0 and "built by urn:terminai-sandbox:builder:local" in out, out

    # Tampered: the statement claims another builder, the signature is the genuine one.
    tampered_repo = "terminai/provenance-tampered"
    tampered_digest = _push_and_sign(client, built_image, registry.host, tampered_repo, key)
    genuine = json.loads(envelope)
    statement["predicate"]["runDetails"]["builder"]["id"] = "https://attacker.example/builder"
    statement["subject"][0]["digest"]["sha256"] = tampered_digest.removeprefix("sha256:")
    genuine["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    RegistryStore(client, tampered_repo).append_layer(
        dsse.attestation_tag(tampered_digest),
        blob=json.dumps(genuine).encode(),
        media_type=dsse.DSSE_MEDIA_TYPE,
        annotations={sig_format.SIGNATURE_ANNOTATION: "", "predicateType": SLSA},
        is_duplicate=lambda *_: False,
    )
    code, out = _run(
        "verify",
        f"{registry.host}/{tampered_repo}@{tampered_digest}",
        "--key",
        str(pub),
        "--attestation",
        "slsaprovenance1",
    )
    assert code == 11 and "does not verify" in out, out

    # Signed by the right key but not SLSA v1 provenance (no builder): refused at step 6p.
    malformed = json.loads(predicate_file.read_text())
    del malformed["runDetails"]["builder"]
    bad_file = tmp_path / "malformed.json"
    bad_file.write_text(json.dumps(malformed))
    bad_repo = "terminai/provenance-malformed"
    bad_digest = _push_and_sign(client, built_image, registry.host, bad_repo, key)
    bad_reference = f"{registry.host}/{bad_repo}@{bad_digest}"
    code, out = _run(
        "attest", bad_reference, "--predicate", str(bad_file), "--type", "slsaprovenance1", "--key", str(key)
    )
    assert code == 0, out
    code, out = _run("verify", bad_reference, "--key", str(pub), "--attestation", "slsaprovenance1")
    assert code == 11 and "step 6p" in out and "builder.id" in out, out


def test_keyless_provenance_referrer_verifies_by_identity_and_a_tampered_one_is_refused(
    registry: RegistryServer, built_image: BuildResult, tmp_path: Path
) -> None:
    instance = TestSigstore()
    root = instance.write_trusted_root(tmp_path / "trusted_root.json")
    client = RegistryClient(registry.host)
    assert built_image.plan is not None  # the session's build, from this checkout
    predicate = provenance.generate(
        provenance.ProvenanceOptions(
            layout=built_image.oci_layout,
            plan=built_image.plan,
            repository=f"{registry.host}/terminai/keyless",
            version="9.9.9",
            builder_id="https://github.com/o/r/.github/workflows/release.yml@refs/tags/v9.9.9",
        )
    )

    def publish(repo: str, body: dict[str, object], tamper: bool = False) -> str:
        digest = client.push_layout(built_image.oci_layout, repo).digest
        name = f"{registry.host}/{repo}"
        signer = instance.signer()
        sign.attach_bundle(client, repo, digest, keyless.sign_statement(signer, name, digest))
        bundle = keyless.sign_statement(signer, name, digest, predicate_type=SLSA, predicate=body)
        if tamper:  # another builder in the signed statement, the signature left as it was
            data = json.loads(bundle)
            statement = json.loads(base64.b64decode(data["dsseEnvelope"]["payload"]))
            statement["predicate"]["runDetails"]["builder"]["id"] = "https://attacker.example/builder"
            data["dsseEnvelope"]["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
            bundle = json.dumps(data)
        sign.attach_bundle(client, repo, digest, bundle)
        return f"{name}@{digest}"

    def verify(reference: str, identity: str = IDENTITY) -> tuple[int, str]:
        return _run(
            "verify",
            reference,
            "--certificate-identity",
            identity,
            "--certificate-oidc-issuer",
            ISSUER,
            "--trusted-root",
            str(root),
            "--attestation",
            "slsaprovenance1",
        )

    genuine = publish("terminai/keyless", predicate)
    code, out = verify(genuine)
    assert code == 0 and "verified attestation https://slsa.dev/provenance/v1" in out, out
    code, out = verify(genuine, identity="someone-else@example.test")
    assert code == 11, out
    code, out = verify(publish("terminai/keyless-tampered", predicate, tamper=True))
    assert code == 11 and "step 6" in out, out
