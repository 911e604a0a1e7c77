"""Keyless signatures in cosign's legacy ``.sig`` layout, through a real registry.

The signer is the test Sigstore instance's (see ``tests/unit/signing/sigstore_testing``):
its CA, CT log and Rekor-like log are trusted through a trusted-root file written for
each test, exactly as a private Sigstore deployment would be.
"""

from __future__ import annotations

import base64
import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from terminai_sandbox.assemble import BuildResult
from terminai_sandbox.cli import main
from terminai_sandbox.common.reference import ImageRef
from terminai_sandbox.errors import VerificationError
from terminai_sandbox.registry import OCI_MANIFEST, RegistryClient, sha256_digest
from terminai_sandbox.signing import keyless, sign
from terminai_sandbox.signing.formats import keys
from terminai_sandbox.signing.formats import rekor as rekor_format
from terminai_sandbox.signing.formats import sig as sig_format
from terminai_sandbox.signing.store import RegistryStore, export_offline
from terminai_sandbox.signing.verify.image import verify_image
from terminai_sandbox.signing.verify.trust import KeylessIdentity, VerificationPolicy

from tests.fixtures.registry import RegistryServer
from tests.integration.signing.tiny_image import push_tiny
from tests.unit.signing.sigstore_testing import IDENTITY, ISSUER, TestSigstore

REPO = "keyless/legacy"
POLICY = VerificationPolicy(identities=(KeylessIdentity(identity=IDENTITY, issuer=ISSUER),))


@pytest.fixture()
def instance() -> TestSigstore:
    return TestSigstore()


@pytest.fixture()
def pushed(registry: RegistryServer, built_image: BuildResult) -> tuple[RegistryClient, ImageRef]:
    client = RegistryClient(registry.host)
    digest = client.push_layout(built_image.oci_layout, REPO, tag="1.0.0").digest
    return client, ImageRef.parse(f"{registry.host}/{REPO}@{digest}")


def _sign(client: RegistryClient, ref: ImageRef, instance: TestSigstore) -> dict[str, str]:
    _, notes, added = sign.sign_legacy_keyless(
        client, REPO, ref.digest or "", instance.signer(), instance.trust(), docker_reference=ref.name
    )
    assert added
    return notes


def _rewrite_layer(
    client: RegistryClient, digest: str, *, blob: bytes | None = None, **annotations: str | None
) -> None:
    """Replace the only layer of the .sig manifest: another payload blob and/or annotations."""
    tag = sig_format.signature_tag(digest)
    manifest: dict[str, Any] = json.loads(client.get_manifest(REPO, tag)[0])
    (layer,) = manifest["layers"]
    if blob is not None:
        client.push_blob(REPO, sha256_digest(blob), blob)
        layer.update(digest=sha256_digest(blob), size=len(blob))
    for name, value in annotations.items():
        key = {"certificate": rekor_format.CERTIFICATE_ANNOTATION, "chain": rekor_format.CHAIN_ANNOTATION}.get(
            name, rekor_format.BUNDLE_ANNOTATION
        )
        if value is None:
            del layer["annotations"][key]
        else:
            layer["annotations"][key] = value
    client.put_manifest(REPO, tag, json.dumps(manifest).encode(), OCI_MANIFEST)


def test_sign_push_and_verify_by_digest(
    pushed: tuple[RegistryClient, ImageRef], instance: TestSigstore, tmp_path: Path
) -> None:
    client, ref = pushed
    root = instance.write_trusted_root(tmp_path / "trusted_root.json")
    with pytest.raises(VerificationError, match="step 2: no keyless signature found"):
        verify_image(ref, POLICY, client=client, trusted_root=root)
    key = keys.generate()
    sign.sign(client, REPO, ref.digest or "", key, docker_reference=ref.name)
    notes = _sign(client, ref, instance)
    manifest = json.loads(client.get_manifest(REPO, sig_format.signature_tag(ref.digest or ""))[0])
    assert [layer["annotations"] for layer in manifest["layers"]][1] == notes  # accumulated after the keyed one
    result = verify_image(ref, POLICY, client=client, trusted_root=root)
    (signed,) = result.signatures
    assert (signed.key_source, signed.certificate_identity, signed.certificate_issuer) == (
        "sigstore (.sig)",
        IDENTITY,
        ISSUER,
    )
    assert signed.rekor_log_index == 7 and signed.rekor_integrated_time == int(instance.now.timestamp())
    assert signed.docker_reference == ref.name
    (tmp_path / "k.pub").write_bytes(keys.public_pem(key))
    assert verify_image(ref, VerificationPolicy.single_key(tmp_path / "k.pub"), client=client).signatures
    # a policy trusting a key and an identity passes on the key when the identity does not match
    other_issuer = VerificationPolicy(identities=(KeylessIdentity(identity=IDENTITY, issuer="https://x.example.test"),))
    mixed = other_issuer.compose(VerificationPolicy.single_key(tmp_path / "k.pub"))
    assert verify_image(ref, mixed, client=client, trusted_root=root).signatures[0].key_source.endswith("k.pub")
    (tmp_path / "stranger.pub").write_bytes(keys.public_pem(keys.generate()))
    refused = other_issuer.compose(VerificationPolicy.single_key(tmp_path / "stranger.pub"))
    with pytest.raises(VerificationError, match=r"does not verify with any trusted key.*; and .*issuer mismatch"):
        verify_image(ref, refused, client=client, trusted_root=root)
    # the same signature under the default (public-good) root: the test log is unknown there
    with pytest.raises(VerificationError, match=r"step 3k\.3: bad SET: log .* public-good"):
        verify_image(ref, POLICY, client=client)


def test_signature_for_another_image_is_refused(
    registry: RegistryServer, built_image: BuildResult, instance: TestSigstore, tmp_path: Path
) -> None:
    client = RegistryClient(registry.host)
    digest = client.push_layout(built_image.oci_layout, REPO).digest
    ref = ImageRef.parse(f"{registry.host}/{REPO}@{digest}")
    _sign(client, ref, instance)
    # Replayed onto another image that exists (a digest nobody pushed is refused at step 1).
    other = push_tiny(client, REPO, tmp_path)
    data = json.loads(client.get_manifest(REPO, sig_format.signature_tag(digest))[0])
    client.put_manifest(REPO, sig_format.signature_tag(other), json.dumps(data).encode(), OCI_MANIFEST)
    root = instance.write_trusted_root(tmp_path / "root.json")
    with pytest.raises(VerificationError, match=r"step 4: signature is for another image digest"):
        verify_image(ImageRef.parse(f"{registry.host}/{REPO}@{other}"), POLICY, client=client, trusted_root=root)


@pytest.mark.parametrize(
    ("tamper", "message"),
    [
        ("payload", r"step 3k\.2: bad signature"),
        ("certificate", r"step 3k\.2: bad signature"),
        ("set", r"step 3k\.3: bad SET"),
        ("chain", r"step 3k\.1: missing annotation dev\.sigstore\.cosign/chain"),
        ("bundle-json", r"step 3k\.1: malformed dev\.sigstore\.cosign/bundle annotation"),
    ],
)
def test_tampered_signature_in_the_registry_is_refused(
    pushed: tuple[RegistryClient, ImageRef], instance: TestSigstore, tmp_path: Path, tamper: str, message: str
) -> None:
    client, ref = pushed
    digest = ref.digest or ""
    notes = _sign(client, ref, instance)
    if tamper == "payload":
        data = RegistryStore(client, REPO).signatures(digest)[0].payload
        _rewrite_layer(client, digest, blob=data.replace(b'"optional":null', b'"optional":{"x":"y"}'))
    elif tamper == "certificate":
        other = instance.signer().certificate  # trusted CA, same identity, another key
        _rewrite_layer(client, digest, certificate=rekor_format.pem([other]))
    elif tamper == "set":
        bundle = json.loads(notes[rekor_format.BUNDLE_ANNOTATION])
        raw = bytearray(base64.b64decode(bundle["SignedEntryTimestamp"]))
        raw[10] ^= 0xFF
        bundle["SignedEntryTimestamp"] = base64.b64encode(bytes(raw)).decode()
        _rewrite_layer(client, digest, bundle=json.dumps(bundle))
    elif tamper == "chain":
        _rewrite_layer(client, digest, chain=None)
    else:
        _rewrite_layer(client, digest, bundle=notes[rekor_format.BUNDLE_ANNOTATION][:-2])
    root = instance.write_trusted_root(tmp_path / "root.json")
    with pytest.raises(VerificationError, match=message):
        verify_image(ref, POLICY, client=client, trusted_root=root)


def test_cli_sign_keyless_writes_both_layouts_and_verify_checks_identity(
    registry: RegistryServer,
    built_image: BuildResult,
    instance: TestSigstore,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client = RegistryClient(registry.host)
    digest = client.push_layout(built_image.oci_layout, REPO, tag="2.0.0").digest
    signer = instance.signer()

    @contextmanager
    def session() -> Iterator[keyless.KeylessSession]:
        yield keyless.KeylessSession(signer=signer, trust=instance.trust())

    monkeypatch.setattr(keyless, "ambient_session", session)
    runner = CliRunner()
    signed = runner.invoke(main, ["sign", f"{registry.host}/{REPO}:2.0.0", "--keyless"])
    assert signed.exit_code == 0, signed.output
    assert "bundle referrer" in signed.output and "cosign .sig layout" in signed.output
    (stored,) = RegistryStore(client, REPO).signatures(digest)
    assert stored.annotations[rekor_format.CERTIFICATE_ANNOTATION] == rekor_format.pem([signer.certificate])
    assert len(signer.signed) == 1  # the simple-signing payload; the statement went through sign_dsse

    root = str(instance.write_trusted_root(tmp_path / "root.json"))
    ref = f"{registry.host}/{REPO}@{digest}"
    base = ["verify", ref, "--trusted-root", root, "--json"]
    ok = runner.invoke(main, [*base, "--certificate-identity", IDENTITY, "--certificate-oidc-issuer", ISSUER])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.output)["signatures"][0]["certificate_identity"] == IDENTITY
    wrong_identity = runner.invoke(
        main, [*base, "--certificate-identity", "x@example.test", "--certificate-oidc-issuer", ISSUER]
    )
    assert wrong_identity.exit_code == 11 and "step 3k.6: identity mismatch" in wrong_identity.output
    wrong_issuer = runner.invoke(
        main, [*base, "--certificate-identity", IDENTITY, "--certificate-oidc-issuer", "https://other.example.test"]
    )
    assert wrong_issuer.exit_code == 11 and "step 3k.6: issuer mismatch" in wrong_issuer.output

    # only the legacy layout left (as a cosign v2 signer or a podman/skopeo mirror leaves it)
    client.request("DELETE", REPO, f"manifests/{client.resolve(REPO, digest.replace(':', '-'))}", push=True)
    legacy_only = runner.invoke(main, [*base, "--certificate-identity", IDENTITY, "--certificate-oidc-issuer", ISSUER])
    assert legacy_only.exit_code == 0, legacy_only.output
    assert json.loads(legacy_only.output)["signatures"][0]["key"] == "sigstore (.sig)"


def test_air_gapped_verify_from_a_release_directory(
    pushed: tuple[RegistryClient, ImageRef], built_image: BuildResult, instance: TestSigstore, tmp_path: Path
) -> None:
    client, ref = pushed
    _sign(client, ref, instance)
    release = tmp_path / "dist"
    shutil.copytree(built_image.oci_layout.root, release / "oci")
    export_offline(RegistryStore(client, REPO), ref.digest or "", release)
    root = instance.write_trusted_root(tmp_path / "root.json")
    result = verify_image(ref, POLICY, client=None, offline_dir=release, trusted_root=root)
    assert result.signatures[0].key_source == "sigstore (.sig)"
    wrong = VerificationPolicy(identities=(KeylessIdentity(identity=IDENTITY, issuer="https://other.example.test"),))
    with pytest.raises(VerificationError, match=r"issuer mismatch"):
        verify_image(ref, wrong, client=None, offline_dir=release, trusted_root=root)
