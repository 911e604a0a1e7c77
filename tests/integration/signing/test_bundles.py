from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from terminai_sandbox.assemble import BuildResult
from terminai_sandbox.cli import main
from terminai_sandbox.common.reference import ImageRef
from terminai_sandbox.errors import VerificationError
from terminai_sandbox.registry import RegistryClient
from terminai_sandbox.signing import sign
from terminai_sandbox.signing.formats import bundle as bundle_format
from terminai_sandbox.signing.formats import keys
from terminai_sandbox.signing.store import RegistryStore
from terminai_sandbox.signing.verify.attestations import verify_attestation
from terminai_sandbox.signing.verify.image import verify_image
from terminai_sandbox.signing.verify.trust import KeylessIdentity, VerificationPolicy

from tests.fixtures.registry import RegistryServer

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures/sigstore/cosign-oci-attestation.sigstore.json"


def test_key_bundle_referrers(registry: RegistryServer, built_image: BuildResult, tmp_path: Path) -> None:
    client = RegistryClient(registry.host)
    repo = "bundles/keyed"
    digest = client.push_layout(built_image.oci_layout, repo).digest
    ref = ImageRef.parse(f"{registry.host}/{repo}@{digest}")
    signer, stranger = keys.generate(), keys.generate()
    (tmp_path / "signer.pub").write_bytes(keys.public_pem(signer))
    (tmp_path / "stranger.pub").write_bytes(keys.public_pem(stranger))
    first = sign.attach_bundle(client, repo, digest, bundle_format.key_bundle(ref.name, digest, signer))
    assert sign.attach_bundle(client, repo, digest, bundle_format.key_bundle(ref.name, digest, stranger)) != first
    result = verify_image(ref, VerificationPolicy.single_key(tmp_path / "signer.pub"), client=client)
    assert result.signatures[0].key_id == keys.key_id(signer.public_key())
    # a bundle for another digest attached here, and a key nobody trusts, are refused
    other = bundle_format.key_bundle(ref.name, "sha256:" + "d" * 64, signer)
    repo2 = "bundles/other"
    digest2 = client.push_layout(built_image.oci_layout, repo2).digest
    sign.attach_bundle(client, repo2, digest2, other)
    with pytest.raises(VerificationError, match="another image"):
        verify_image(
            ImageRef.parse(f"{registry.host}/{repo2}@{digest2}"),
            VerificationPolicy.single_key(tmp_path / "signer.pub"),
            client=client,
        )
    outsider = keys.generate()
    (tmp_path / "outsider.pub").write_bytes(keys.public_pem(outsider))
    with pytest.raises(VerificationError, match="does not verify"):
        verify_image(ref, VerificationPolicy.single_key(tmp_path / "outsider.pub"), client=client)


def test_keyless_bundle_for_another_image_is_refused(registry: RegistryServer, built_image: BuildResult) -> None:
    client = RegistryClient(registry.host)
    repo = "bundles/keyless"
    digest = client.push_layout(built_image.oci_layout, repo).digest
    sign.attach_bundle(client, repo, digest, FIXTURE.read_text())  # genuine production bundle, other subject
    ref = ImageRef.parse(f"{registry.host}/{repo}@{digest}")
    policy = VerificationPolicy.single_identity("cody@soyland.com", "https://github.com/login/oauth")
    # An attestation bundle is no signature ...
    with pytest.raises(VerificationError, match="step 2: no keyless signature found"):
        verify_image(ref, policy, client=client)
    # ... and as the attestation it is, it is for another image.
    with pytest.raises(VerificationError, match="another image digest"):
        verify_attestation(
            digest, policy, RegistryStore(client, repo), "https://cosign.sigstore.dev/attestation/v1", None
        )
    wrong = VerificationPolicy(
        identities=(KeylessIdentity(identity="x@y.example", issuer="https://github.com/login/oauth"),)
    )
    with pytest.raises(VerificationError, match="keyless bundle rejected"):
        verify_attestation(
            digest, wrong, RegistryStore(client, repo), "https://cosign.sigstore.dev/attestation/v1", None
        )


def test_cli_sign_bundle_format_and_keyless_without_identity(
    registry: RegistryServer, built_image: BuildResult, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = RegistryClient(registry.host)
    digest = client.push_layout(built_image.oci_layout, "bundles/cli", tag="1").digest
    monkeypatch.setenv("COSIGN_PASSWORD", "pw")
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    assert runner.invoke(main, ["keygen"]).exit_code == 0
    out = runner.invoke(main, ["sign", f"{registry.host}/bundles/cli:1", "--key", "cosign.key", "--bundle-format"])
    assert out.exit_code == 0, out.output
    assert "referrer" in out.output
    ok = runner.invoke(main, ["verify", f"{registry.host}/bundles/cli@{digest}", "--key", "cosign.pub"])
    assert ok.exit_code == 0 and ok.output.count("verified") == 2, ok.output
    for name in (
        "GITHUB_ACTIONS",
        "ACTIONS_ID_TOKEN_REQUEST_URL",
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
        "SIGSTORE_ID_TOKEN",
    ):
        monkeypatch.delenv(name, raising=False)
    refused = runner.invoke(main, ["sign", f"{registry.host}/bundles/cli:1", "--keyless"])
    assert refused.exit_code == 10 and "OIDC" in refused.output
