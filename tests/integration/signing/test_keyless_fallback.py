"""A keyless attestation bundle, stored the way cosign 3 stores it on a registry without the
referrers API, is found and verified (real production Sigstore data, fully offline).

The bundle is cosign's own test data (a keyless attestation by ``cody@soyland.com``): its
referrer manifest and the fallback index at tag ``sha256-<hex>`` are written in the shapes
cosign 3.1 writes (index entry ``artifactType`` = the empty config's media type).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from terminai_sandbox.errors import VerificationError
from terminai_sandbox.oci_media import OCI_EMPTY, OCI_INDEX, OCI_MANIFEST, sha256_digest
from terminai_sandbox.registry import RegistryClient
from terminai_sandbox.signing.formats import bundle as bundle_format
from terminai_sandbox.signing.store import RegistryStore
from terminai_sandbox.signing.verify.attestations import verify_attestation
from terminai_sandbox.signing.verify.trust import VerificationPolicy

from tests.fixtures.registry import RegistryServer

pytestmark = pytest.mark.integration

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures/sigstore/cosign-oci-attestation.sigstore.json"
PREDICATE = "https://cosign.sigstore.dev/attestation/v1"
REPO = "keyless/fallback"


def _store_as_cosign3(client: RegistryClient, bundle_json: str) -> str:
    """Write the bundle as cosign 3 does on distribution 2.8; return the subject digest."""
    statement = json.loads(base64.b64decode(json.loads(bundle_json)["dsseEnvelope"]["payload"]))
    subject = "sha256:" + statement["subject"][0]["digest"]["sha256"]
    blob = bundle_json.encode()
    client.push_blob(REPO, sha256_digest(blob), blob)
    client.push_blob(REPO, sha256_digest(bundle_format.EMPTY_CONFIG), bundle_format.EMPTY_CONFIG)
    manifest = bundle_format.referrer_manifest(
        bundle_json, subject_digest=subject, subject_media=OCI_MANIFEST, subject_size=1
    )
    artifact = client.put_manifest(REPO, sha256_digest(manifest), manifest, OCI_MANIFEST)
    index = {
        "schemaVersion": 2,
        "mediaType": OCI_INDEX,
        "manifests": [
            {"mediaType": OCI_MANIFEST, "size": len(manifest), "digest": artifact, "artifactType": OCI_EMPTY}
        ],
    }
    client.put_manifest(REPO, bundle_format.fallback_tag(subject), json.dumps(index).encode(), OCI_INDEX)
    return subject


def test_a_keyless_bundle_in_cosign3s_fallback_index_verifies(registry: RegistryServer) -> None:
    client = RegistryClient(registry.host)
    subject = _store_as_cosign3(client, FIXTURE.read_text())
    store = RegistryStore(client, REPO)
    policy = VerificationPolicy.single_identity("cody@soyland.com", "https://github.com/login/oauth")
    [claim] = verify_attestation(subject, policy, store, PREDICATE, None)
    assert claim["predicateType"] == PREDICATE
    stranger = VerificationPolicy.single_identity("mallory@example.com", "https://github.com/login/oauth")
    with pytest.raises(VerificationError, match="keyless bundle rejected"):
        verify_attestation(subject, stranger, store, PREDICATE, None)
    # The same index copied to another digest's fallback tag lists a referrer of another subject.
    other = "sha256:" + "1" * 64
    body, media, _ = client.get_manifest(REPO, bundle_format.fallback_tag(subject))
    client.put_manifest(REPO, bundle_format.fallback_tag(other), body, media)
    assert store.bundles(other) == []
    with pytest.raises(VerificationError, match="none stored"):
        verify_attestation(other, policy, store, PREDICATE, None)
