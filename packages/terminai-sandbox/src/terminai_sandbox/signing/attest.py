"""in-toto attestations in DSSE envelopes, stored the way cosign stores them (``.att`` tag).

The statement names the image digest as its subject (``_type``
``https://in-toto.io/Statement/v0.1``, as cosign writes it); the DSSE signature covers
the pre-authentication encoding ``DSSEv1 SP len(type) SP type SP len(body) SP body``.
Each attestation is one layer (media type ``application/vnd.dsse.envelope.v1+json``) of
the OCI manifest at ``sha256-<hex>.att``, with an empty signature annotation and the
``predicateType`` annotation.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

from terminai_sandbox.errors import RegistryError, VerificationError
from terminai_sandbox.registry import OCI_MANIFEST, RegistryClient, sha256_digest
from terminai_sandbox.signing import cosign

DSSE_MEDIA = "application/vnd.dsse.envelope.v1+json"
INTOTO_PAYLOAD = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v0.1"
PREDICATE_TYPES = {
    "cyclonedx": "https://cyclonedx.org/bom",
    "spdxjson": "https://spdx.dev/Document",
    "custom": "https://cosign.sigstore.dev/attestation/v1",
}


def attestation_tag(digest: str) -> str:
    return digest.replace(":", "-") + ".att"


def pae(payload_type: str, body: bytes) -> bytes:
    """DSSE pre-authentication encoding."""
    kind = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(body), body)


def statement(repository: str, digest: str, predicate_type: str, predicate: Any) -> bytes:
    return json.dumps(
        {
            "_type": STATEMENT_TYPE,
            "predicateType": predicate_type,
            "subject": [{"name": repository, "digest": {"sha256": digest.removeprefix("sha256:")}}],
            "predicate": predicate,
        },
        separators=(",", ":"),
        sort_keys=True,
    ).encode()


def envelope(body: bytes, key: ec.EllipticCurvePrivateKey) -> bytes:
    signature = key.sign(pae(INTOTO_PAYLOAD, body), ec.ECDSA(hashes.SHA256()))
    return json.dumps(
        {
            "payloadType": INTOTO_PAYLOAD,
            "payload": base64.b64encode(body).decode(),
            "signatures": [{"keyid": "", "sig": base64.b64encode(signature).decode()}],
        },
        separators=(",", ":"),
    ).encode()


def attest(
    client: RegistryClient,
    repo: str,
    digest: str,
    key: ec.EllipticCurvePrivateKey,
    *,
    repository: str,
    predicate_type: str,
    predicate: Any,
) -> str:
    """Store a signed attestation for ``digest``; return the envelope blob digest."""
    data = envelope(statement(repository, digest, predicate_type, predicate), key)
    tag = attestation_tag(digest)
    layers: list[dict[str, Any]] = []
    try:
        body, _, _ = client.get_manifest(repo, tag)
        layers = list(json.loads(body).get("layers", []))
    except RegistryError as exc:
        if "404" not in exc.message:
            raise
    layers.append(
        {
            "mediaType": DSSE_MEDIA,
            "size": len(data),
            "digest": sha256_digest(data),
            "annotations": {cosign.SIGNATURE_ANNOTATION: "", "predicateType": predicate_type},
        }
    )
    config = cosign._go_config([layer["digest"] for layer in layers])
    client.push_blob(repo, sha256_digest(data), data)
    client.push_blob(repo, sha256_digest(config), config)
    manifest = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": cosign.OCI_CONFIG, "size": len(config), "digest": sha256_digest(config)},
        "layers": layers,
    }
    client.put_manifest(repo, tag, json.dumps(manifest, separators=(",", ":")).encode(), OCI_MANIFEST)
    return sha256_digest(data)


def verify_attestations(
    client: RegistryClient, repo: str, digest: str, public: ec.EllipticCurvePublicKey, predicate_type: str
) -> list[dict[str, Any]]:
    """Statements of ``predicate_type`` for ``digest`` whose DSSE signature verifies with ``public``."""
    try:
        body, _, _ = client.get_manifest(repo, attestation_tag(digest))
    except RegistryError as exc:
        if "404" in exc.message:
            raise VerificationError(f"no attestation found for {digest}") from None
        raise
    verified = []
    for layer in json.loads(body).get("layers", []):
        if layer.get("mediaType") != DSSE_MEDIA or layer.get("annotations", {}).get("predicateType") != predicate_type:
            continue
        env = json.loads(client.get_blob(repo, layer["digest"]))
        statement_bytes = base64.b64decode(env["payload"])
        good = any(
            cosign.verifies(public, pae(env["payloadType"], statement_bytes), base64.b64decode(s["sig"]))
            for s in env.get("signatures", [])
        )
        if not good:
            continue
        doc = json.loads(statement_bytes)
        if doc.get("predicateType") == predicate_type and any(
            s.get("digest", {}).get("sha256") == digest.removeprefix("sha256:") for s in doc.get("subject", [])
        ):
            verified.append(doc)
    if not verified:
        raise VerificationError(f"no {predicate_type} attestation for {digest} verifies with the trusted key")
    return verified
