"""Sigstore bundles attached as OCI 1.1 referrers (cosign v3's default signature format).

A bundle (``application/vnd.dev.sigstore.bundle.v0.3+json``) is the single layer of an
artifact manifest whose ``subject`` is the signed image. Registries without the referrers
API (distribution 2.8) get the OCI fallback: an index at tag ``sha256-<hex>`` listing the
referrers, updated read-modify-write.

Key-based bundles carry a DSSE envelope over the statement ``cosign sign`` v3 signs
(predicate ``https://sigstore.dev/cosign/sign/v1``) and a public key hint; they are
verified here with the policy's keys (sigstore-python accepts only certificate bundles).
"""

from __future__ import annotations

import base64
import json
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ec

from terminai_sandbox.errors import RegistryError, VerificationError
from terminai_sandbox.registry import OCI_INDEX, OCI_MANIFEST, RegistryClient, sha256_digest
from terminai_sandbox.signing import attest, keys

BUNDLE_MEDIA = "application/vnd.dev.sigstore.bundle.v0.3+json"
EMPTY_MEDIA = "application/vnd.oci.empty.v1+json"
COSIGN_SIGN_PREDICATE = "https://sigstore.dev/cosign/sign/v1"


def is_key_bundle(bundle_json: str) -> bool:
    """True for a bundle verified by a public key (no certificate)."""
    try:
        material = json.loads(bundle_json).get("verificationMaterial", {})
    except (ValueError, AttributeError):
        return False
    return isinstance(material, dict) and "publicKey" in material


def fallback_tag(digest: str) -> str:
    return digest.replace(":", "-")


def key_bundle(repository: str, digest: str, key: ec.EllipticCurvePrivateKey) -> str:
    """A key-based v0.3 bundle for ``digest`` (no transparency-log entry)."""
    statement = {
        "_type": attest.STATEMENT_V1,
        "subject": [{"name": repository, "digest": {"sha256": digest.removeprefix("sha256:")}}],
        "predicateType": COSIGN_SIGN_PREDICATE,
        "predicate": {},
    }
    envelope = json.loads(attest.envelope(json.dumps(statement, separators=(",", ":")).encode(), key))
    bundle = {
        "mediaType": BUNDLE_MEDIA,
        "verificationMaterial": {"publicKey": {"hint": keys.key_id(key.public_key())}, "tlogEntries": []},
        "dsseEnvelope": envelope,
    }
    return json.dumps(bundle, separators=(",", ":"))


def verify_key_bundle(bundle_json: str, digest: str, public_keys: list[ec.EllipticCurvePublicKey]) -> int:
    """Index of the trusted key that signed this key-based bundle for ``digest``."""
    try:
        envelope = json.loads(bundle_json)["dsseEnvelope"]
    except (ValueError, KeyError, TypeError):
        raise VerificationError("malformed Sigstore bundle (no DSSE envelope)") from None
    index, statement = attest.open_envelope(json.dumps(envelope).encode(), public_keys)
    attest.check_statement(statement, digest, COSIGN_SIGN_PREDICATE)
    return index


def attach(client: RegistryClient, repo: str, digest: str, bundle_json: str) -> str:
    """Attach ``bundle_json`` to image ``digest`` as a referrer; return the artifact manifest digest."""
    image_manifest, media_type, _ = client.get_manifest(repo, digest)
    blob = bundle_json.encode()
    client.push_blob(repo, sha256_digest(blob), blob)
    client.push_blob(repo, sha256_digest(b"{}"), b"{}")
    try:
        predicate = json.loads(base64.b64decode(json.loads(bundle_json)["dsseEnvelope"]["payload"]))["predicateType"]
    except (ValueError, KeyError, TypeError):
        predicate = ""
    annotations = {"dev.sigstore.bundle.content": "dsse-envelope", "dev.sigstore.bundle.predicateType": predicate}
    manifest: dict[str, Any] = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "artifactType": BUNDLE_MEDIA,
        "config": {"mediaType": EMPTY_MEDIA, "digest": sha256_digest(b"{}"), "size": 2},
        "layers": [{"mediaType": BUNDLE_MEDIA, "digest": sha256_digest(blob), "size": len(blob)}],
        "subject": {"mediaType": media_type, "digest": digest, "size": len(image_manifest)},
        "annotations": annotations,
    }
    body = json.dumps(manifest, separators=(",", ":")).encode()
    artifact = sha256_digest(body)
    response = client.request(
        "PUT", repo, f"manifests/{artifact}", push=True, data=body, headers={"Content-Type": OCI_MANIFEST}
    )
    if response.status_code != 201:
        raise RegistryError(f"{client.registry}/{repo}: bundle referrer rejected ({response.status_code})")
    if "OCI-Subject" not in response.headers:
        # No referrers API: maintain the fallback index at tag sha256-<hex>.
        try:
            index = json.loads(client.get_manifest(repo, fallback_tag(digest))[0])
        except RegistryError as exc:
            if "404" not in exc.message:
                raise
            index = {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": []}
        if not any(m.get("digest") == artifact for m in index["manifests"]):
            index["manifests"].append(
                {
                    "mediaType": OCI_MANIFEST,
                    "digest": artifact,
                    "size": len(body),
                    "artifactType": BUNDLE_MEDIA,
                    "annotations": annotations,
                }
            )
            client.put_manifest(
                repo, fallback_tag(digest), json.dumps(index, separators=(",", ":")).encode(), OCI_INDEX
            )
    return artifact
