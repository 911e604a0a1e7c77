"""Sigstore bundles and the OCI 1.1 referrer shapes that attach them (cosign v3's default format).

A bundle (``application/vnd.dev.sigstore.bundle.v0.3+json``) is the single layer of an
artifact manifest whose ``subject`` is the signed image. Registries without the referrers
API (distribution 2.8) get the OCI fallback: an index at tag ``sha256-<hex>`` listing the
referrers, updated read-modify-write (by :mod:`terminai_sandbox.signing.store`).

Key-based bundles carry a DSSE envelope over the statement ``cosign sign`` v3 signs
(predicate ``https://sigstore.dev/cosign/sign/v1``) and a public key hint; they are
verified here with the policy's keys (sigstore-python accepts only certificate bundles).
"""

from __future__ import annotations

import base64
import json
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ec

from terminai_sandbox.errors import VerificationError
from terminai_sandbox.oci_media import OCI_EMPTY, OCI_INDEX, OCI_MANIFEST, sha256_digest
from terminai_sandbox.signing.formats import dsse, keys

BUNDLE_MEDIA = "application/vnd.dev.sigstore.bundle.v0.3+json"
EMPTY_CONFIG = b"{}"
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
        "_type": dsse.STATEMENT_V1,
        "subject": [{"name": repository, "digest": {"sha256": digest.removeprefix("sha256:")}}],
        "predicateType": COSIGN_SIGN_PREDICATE,
        "predicate": {},
    }
    envelope = json.loads(dsse.envelope(json.dumps(statement, separators=(",", ":")).encode(), key))
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
    index, statement = dsse.open_envelope(json.dumps(envelope).encode(), public_keys)
    dsse.check_statement(statement, digest, COSIGN_SIGN_PREDICATE)
    return index


def referrer_manifest(bundle_json: str, *, subject_digest: str, subject_media: str, subject_size: int) -> bytes:
    """The artifact manifest that attaches ``bundle_json`` to the image ``subject_digest``."""
    blob = bundle_json.encode()
    manifest: dict[str, Any] = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "artifactType": BUNDLE_MEDIA,
        "config": {"mediaType": OCI_EMPTY, "digest": sha256_digest(EMPTY_CONFIG), "size": len(EMPTY_CONFIG)},
        "layers": [{"mediaType": BUNDLE_MEDIA, "digest": sha256_digest(blob), "size": len(blob)}],
        "subject": {"mediaType": subject_media, "digest": subject_digest, "size": subject_size},
        "annotations": referrer_annotations(bundle_json),
    }
    return json.dumps(manifest, separators=(",", ":")).encode()


def referrer_annotations(bundle_json: str) -> dict[str, str]:
    try:
        predicate = json.loads(base64.b64decode(json.loads(bundle_json)["dsseEnvelope"]["payload"]))["predicateType"]
    except (ValueError, KeyError, TypeError):
        predicate = ""
    return {"dev.sigstore.bundle.content": "dsse-envelope", "dev.sigstore.bundle.predicateType": predicate}


def with_referrer(
    index: dict[str, Any] | None, artifact: str, manifest: bytes, bundle_json: str
) -> dict[str, Any] | None:
    """The fallback index (tag ``sha256-<hex>``) listing ``artifact``; None when it already does."""
    index = index if index is not None else {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": []}
    if any(m.get("digest") == artifact for m in index["manifests"]):
        return None
    entry = {
        "mediaType": OCI_MANIFEST,
        "digest": artifact,
        "size": len(manifest),
        "artifactType": BUNDLE_MEDIA,
        "annotations": referrer_annotations(bundle_json),
    }
    return {**index, "manifests": [*index["manifests"], entry]}


def bundle_layers(manifest: bytes) -> list[str]:
    """Digests of the bundle layers of one referrer artifact manifest."""
    return [
        layer["digest"] for layer in json.loads(manifest).get("layers", []) if layer.get("mediaType") == BUNDLE_MEDIA
    ]


def bundle_referrers(index: dict[str, Any]) -> list[str]:
    """Digests of the Sigstore-bundle artifacts a referrers index lists."""
    return [entry["digest"] for entry in index.get("manifests", []) if entry.get("artifactType") == BUNDLE_MEDIA]


def tlog_field(bundle_json: str, name: str) -> int | None:
    """A field of the bundle's (already verified) Rekor entry, for display and the audit record."""
    try:
        return int(json.loads(bundle_json)["verificationMaterial"]["tlogEntries"][0][name])
    except (ValueError, KeyError, IndexError, TypeError):
        return None
