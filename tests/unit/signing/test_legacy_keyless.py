"""Keyless signatures in cosign's legacy ``.sig`` layout: format, signing, steps 3k.1–3k.6.

Signing is driven by an injected signer backed by the test Sigstore instance of
``sigstore_testing`` (real Fulcio and Rekor are not reachable from tests); the
transparency-log, certificate-transparency and chain checks are also run against real
production material from the Sigstore public-good instance.
"""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from terminai_sandbox.errors import ConfigError, RegistryNotFound, SigningError, VerificationError
from terminai_sandbox.registry import OCI_MANIFEST, sha256_digest
from terminai_sandbox.signing import sign
from terminai_sandbox.signing.formats import keys, payload
from terminai_sandbox.signing.formats import rekor as rekor_format
from terminai_sandbox.signing.formats import sig as sig_format
from terminai_sandbox.signing.formats.rekor import (
    BUNDLE_ANNOTATION,
    CERTIFICATE_ANNOTATION,
    CHAIN_ANNOTATION,
    RekorBundle,
)
from terminai_sandbox.signing.formats.trustroot import load_trust, parse_trust
from terminai_sandbox.signing.store import RegistryStore
from terminai_sandbox.signing.verify import legacy as legacy_verify
from terminai_sandbox.signing.verify.trust import KeylessIdentity

from tests.unit.signing.sigstore_testing import IDENTITY, ISSUER, FakeSigner, TestSigstore

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures/sigstore"
PRODUCTION_ROOT = FIXTURES / "production-trusted_root.json"
PRODUCTION_BUNDLE = FIXTURES / "cosign-oci-attestation.sigstore.json"
PRODUCTION_REKOR_LOG = "c0d23d6ad406973f9559f3ba2d1ca01f84147d8ffc5b8445c224f98b9591801d"
DIGEST = "sha256:" + "4" * 64
REPOSITORY = "registry.example.test/terminai/sandbox"
WANTED = KeylessIdentity(identity=IDENTITY, issuer=ISSUER)


class MemoryRegistry:
    """The four registry calls cosign's read-modify-write needs, in memory.

    ``images`` are the digests of pushed images (signing refuses any other digest).
    """

    def __init__(self, images: tuple[str, ...] = (DIGEST,)) -> None:
        self.blobs: dict[str, bytes] = {}
        self.manifests: dict[str, bytes] = {digest: b'{"schemaVersion":2}' for digest in images}

    def get_manifest(self, repo: str, reference: str) -> tuple[bytes, str, str]:
        if reference not in self.manifests:
            raise RegistryNotFound(f"{repo}:{reference}: manifest unknown (404)")
        body = self.manifests[reference]
        return body, OCI_MANIFEST, sha256_digest(body)

    def get_blob(self, repo: str, digest: str, *, size: int | None = None) -> bytes:
        return self.blobs[digest]

    def push_blob(self, repo: str, digest: str, data: bytes) -> bool:
        assert sha256_digest(data) == digest
        self.blobs[digest] = data
        return True

    def put_manifest(self, repo: str, reference: str, body: bytes, media_type: str) -> str:
        assert media_type == OCI_MANIFEST
        self.manifests[reference] = body
        return sha256_digest(body)


@pytest.fixture(scope="module")
def instance() -> TestSigstore:
    return TestSigstore()


def _signed(
    instance: TestSigstore, signer: FakeSigner | None = None, digest: str = DIGEST
) -> sig_format.StoredSignature:
    """One legacy keyless layer, as sign() stores it, read back as verification sees it."""
    registry = MemoryRegistry(images=(digest,))
    sign.sign_legacy_keyless(
        registry,  # type: ignore[arg-type]
        "terminai/sandbox",
        digest,
        signer or instance.signer(),
        instance.trust(),
        docker_reference=REPOSITORY,
    )
    return RegistryStore(registry, "terminai/sandbox").signatures(digest)[0]  # type: ignore[arg-type]


def _with(stored: sig_format.StoredSignature, **changes: Any) -> sig_format.StoredSignature:
    return replace(stored, **changes)


def _bundle(stored: sig_format.StoredSignature) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(stored.annotations[BUNDLE_ANNOTATION])
    return data


def _annotated(stored: sig_format.StoredSignature, name: str, value: str | None) -> sig_format.StoredSignature:
    notes = dict(stored.annotations)
    if value is None:
        del notes[name]
    else:
        notes[name] = value
    return _with(stored, annotations=notes)


# -- format -----------------------------------------------------------------------------


def test_set_payload_is_rfc8785_and_annotation_is_go_ordered() -> None:
    rekor = RekorBundle(
        signed_entry_timestamp=b"\x30\x01",
        body=b'{"kind":"hashedrekord"}',
        integrated_time=1_700_000_000,
        log_index=2**40,
        log_id="ab" * 32,
    )
    expected = {
        "body": base64.b64encode(rekor.body).decode(),
        "integratedTime": rekor.integrated_time,
        "logID": rekor.log_id,
        "logIndex": rekor.log_index,
    }
    assert rekor.signed_payload() == rfc8785.dumps(expected)
    text = rekor.to_annotation()
    assert text.startswith('{"SignedEntryTimestamp":"MAE=","Payload":{"body":')
    assert list(json.loads(text)["Payload"]) == ["body", "integratedTime", "logIndex", "logID"]
    assert " " not in text
    assert RekorBundle.from_annotation(text) == rekor


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[]",
        '{"SignedEntryTimestamp":"MAE="}',
        '{"SignedEntryTimestamp":"***","Payload":{"body":"e30=","integratedTime":1,"logIndex":1,"logID":"'
        + "ab" * 32
        + '"}}',
        '{"SignedEntryTimestamp":"MAE=","Payload":{"body":"e30=","integratedTime":"1","logIndex":1,"logID":"'
        + "ab" * 32
        + '"}}',
        '{"SignedEntryTimestamp":"MAE=","Payload":{"body":"e30=","integratedTime":1,"logIndex":1,"logID":"abcd"}}',
    ],
)
def test_malformed_bundle_annotation_is_refused(text: str) -> None:
    with pytest.raises(VerificationError, match=r"malformed dev.sigstore.cosign/bundle annotation"):
        RekorBundle.from_annotation(text)


def test_rekor_bundle_from_a_sigstore_bundle_and_rekor_v2_refusal(instance: TestSigstore) -> None:
    bundle = instance.signer().sign_artifact(b"payload")
    data = json.loads(bundle.to_json())
    entry = data["verificationMaterial"]["tlogEntries"][0]
    rekor = rekor_format.rekor_bundle(bundle.to_json())
    assert rekor.log_id == instance.rekor_log_id.hex()
    assert rekor.log_index == int(entry["logIndex"]) and rekor.integrated_time == int(entry["integratedTime"])
    assert rekor.body == base64.b64decode(entry["canonicalizedBody"])
    assert rekor.signed_entry_timestamp == base64.b64decode(entry["inclusionPromise"]["signedEntryTimestamp"])
    del entry["inclusionPromise"]  # what a Rekor v2 entry looks like: no SET
    with pytest.raises(SigningError, match=r"no inclusion promise"):
        rekor_format.rekor_bundle(json.dumps(data))


# -- signing ----------------------------------------------------------------------------


def test_sign_writes_the_cosign_keyless_layer_and_accumulates(instance: TestSigstore) -> None:
    registry = MemoryRegistry()
    key = keys.generate()
    sign.sign(registry, "r", DIGEST, key, docker_reference=REPOSITORY)  # type: ignore[arg-type]
    signer = instance.signer()
    data, notes, added = sign.sign_legacy_keyless(
        registry,  # type: ignore[arg-type]
        "r",
        DIGEST,
        signer,
        instance.trust(),
        docker_reference=REPOSITORY,
    )
    assert added and signer.signed == [data]  # the signer signed exactly the simple-signing payload
    assert data == payload.simple_signing(REPOSITORY, DIGEST)
    manifest = json.loads(registry.manifests[sig_format.signature_tag(DIGEST)])
    first, layer = manifest["layers"]
    assert first["annotations"].keys() == {sig_format.SIGNATURE_ANNOTATION}  # the keyed signature is kept
    assert layer["mediaType"] == "application/vnd.dev.cosign.simplesigning.v1+json"
    assert layer["digest"] == sha256_digest(data) and layer["size"] == len(data)
    assert layer["annotations"] == notes
    assert set(notes) == {sig_format.SIGNATURE_ANNOTATION, CERTIFICATE_ANNOTATION, CHAIN_ANNOTATION, BUNDLE_ANNOTATION}
    leaf = x509.load_pem_x509_certificate(notes[CERTIFICATE_ANNOTATION].encode())
    assert leaf == signer.certificate
    assert x509.load_pem_x509_certificates(notes[CHAIN_ANNOTATION].encode()) == [
        instance.intermediate,
        instance.root,
    ]
    signature = base64.b64decode(notes[sig_format.SIGNATURE_ANNOTATION])
    public = leaf.public_key()
    assert isinstance(public, ec.EllipticCurvePublicKey)
    public.verify(signature, data, ec.ECDSA(hashes.SHA256()))
    rekor = RekorBundle.from_annotation(notes[BUNDLE_ANNOTATION])
    instance.rekor_key.public_key().verify(
        rekor.signed_entry_timestamp, rekor.signed_payload(), ec.ECDSA(hashes.SHA256())
    )
    assert json.loads(registry.blobs[manifest["config"]["digest"]])["rootfs"]["diff_ids"] == [
        first["digest"],
        layer["digest"],
    ]
    # both signatures verify afterwards, each with its own material
    stored = RegistryStore(registry, "r").signatures(DIGEST)  # type: ignore[arg-type]
    assert sig_format.verifies(key.public_key(), stored[0].payload, stored[0].signature)
    assert legacy_verify.verify_keyless(stored[1], WANTED, instance.trust()).identity == IDENTITY


def test_sign_refuses_a_certificate_from_another_ca(instance: TestSigstore) -> None:
    stranger = TestSigstore(name="stranger")
    with pytest.raises(SigningError, match=r"not issued by a Fulcio CA"):
        sign.sign_legacy_keyless(
            MemoryRegistry(),  # type: ignore[arg-type]
            "r",
            DIGEST,
            instance.signer(ca=stranger),
            instance.trust(),
            docker_reference=REPOSITORY,
        )


# -- verification: the good path and each step broken ------------------------------------


def test_verifies_and_reports_the_log_entry(instance: TestSigstore) -> None:
    stored = _signed(instance)
    proof = legacy_verify.verify_keyless(stored, WANTED, instance.trust())
    assert (proof.identity, proof.issuer, proof.log_index) == (IDENTITY, ISSUER, 7)
    assert proof.integrated_time == int(instance.now.timestamp())
    by_regexp = KeylessIdentity(identity_regexp=r"release@example\.(test|org)", issuer_regexp=r"https://issuer\..*")
    assert legacy_verify.verify_keyless(stored, by_regexp, instance.trust()).identity == IDENTITY
    assert legacy_verify.is_keyless(stored)


@pytest.mark.parametrize("name", [CERTIFICATE_ANNOTATION, CHAIN_ANNOTATION, BUNDLE_ANNOTATION])
def test_step_3k1_missing_annotation(instance: TestSigstore, name: str) -> None:
    stored = _annotated(_signed(instance), name, None)
    with pytest.raises(VerificationError, match=f"step 3k.1: missing annotation {name}"):
        legacy_verify.verify_keyless(stored, WANTED, instance.trust())


def test_step_3k1_malformed_annotations(instance: TestSigstore) -> None:
    stored = _signed(instance)
    with pytest.raises(VerificationError, match=r"step 3k.1: malformed dev.sigstore.cosign/bundle"):
        legacy_verify.verify_keyless(_annotated(stored, BUNDLE_ANNOTATION, "{"), WANTED, instance.trust())
    with pytest.raises(VerificationError, match=r"step 3k.1: malformed dev.sigstore.cosign/certificate"):
        legacy_verify.verify_keyless(
            _annotated(
                stored, CERTIFICATE_ANNOTATION, "-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n"
            ),
            WANTED,
            instance.trust(),
        )
    two = stored.annotations[CERTIFICATE_ANNOTATION] * 2
    with pytest.raises(VerificationError, match=r"exactly one certificate"):
        legacy_verify.verify_keyless(_annotated(stored, CERTIFICATE_ANNOTATION, two), WANTED, instance.trust())


def test_step_3k2_tampered_payload_and_swapped_certificate(instance: TestSigstore) -> None:
    stored = _signed(instance)
    tampered = stored.payload.replace(b"4444", b"5555", 1)
    with pytest.raises(VerificationError, match=r"step 3k.2: bad signature"):
        legacy_verify.verify_keyless(_with(stored, payload=tampered), WANTED, instance.trust())
    other = instance.signer().certificate  # same trusted CA and identity, another key
    swapped = _annotated(stored, CERTIFICATE_ANNOTATION, other.public_bytes(serialization.Encoding.PEM).decode())
    with pytest.raises(VerificationError, match=r"step 3k.2: bad signature"):
        legacy_verify.verify_keyless(swapped, WANTED, instance.trust())


@pytest.mark.parametrize(
    ("field", "value"),
    [("SignedEntryTimestamp", "flip"), ("integratedTime", 1), ("logIndex", 8), ("body", "other")],
)
def test_step_3k3_altered_set(instance: TestSigstore, field: str, value: object) -> None:
    stored = _signed(instance)
    bundle = _bundle(stored)
    if field == "SignedEntryTimestamp":
        raw = bytearray(base64.b64decode(bundle[field]))
        raw[-1] ^= 1
        bundle[field] = base64.b64encode(bytes(raw)).decode()
    elif field == "body":
        bundle["Payload"]["body"] = base64.b64encode(b'{"kind":"hashedrekord"}').decode()
    elif field == "integratedTime":
        bundle["Payload"][field] += value  # type: ignore[operator]
    else:
        bundle["Payload"][field] = value
    with pytest.raises(VerificationError, match=r"step 3k.3: bad SET: the Signed Entry Timestamp does not verify"):
        legacy_verify.verify_keyless(
            _annotated(stored, BUNDLE_ANNOTATION, json.dumps(bundle)), WANTED, instance.trust()
        )


def test_step_3k3_log_outside_the_trusted_root(instance: TestSigstore) -> None:
    rogue_log = TestSigstore(name="rogue log")
    stored = _signed(instance, signer=rogue_log.signer(ca=instance))  # trusted certificate, untrusted log
    with pytest.raises(VerificationError, match=r"step 3k.3: bad SET: log [0-9a-f]{64} is not a Rekor log"):
        legacy_verify.verify_keyless(stored, WANTED, instance.trust())


def test_step_3k4_set_borrowed_from_another_entry(instance: TestSigstore) -> None:
    stored, other = _signed(instance), _signed(instance)
    borrowed = _annotated(stored, BUNDLE_ANNOTATION, other.annotations[BUNDLE_ANNOTATION])
    with pytest.raises(VerificationError, match=r"step 3k.4: the transparency log entry records another signature"):
        legacy_verify.verify_keyless(borrowed, WANTED, instance.trust())


def test_step_3k5_certificate_not_from_the_trusted_ca(instance: TestSigstore) -> None:
    rogue_ca = TestSigstore(name="rogue ca")
    registry = MemoryRegistry()
    sign.sign_legacy_keyless(
        registry,  # type: ignore[arg-type]
        "r",
        DIGEST,
        instance.signer(ca=rogue_ca),  # logged in the trusted log: only the CA is wrong
        rogue_ca.trust(),
        docker_reference=REPOSITORY,
    )
    stored = RegistryStore(registry, "r").signatures(DIGEST)[0]  # type: ignore[arg-type]
    with pytest.raises(VerificationError, match=r"step 3k.5: certificate not from a trusted CA") as caught:
        legacy_verify.verify_keyless(stored, WANTED, instance.trust())
    assert "--trusted-root" in caught.value.hint
    # a chain annotation naming the trusted CA does not help: anchors come from the trusted root only
    forged = _annotated(stored, CHAIN_ANNOTATION, rekor_format.pem([instance.intermediate, instance.root]))
    with pytest.raises(VerificationError, match=r"step 3k.5"):
        legacy_verify.verify_keyless(forged, WANTED, instance.trust())


def test_step_3k5_integrated_time_outside_the_certificate(instance: TestSigstore) -> None:
    late_log = TestSigstore(now=instance.now + timedelta(hours=1), rekor_key=instance.rekor_key)
    stored = _signed(instance, signer=late_log.signer(ca=instance))
    with pytest.raises(VerificationError, match=r"step 3k.5: .*outside the certificate's validity"):
        legacy_verify.verify_keyless(stored, WANTED, instance.trust())


def test_step_3k5_certificate_without_sct(instance: TestSigstore) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    signer = FakeSigner(log=instance, key=key, certificate=instance.issue(key, sct=False))
    with pytest.raises(VerificationError, match=r"step 3k.5: .*no embedded SCT"):
        legacy_verify.verify_keyless(_signed(instance, signer=signer), WANTED, instance.trust())
    other_ct = TestSigstore(
        now=instance.now, root_key=instance.root_key, ca_key=instance.ca_key
    )  # same CA, other CT log
    signer = FakeSigner(log=instance, key=key, certificate=other_ct.issue(key))
    with pytest.raises(VerificationError, match=r"step 3k.5: .*no SCT .* signed by a CT log"):
        legacy_verify.verify_keyless(_signed(instance, signer=signer), WANTED, instance.trust())


def test_step_3k6_usage_identity_and_issuer(instance: TestSigstore) -> None:
    stored = _signed(instance)
    with pytest.raises(VerificationError, match=r"step 3k.6: identity mismatch"):
        legacy_verify.verify_keyless(
            stored, KeylessIdentity(identity="x@example.test", issuer=ISSUER), instance.trust()
        )
    with pytest.raises(VerificationError, match=r"step 3k.6: issuer mismatch"):
        legacy_verify.verify_keyless(
            stored, KeylessIdentity(identity=IDENTITY, issuer="https://other.example.test"), instance.trust()
        )
    with pytest.raises(VerificationError, match=r"step 3k.6: identity mismatch"):
        legacy_verify.verify_keyless(
            stored, KeylessIdentity(identity_regexp="release@example", issuer=ISSUER), instance.trust()
        )  # a regular expression must match the whole identity
    key = ec.generate_private_key(ec.SECP256R1())
    signer = FakeSigner(log=instance, key=key, certificate=instance.issue(key, code_signing=False))
    with pytest.raises(VerificationError, match=r"step 3k.6: .*code signing"):
        legacy_verify.verify_keyless(_signed(instance, signer=signer), WANTED, instance.trust())


def test_uri_identity_of_a_ci_workflow(instance: TestSigstore) -> None:
    workflow = "https://github.com/example/sandbox/.github/workflows/release.yml@refs/tags/v1.2.3"
    stored = _signed(instance, signer=instance.signer(identity=workflow))
    wanted = KeylessIdentity(identity=workflow, issuer=ISSUER)
    assert legacy_verify.verify_keyless(stored, wanted, instance.trust()).identity == workflow


# -- the test instance is realistic; why sigstore-python is not used for this layout -----


def test_sigstore_python_accepts_the_test_instance(instance: TestSigstore, tmp_path: Path) -> None:
    from sigstore.models import TrustedRoot
    from sigstore.verify import Verifier, policy

    verifier = Verifier(trusted_root=TrustedRoot.from_file(str(instance.write_trusted_root(tmp_path / "root.json"))))
    bundle = instance.signer().sign_artifact(b"artifact")
    verifier.verify_artifact(b"artifact", bundle, policy.Identity(identity=IDENTITY, issuer=ISSUER))
    from sigstore.errors import VerificationError as SigstoreVerificationError

    with pytest.raises(SigstoreVerificationError):
        verifier.verify_artifact(b"other", bundle, policy.Identity(identity=IDENTITY, issuer=ISSUER))


def test_sigstore_python_refuses_a_promise_only_entry(instance: TestSigstore) -> None:
    # cosign's bundle annotation has no inclusion proof. If this starts passing,
    # legacy_verify can convert the annotations to a v0.1 Bundle and delegate.
    from sigstore.models import Bundle, InvalidBundle

    stored = _signed(instance)
    rekor = RekorBundle.from_annotation(stored.annotations[BUNDLE_ANNOTATION])
    leaf = x509.load_pem_x509_certificate(stored.annotations[CERTIFICATE_ANNOTATION].encode())
    v01 = {
        "mediaType": "application/vnd.dev.sigstore.bundle+json;version=0.1",
        "verificationMaterial": {
            "x509CertificateChain": {
                "certificates": [{"rawBytes": base64.b64encode(leaf.public_bytes(serialization.Encoding.DER)).decode()}]
            },
            "tlogEntries": [
                {
                    "logIndex": str(rekor.log_index),
                    "logId": {"keyId": base64.b64encode(bytes.fromhex(rekor.log_id)).decode()},
                    "kindVersion": {"kind": "hashedrekord", "version": "0.0.1"},
                    "integratedTime": str(rekor.integrated_time),
                    "inclusionPromise": {
                        "signedEntryTimestamp": base64.b64encode(rekor.signed_entry_timestamp).decode()
                    },
                    "canonicalizedBody": base64.b64encode(rekor.body).decode(),
                }
            ],
        },
        "messageSignature": {
            "messageDigest": {
                "algorithm": "SHA2_256",
                "digest": base64.b64encode(bytes.fromhex(stored.payload_digest[7:])).decode(),
            },
            "signature": base64.b64encode(stored.signature).decode(),
        },
    }
    with pytest.raises(InvalidBundle, match=r"inclusionProof"):
        Bundle.from_json(json.dumps(v01))  # the model requires a proof
    entry = v01["verificationMaterial"]["tlogEntries"][0]  # type: ignore[index]
    entry["inclusionProof"] = {"logIndex": "0", "rootHash": "", "treeSize": "1", "hashes": []}
    with pytest.raises(InvalidBundle, match=r"inclusion proof, with checkpoint"):
        Bundle.from_json(json.dumps(v01))  # and a checkpoint, even in a v0.1 bundle


# -- real production material -----------------------------------------------------------


def _production() -> tuple[dict[str, Any], x509.Certificate, RekorBundle]:
    text = PRODUCTION_BUNDLE.read_text()
    data = json.loads(text)
    leaf = x509.load_der_x509_certificate(base64.b64decode(data["verificationMaterial"]["certificate"]["rawBytes"]))
    return data, leaf, rekor_format.rekor_bundle(text)


def test_production_set_chain_and_sct_verify_offline() -> None:
    from terminai_sandbox.signing.verify import certs

    _, leaf, rekor = _production()
    trust = load_trust(PRODUCTION_ROOT)
    assert rekor.log_id == PRODUCTION_REKOR_LOG and rekor.log_index == 175508996
    when = legacy_verify._check_set(rekor, trust)  # the real Rekor SET, verified with the production key
    assert int(when.timestamp()) == rekor.integrated_time
    chain = certs.verify_chain(leaf, [], trust, when)
    assert chain[0].subject.rfc4514_string() == "CN=sigstore-intermediate,O=sigstore.dev"
    certs.verify_sct(leaf, chain, trust)  # the real SCT, verified with the production CT log key
    certs.check_usage(leaf)
    assert certs.identity_of(leaf) == (["cody@soyland.com"], "https://github.com/login/oauth")
    altered = replace(rekor, log_index=rekor.log_index + 1)
    with pytest.raises(VerificationError, match=r"bad SET"):
        legacy_verify._check_set(altered, trust)
    with pytest.raises(VerificationError, match=r"outside the certificate's validity"):
        certs.verify_chain(leaf, [], trust, when + timedelta(hours=1))
    with pytest.raises(VerificationError, match=r"does not chain to a Fulcio CA"):
        certs.verify_chain(leaf, [], TestSigstore().trust(), when)


def test_production_material_in_the_legacy_layout_reaches_the_entry_check() -> None:
    # A real signature, certificate and SET laid out as cosign's annotations. The
    # entry is a DSSE entry, so step 3k.4 must refuse it as not this kind of signature.
    from terminai_sandbox.signing.formats import dsse

    data, leaf, rekor = _production()
    envelope = data["dsseEnvelope"]
    signed = dsse.pae(envelope["payloadType"], base64.b64decode(envelope["payload"]))
    notes = rekor_format.layer_annotations(base64.b64decode(envelope["signatures"][0]["sig"]), leaf, (), rekor)
    stored = sig_format.stored_signature({"digest": sha256_digest(signed), "annotations": notes}, signed)
    cody = KeylessIdentity(identity="cody@soyland.com", issuer="https://github.com/login/oauth")
    with pytest.raises(VerificationError, match=r"step 3k.4: the transparency log entry is dsse/0.0.1"):
        legacy_verify.verify_keyless(stored, cody, load_trust(PRODUCTION_ROOT))


# -- the trusted root ---------------------------------------------------------------------


def test_trusted_roots(tmp_path: Path, instance: TestSigstore) -> None:
    production = load_trust(PRODUCTION_ROOT)
    assert production.rekor(PRODUCTION_REKOR_LOG) is not None and len(production.ct_logs) >= 1
    assert len(production.authorities) == 2
    embedded = load_trust(None)  # sigstore-python's offline copy of the public-good root
    assert embedded.rekor(PRODUCTION_REKOR_LOG) is not None
    assert instance.trust().issuing_chain(instance.signer().certificate) == (instance.intermediate, instance.root)
    assert production.issuing_chain(instance.signer().certificate) == ()
    (tmp_path / "bad.json").write_text('{"mediaType": "something else"}')
    with pytest.raises(ConfigError, match=r"not a Sigstore trusted root"):
        load_trust(tmp_path / "bad.json")
    with pytest.raises(ConfigError, match=r"cannot read trusted root"):
        load_trust(tmp_path / "missing.json")
    empty = json.loads(instance.trusted_root_json())
    empty["tlogs"] = []
    with pytest.raises(ConfigError, match=r"no Rekor log"):
        parse_trust(json.dumps(empty), "empty")


def test_default_trust_refuses_a_test_instance_signature(instance: TestSigstore) -> None:
    stored = _signed(instance)
    with pytest.raises(VerificationError, match=r"step 3k.3: bad SET: log .* public-good"):
        legacy_verify.verify_keyless(stored, WANTED, load_trust(None))
