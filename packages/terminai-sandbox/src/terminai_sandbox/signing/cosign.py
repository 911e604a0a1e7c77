"""cosign's tag-based signature storage: ``sha256-<hex>.sig`` in the image's repository.

One OCI manifest per signed digest; each signature is one layer holding the payload
blob, with the base64 DER signature in the ``dev.cosignproject.cosign/signature``
annotation. Signing is read-modify-write and accumulates: a new signature is added as a
layer unless an equal one (same payload, verifying under the same key) is already there.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

from terminai_sandbox.errors import RegistryError
from terminai_sandbox.registry import OCI_MANIFEST, RegistryClient, sha256_digest
from terminai_sandbox.signing import payload as payload_mod

SIGNATURE_ANNOTATION = "dev.cosignproject.cosign/signature"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"


def signature_tag(digest: str) -> str:
    return digest.replace(":", "-") + ".sig"


def _go_config(diff_ids: list[str]) -> bytes:
    # Field order of go-containerregistry's ConfigFile, as cosign's empty image writes it.
    history = ",".join('{"created":"0001-01-01T00:00:00Z"}' for _ in diff_ids)
    ids = ",".join(json.dumps(d) for d in diff_ids)
    return (
        '{"architecture":"","created":"0001-01-01T00:00:00Z","history":[' + history + '],"os":"",'
        '"rootfs":{"type":"layers","diff_ids":[' + ids + ']},"config":{}}'
    ).encode()


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredSignature:
    payload: bytes
    payload_digest: str
    signature: bytes
    annotations: dict[str, str]


def fetch(client: RegistryClient, repo: str, digest: str) -> list[StoredSignature]:
    """Every simple-signing layer stored for ``digest`` (empty when there is no .sig tag)."""
    try:
        body, _, _ = client.get_manifest(repo, signature_tag(digest))
    except RegistryError as exc:
        if "404" in exc.message:
            return []
        raise
    manifest = json.loads(body)
    out = []
    for layer in manifest.get("layers", []):
        if layer.get("mediaType") != payload_mod.MEDIA_TYPE:
            continue
        annotations = dict(layer.get("annotations") or {})
        try:
            signature = base64.b64decode(annotations.get(SIGNATURE_ANNOTATION, ""), validate=True)
        except ValueError:
            signature = b""
        data = client.get_blob(repo, layer["digest"])
        out.append(
            StoredSignature(payload=data, payload_digest=layer["digest"], signature=signature, annotations=annotations)
        )
    return out


def verifies(public: ec.EllipticCurvePublicKey, data: bytes, signature: bytes) -> bool:
    try:
        public.verify(signature, data, ec.ECDSA(hashes.SHA256()))
    except (InvalidSignature, ValueError):
        return False
    return True


def sign(
    client: RegistryClient,
    repo: str,
    digest: str,
    key: ec.EllipticCurvePrivateKey,
    *,
    docker_reference: str,
    optional: dict[str, str] | None = None,
) -> tuple[bytes, bytes, bool]:
    """Sign ``digest`` and store it in the .sig tag; return (payload, DER signature, added)."""
    data = payload_mod.simple_signing(docker_reference, digest, optional)
    signature = key.sign(data, ec.ECDSA(hashes.SHA256()))
    tag = signature_tag(digest)
    layers: list[dict[str, Any]] = []
    try:
        body, _, _ = client.get_manifest(repo, tag)
        layers = list(json.loads(body).get("layers", []))
    except RegistryError as exc:
        if "404" not in exc.message:
            raise
    payload_digest = sha256_digest(data)
    public = key.public_key()
    for existing in fetch(client, repo, digest) if layers else []:
        if existing.payload_digest == payload_digest and verifies(public, existing.payload, existing.signature):
            return data, signature, False  # the same claim by the same key is already stored
    layers.append(
        {
            "mediaType": payload_mod.MEDIA_TYPE,
            "size": len(data),
            "digest": payload_digest,
            "annotations": {SIGNATURE_ANNOTATION: base64.b64encode(signature).decode()},
        }
    )
    config = _go_config([layer["digest"] for layer in layers])
    client.push_blob(repo, payload_digest, data)
    client.push_blob(repo, sha256_digest(config), config)
    manifest = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": OCI_CONFIG, "size": len(config), "digest": sha256_digest(config)},
        "layers": layers,
    }
    client.put_manifest(repo, tag, json.dumps(manifest, separators=(",", ":")).encode(), OCI_MANIFEST)
    return data, signature, True
