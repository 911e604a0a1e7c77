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
from collections.abc import Mapping
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
    """A key-based v0.3 bundle signing ``digest`` (no transparency-log entry), as ``cosign sign`` v3."""
    statement = {
        "_type": dsse.STATEMENT_V1,
        "subject": [{"name": repository, "digest": {"sha256": digest.removeprefix("sha256:")}}],
        "predicateType": COSIGN_SIGN_PREDICATE,
        "predicate": {},
    }
    return envelope_bundle(dsse.envelope(json.dumps(statement, separators=(",", ":")).encode(), key), key)


def envelope_bundle(envelope: bytes, key: ec.EllipticCurvePrivateKey) -> str:
    """A key-based v0.3 bundle around a DSSE ``envelope`` signed by ``key`` (``cosign attest`` v3 stores
    its attestations this way: cosign 3 reads attestations from bundles once any bundle exists)."""
    bundle = {
        "mediaType": BUNDLE_MEDIA,
        "verificationMaterial": {"publicKey": {"hint": keys.key_id(key.public_key())}, "tlogEntries": []},
        "dsseEnvelope": json.loads(envelope),
    }
    return json.dumps(bundle, separators=(",", ":"))


def bundle_predicate(bundle_json: str) -> str | None:
    """The predicate type a bundle's statement claims, read WITHOUT verifying (to sort bundles only)."""
    try:
        payload = json.loads(bundle_json)["dsseEnvelope"]["payload"]
        value = json.loads(base64.b64decode(payload))["predicateType"]
    except (ValueError, KeyError, TypeError):
        return None
    return value if isinstance(value, str) else None


def key_bundle_envelope(bundle_json: str) -> bytes | None:
    """The DSSE envelope of a key-based bundle (cosign 3's keyed ``sign`` and ``attest``), or None."""
    if not is_key_bundle(bundle_json):
        return None
    try:
        envelope = json.loads(bundle_json)["dsseEnvelope"]
    except (ValueError, KeyError, TypeError):
        return None
    return json.dumps(envelope).encode() if isinstance(envelope, dict) else None


def verify_key_bundle(
    bundle_json: str, digest: str, public_keys: list[ec.EllipticCurvePublicKey]
) -> tuple[int, Mapping[str, Any]]:
    """(index of the trusted key that signed this key-based bundle for ``digest``, its statement)."""
    try:
        envelope = json.loads(bundle_json)["dsseEnvelope"]
    except (ValueError, KeyError, TypeError):
        raise VerificationError("malformed Sigstore bundle (no DSSE envelope)") from None
    index, statement = dsse.open_envelope(json.dumps(envelope).encode(), public_keys, what="signature bundle")
    dsse.check_statement(statement, digest, COSIGN_SIGN_PREDICATE)
    return index, statement


def subject_names(statement: Mapping[str, Any], digest: str) -> list[str]:
    """The ``name`` of each subject of a verified statement that has ``digest``.

    cosign 3's ``sign`` writes subjects without a name (nothing then binds the repository);
    ``terminai-sandbox sign --bundle-format`` and ``attest`` name the repository signed for.
    """
    hexdigest = digest.removeprefix("sha256:")
    return [
        str(subject["name"])
        for subject in statement.get("subject", [])
        if isinstance(subject, dict)
        and isinstance(subject.get("digest"), dict)
        and subject["digest"].get("sha256") == hexdigest
        and subject.get("name")
    ]


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


def bundle_layers(manifest: bytes, subject: str) -> list[str]:
    """Digests of the bundle layers of one referrer artifact manifest whose subject is ``subject``.

    A manifest listed for another subject contributes nothing: the fallback index is an
    ordinary, writable tag, and its entries are only a hint.
    """
    try:
        data = json.loads(manifest)
        if data.get("subject", {}).get("digest") != subject:
            return []
        return [layer["digest"] for layer in data.get("layers", []) if layer.get("mediaType") == BUNDLE_MEDIA]
    except (ValueError, AttributeError, KeyError, TypeError):
        return []


# Index entries that may hold a bundle. The referrers API reports the manifest's own
# ``artifactType``; go-containerregistry's fallback index (written by cosign 3 on a registry
# without the API) reports the config media type instead, the empty descriptor's. Either way
# the manifest itself is read and only its bundle layers count.
_CANDIDATE_TYPES = {BUNDLE_MEDIA, OCI_EMPTY, None}
MAX_REFERRERS = 64  # more referrers than any signer writes for one image: refuse to fetch a flood


def bundle_referrers(index: dict[str, Any]) -> list[str]:
    """Digests of the artifacts a referrers index lists that may carry a Sigstore bundle."""
    found = [
        entry["digest"]
        for entry in index.get("manifests", [])
        if isinstance(entry, dict) and entry.get("artifactType") in _CANDIDATE_TYPES and "digest" in entry
    ]
    if len(found) > MAX_REFERRERS:
        raise VerificationError(
            f"{len(found)} referrers may hold Sigstore bundles; more than {MAX_REFERRERS} are not read",
            hint="the image's referrers were flooded; clean the registry's fallback tag or referrers",
        )
    return found


def tlog_field(bundle_json: str, name: str) -> int | None:
    """A field of the bundle's (already verified) Rekor entry, for display and the audit record."""
    try:
        return int(json.loads(bundle_json)["verificationMaterial"]["tlogEntries"][0][name])
    except (ValueError, KeyError, IndexError, TypeError):
        return None
