from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from terminai_sandbox.assemble import BuildResult
from terminai_sandbox.cli import main
from terminai_sandbox.common.reference import ImageRef
from terminai_sandbox.errors import RegistryCorrupted, RegistryNotFound, VerificationError
from terminai_sandbox.oci_media import OCI_CONFIG
from terminai_sandbox.registry import OCI_MANIFEST, RegistryClient, sha256_digest
from terminai_sandbox.signing import sign
from terminai_sandbox.signing.formats import keys
from terminai_sandbox.signing.formats import sig as sig_format
from terminai_sandbox.signing.formats.payload import simple_signing
from terminai_sandbox.signing.store import RegistryStore
from terminai_sandbox.signing.verify.image import verify_image
from terminai_sandbox.signing.verify.trust import VerificationPolicy

from tests.fixtures.registry import RegistryServer

REPO = "terminai/sandbox"


@pytest.fixture()
def pushed(registry: RegistryServer, built_image: BuildResult) -> tuple[RegistryClient, ImageRef]:
    client = RegistryClient(registry.host)
    result = client.push_layout(built_image.oci_layout, REPO, tag="0.1.0")
    assert result.digest == built_image.manifest_digest  # exactly the assembled manifest
    ref = ImageRef.parse(f"{registry.host}/{REPO}:0.1.0")
    return client, ref.with_digest(client.resolve(REPO, "0.1.0"))


def test_push_is_by_digest_and_incremental(registry: RegistryServer, built_image: BuildResult) -> None:
    client = RegistryClient(registry.host)
    first = client.push_layout(built_image.oci_layout, REPO, tag="0.1.0")
    again = client.push_layout(built_image.oci_layout, REPO, tag="0.1.0")
    assert first.blobs_sent == 4 and again.blobs_sent == 0 and again.blobs_skipped == 4
    assert client.resolve(REPO, "0.1.0") == built_image.manifest_digest
    chunked = client.push_layout(built_image.oci_layout, "other/repo", chunk_size=4 << 20)
    assert chunked.digest == built_image.manifest_digest
    # absent content is its own error type: the signature store reads it as "no .sig tag"
    with pytest.raises(RegistryNotFound):
        client.get_manifest(REPO, "sha256-" + "0" * 64 + ".sig")
    with pytest.raises(RegistryNotFound):
        client.get_blob(REPO, "sha256:" + "0" * 64)
    assert RegistryStore(client, REPO).signatures(built_image.manifest_digest) == []


def test_sign_then_verify_and_accumulate(pushed: tuple[RegistryClient, ImageRef], tmp_path: Path) -> None:
    client, ref = pushed
    one, two = keys.generate(), keys.generate()
    assert sign.sign(client, REPO, ref.digest or "", one, docker_reference=ref.name)[2]
    assert not sign.sign(client, REPO, ref.digest or "", one, docker_reference=ref.name)[2]  # no duplicate
    assert sign.sign(client, REPO, ref.digest or "", two, docker_reference=ref.name)[2]  # accumulates
    assert len(RegistryStore(client, REPO).signatures(ref.digest or "")) == 2
    (tmp_path / "two.pub").write_bytes(keys.public_pem(two))
    result = verify_image(ref, VerificationPolicy.single_key(tmp_path / "two.pub"), client=client)
    assert result.digest == ref.digest and result.signatures[0].key_id == keys.key_id(two.public_key())


def test_refusals(pushed: tuple[RegistryClient, ImageRef], tmp_path: Path, registry: RegistryServer) -> None:
    client, ref = pushed
    signer, stranger = keys.generate(), keys.generate()
    (tmp_path / "signer.pub").write_bytes(keys.public_pem(signer))
    (tmp_path / "stranger.pub").write_bytes(keys.public_pem(stranger))
    trusted = VerificationPolicy.single_key(tmp_path / "signer.pub")
    with pytest.raises(VerificationError, match="step 2: no signature found"):
        verify_image(ref, trusted, client=client)
    with pytest.raises(VerificationError, match="nothing can pass"):
        verify_image(ref, VerificationPolicy(), client=client)
    sign.sign(client, REPO, ref.digest or "", signer, docker_reference=ref.name)
    with pytest.raises(VerificationError, match="does not verify with any trusted key"):
        verify_image(ref, VerificationPolicy.single_key(tmp_path / "stranger.pub"), client=client)
    with pytest.raises(VerificationError, match="not pinned"):
        verify_image(ImageRef.parse(f"{registry.host}/{REPO}:0.1.0"), trusted, client=client)


def _replace_signature_layer(client: RegistryClient, digest: str, data: bytes, signature: bytes) -> None:
    layer = {
        "mediaType": "application/vnd.dev.cosign.simplesigning.v1+json",
        "size": len(data),
        "digest": sha256_digest(data),
        "annotations": {sig_format.SIGNATURE_ANNOTATION: base64.b64encode(signature).decode()},
    }
    config = sig_format.go_config([layer["digest"]])
    client.push_blob(REPO, layer["digest"], data)
    client.push_blob(REPO, sha256_digest(config), config)
    manifest = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": OCI_CONFIG, "size": len(config), "digest": sha256_digest(config)},
        "layers": [layer],
    }
    client.put_manifest(REPO, sig_format.signature_tag(digest), json.dumps(manifest).encode(), OCI_MANIFEST)


def test_payload_for_another_digest_and_tampered_payload(
    pushed: tuple[RegistryClient, ImageRef], tmp_path: Path
) -> None:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec

    client, ref = pushed
    signer = keys.generate()
    (tmp_path / "k.pub").write_bytes(keys.public_pem(signer))
    policy = VerificationPolicy.single_key(tmp_path / "k.pub")
    other = simple_signing(ref.name, "sha256:" + "a" * 64)
    _replace_signature_layer(client, ref.digest or "", other, signer.sign(other, ec.ECDSA(hashes.SHA256())))
    with pytest.raises(VerificationError, match="another image digest"):
        verify_image(ref, policy, client=client)
    genuine = simple_signing(ref.name, ref.digest or "")
    signature = signer.sign(genuine, ec.ECDSA(hashes.SHA256()))
    tampered = genuine.replace(b"cosign container image signature", b"cosign container image signaturf")
    _replace_signature_layer(client, ref.digest or "", tampered, signature)
    with pytest.raises(VerificationError, match="does not verify"):
        verify_image(ref, policy, client=client)


def test_tag_moved_after_signing_is_unsigned(
    pushed: tuple[RegistryClient, ImageRef], tmp_path: Path, built_image: BuildResult
) -> None:
    client, ref = pushed
    signer = keys.generate()
    (tmp_path / "k.pub").write_bytes(keys.public_pem(signer))
    sign.sign(client, REPO, ref.digest or "", signer, docker_reference=ref.name)
    # Move the tag to a different manifest (same layers, another annotation) after signing.
    manifest = json.loads(built_image.oci_layout.read_blob(ref.digest or ""))
    manifest["annotations"]["org.opencontainers.image.ref.name"] = "moved"
    body = json.dumps(manifest).encode()
    client.put_manifest(REPO, "0.1.0", body, OCI_MANIFEST)
    moved = ref.with_digest(client.resolve(REPO, "0.1.0"))
    assert moved.digest != ref.digest
    with pytest.raises(VerificationError, match="no signature found"):
        verify_image(moved, VerificationPolicy.single_key(tmp_path / "k.pub"), client=client)


def test_corrupted_signature_blob_in_storage(
    pushed: tuple[RegistryClient, ImageRef], tmp_path: Path, registry: RegistryServer
) -> None:
    client, ref = pushed
    signer = keys.generate()
    (tmp_path / "k.pub").write_bytes(keys.public_pem(signer))
    data, _, _ = sign.sign(client, REPO, ref.digest or "", signer, docker_reference=ref.name)
    hexd = sha256_digest(data).removeprefix("sha256:")
    blob = registry.storage / "docker" / "registry" / "v2" / "blobs" / "sha256" / hexd[:2] / hexd / "data"
    blob.write_bytes(data.replace(b"critical", b"CRITICAL"))
    with pytest.raises(RegistryCorrupted, match="corrupted"):
        client.get_blob(REPO, sha256_digest(data))
    with pytest.raises(VerificationError, match=r"step 3: a signature blob .* is corrupted"):
        verify_image(ref, VerificationPolicy.single_key(tmp_path / "k.pub"), client=client)


def test_cli_keygen_sign_verify_and_openssl_interop(
    pushed: tuple[RegistryClient, ImageRef], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client, ref = pushed
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COSIGN_PASSWORD", "correct horse")
    runner = CliRunner()
    assert runner.invoke(main, ["keygen"]).exit_code == 0
    assert b"ENCRYPTED SIGSTORE PRIVATE KEY" in (tmp_path / "cosign.key").read_bytes()
    assert oct((tmp_path / "cosign.key").stat().st_mode & 0o777) == "0o600"
    signed = runner.invoke(main, ["sign", f"{ref.name}:0.1.0", "--key", "cosign.key"])
    assert signed.exit_code == 0, signed.output
    ok = runner.invoke(main, ["verify", f"{ref.name}:0.1.0", "--key", "cosign.pub", "--json"])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.output)["digest"] == ref.digest
    monkeypatch.setenv("COSIGN_PASSWORD", "wrong")
    bad = runner.invoke(main, ["sign", f"{ref.name}:0.1.0", "--key", "cosign.key"])
    assert bad.exit_code == 10 and "wrong password" in bad.output
    (stored,) = RegistryStore(client, REPO).signatures(ref.digest or "")
    (tmp_path / "payload.json").write_bytes(stored.payload)
    (tmp_path / "sig.der").write_bytes(stored.signature)
    proc = subprocess.run(
        ["openssl", "dgst", "-sha256", "-verify", "cosign.pub", "-signature", "sig.der", "payload.json"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert proc.returncode == 0 and "Verified OK" in proc.stdout
    other = keys.generate()
    (tmp_path / "other.pub").write_bytes(keys.public_pem(other))
    refused = runner.invoke(main, ["verify", f"{ref.name}:0.1.0", "--key", "other.pub"])
    assert refused.exit_code == 11
