"""Reading what cosign 3 attaches: bundle referrers found through either index, keyed attestations in bundles.

The index shapes are the ones cosign 3.1 (Debian forky) wrote to Debian's docker-registry,
which has no referrers API: the fallback index at tag ``sha256-<hex>`` lists each referrer
with ``artifactType`` = the empty config's media type, not the bundle's
(tests/integration/signing/test_cosign_matrix.py runs the real binaries).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace

import pytest
from terminai_sandbox.common.reference import ImageRef
from terminai_sandbox.errors import VerificationError
from terminai_sandbox.oci_media import OCI_EMPTY, OCI_MANIFEST
from terminai_sandbox.signing.formats import bundle as bundle_format
from terminai_sandbox.signing.formats import dsse, keys, sig
from terminai_sandbox.signing.verify.attestations import verify_attestation
from terminai_sandbox.signing.verify.by_key import verify_keyed
from terminai_sandbox.signing.verify.trust import Mirror, TrustedKey, VerificationPolicy

DIGEST = "sha256:" + "ab" * 32
OTHER = "sha256:" + "cd" * 32


def _entry(artifact_type: str | None, digest: str = "sha256:" + "11" * 32) -> dict[str, object]:
    entry: dict[str, object] = {"mediaType": OCI_MANIFEST, "digest": digest, "size": 1}
    if artifact_type is not None:
        entry["artifactType"] = artifact_type
    return entry


def test_a_fallback_entry_typed_as_the_empty_config_is_read() -> None:
    index = {
        "manifests": [
            _entry(OCI_EMPTY, "sha256:" + "01" * 32),
            _entry(bundle_format.BUNDLE_MEDIA, "sha256:" + "02" * 32),
        ]
    }
    assert bundle_format.bundle_referrers(index) == ["sha256:" + "01" * 32, "sha256:" + "02" * 32]


def test_referrers_of_other_types_are_not_fetched() -> None:
    index = {"manifests": [_entry("application/vnd.cyclonedx+json"), _entry("application/spdx+json")]}
    assert bundle_format.bundle_referrers(index) == []


def test_a_flood_of_referrers_is_refused() -> None:
    index = {"manifests": [_entry(OCI_EMPTY, f"sha256:{n:064x}") for n in range(bundle_format.MAX_REFERRERS + 1)]}
    with pytest.raises(VerificationError, match="more than 64 are not read"):
        bundle_format.bundle_referrers(index)


def test_a_referrer_of_another_subject_contributes_no_bundle() -> None:
    manifest = bundle_format.referrer_manifest(
        '{"dsseEnvelope":{}}', subject_digest=OTHER, subject_media=OCI_MANIFEST, subject_size=10
    )
    assert bundle_format.bundle_layers(manifest, OTHER) != []
    assert bundle_format.bundle_layers(manifest, DIGEST) == []


def _attestation_bundle(key: object, digest: str, predicate_uri: str, predicate: object) -> str:
    assert isinstance(key, keys.ec.EllipticCurvePrivateKey)
    env = json.loads(dsse.envelope(dsse.statement("r/x", digest, predicate_uri, predicate), key))
    return json.dumps({"verificationMaterial": {"publicKey": {"hint": "x"}}, "dsseEnvelope": env})


@dataclass
class Stored:
    """What a registry holds for one digest (the SignatureSource protocol)."""

    bundle_list: list[str] = field(default_factory=list)
    envelopes: list[bytes] = field(default_factory=list)

    def signatures(self, digest: str) -> list[sig.StoredSignature]:
        return []

    def attestations(self, digest: str) -> list[bytes]:
        return self.envelopes

    def bundles(self, digest: str) -> list[str]:
        return self.bundle_list


def _policy(key: keys.ec.EllipticCurvePrivateKey) -> VerificationPolicy:
    return VerificationPolicy(keys=(TrustedKey(pem=keys.public_pem(key), source="test"),))


def test_a_keyed_attestation_stored_only_as_a_bundle_verifies() -> None:
    key = keys.generate()
    bom = {"bomFormat": "CycloneDX"}
    source = Stored(bundle_list=[_attestation_bundle(key, DIGEST, "https://cyclonedx.org/bom", bom)])
    claims = verify_attestation(DIGEST, _policy(key), source, "https://cyclonedx.org/bom", None)
    assert claims == ({"predicateType": "https://cyclonedx.org/bom", "predicate": bom},)


def test_a_keyed_attestation_bundle_is_refused_for_a_stranger_another_digest_or_type() -> None:
    key, stranger = keys.generate(), keys.generate()
    source = Stored(bundle_list=[_attestation_bundle(key, DIGEST, "https://cyclonedx.org/bom", {})])
    with pytest.raises(VerificationError, match="does not verify"):
        verify_attestation(DIGEST, _policy(stranger), source, "https://cyclonedx.org/bom", None)
    with pytest.raises(VerificationError, match="another image"):
        verify_attestation(OTHER, _policy(key), source, "https://cyclonedx.org/bom", None)
    with pytest.raises(VerificationError, match=re.escape("not 'https://slsa.dev/provenance/v1'")):
        verify_attestation(DIGEST, _policy(key), source, "https://slsa.dev/provenance/v1", None)


def test_sorting_bundles_reads_the_claimed_predicate_without_trusting_it() -> None:
    key = keys.generate()
    assert bundle_format.bundle_predicate(_attestation_bundle(key, DIGEST, "https://x.example/p", {})) == (
        "https://x.example/p"
    )
    assert bundle_format.bundle_predicate("{}") is None
    assert bundle_format.key_bundle_envelope('{"verificationMaterial":{"certificate":{}},"dsseEnvelope":{}}') is None


def test_a_bundle_naming_another_repository_needs_a_mirror_entry() -> None:
    key = keys.generate()
    upstream, mirror = "ghcr.io/org/sandbox", "reg.corp.example/mirror/sandbox"
    source = Stored(bundle_list=[bundle_format.key_bundle(upstream, DIGEST, key)])
    pinned = ImageRef.parse(f"{mirror}@{DIGEST}")
    with pytest.raises(VerificationError, match=r"step 5: signed for repository .ghcr\.io/org/sandbox.") as caught:
        verify_keyed(pinned, DIGEST, _policy(key), source)
    assert caught.value.hint is not None and '"mirrors": [{"identity": "ghcr.io/org/sandbox"' in caught.value.hint
    mirrored = replace(_policy(key), mirrors=(Mirror(identity=upstream, repositories=(mirror,)),))
    assert verify_keyed(pinned, DIGEST, mirrored, source).signatures[0].key_source == "test"
    # In its own repository it verifies without any mirror entry.
    assert verify_keyed(ImageRef.parse(f"{upstream}@{DIGEST}"), DIGEST, _policy(key), source).signatures


def test_a_cosign3_bundle_without_subject_names_binds_no_repository() -> None:
    # cosign 3's sign statement has subjects without "name": only the digest is bound.
    key = keys.generate()
    statement = {
        "_type": dsse.STATEMENT_V1,
        "subject": [{"digest": {"sha256": DIGEST.removeprefix("sha256:")}}],
        "predicateType": bundle_format.COSIGN_SIGN_PREDICATE,
        "predicate": {},
    }
    bundle = bundle_format.envelope_bundle(dsse.envelope(json.dumps(statement).encode(), key), key)
    pinned = ImageRef.parse(f"anywhere.example/any/repo@{DIGEST}")
    assert verify_keyed(pinned, DIGEST, _policy(key), Stored(bundle_list=[bundle])).signatures
