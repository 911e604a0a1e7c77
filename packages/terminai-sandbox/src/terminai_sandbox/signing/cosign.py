"""cosign's tag-based signature storage: ``sha256-<hex>.sig`` in the image's repository.

One OCI manifest per signed digest; each signature is one layer holding the payload
blob, with the base64 DER signature in the ``dev.cosignproject.cosign/signature``
annotation. Signing is read-modify-write and accumulates: a new signature is added as a
layer unless an equal one (same payload, verifying under the same key) is already there.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
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


def fetch_layers(client: RegistryClient, repo: str, tag: str, media_type: str) -> list[tuple[dict[str, Any], bytes]]:
    """(descriptor, checked blob bytes) of each ``media_type`` layer at ``tag``; [] when the tag is absent."""
    try:
        body, _, _ = client.get_manifest(repo, tag)
    except RegistryError as exc:
        if "404" in exc.message:
            return []
        raise
    return [
        (layer, client.get_blob(repo, layer["digest"]))
        for layer in json.loads(body).get("layers", [])
        if layer.get("mediaType") == media_type
    ]


def fetch(client: RegistryClient, repo: str, digest: str) -> list[StoredSignature]:
    """Every simple-signing layer stored for ``digest`` (empty when there is no .sig tag)."""
    return [
        stored_signature(layer, data)
        for layer, data in fetch_layers(client, repo, signature_tag(digest), payload_mod.MEDIA_TYPE)
    ]


def stored_signature(layer: dict[str, Any], data: bytes) -> StoredSignature:
    annotations = dict(layer.get("annotations") or {})
    try:
        signature = base64.b64decode(annotations.get(SIGNATURE_ANNOTATION, ""), validate=True)
    except ValueError:
        signature = b""
    return StoredSignature(payload=data, payload_digest=layer["digest"], signature=signature, annotations=annotations)


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
    public = key.public_key()
    added = append_layer(
        client,
        repo,
        signature_tag(digest),
        blob=data,
        media_type=payload_mod.MEDIA_TYPE,
        annotations={SIGNATURE_ANNOTATION: base64.b64encode(signature).decode()},
        is_duplicate=lambda layer, blob: (
            layer.get("digest") == sha256_digest(data)
            and verifies(public, blob, base64.b64decode(layer.get("annotations", {}).get(SIGNATURE_ANNOTATION, "")))
        ),
    )
    return data, signature, added


def append_layer(
    client: RegistryClient,
    repo: str,
    tag: str,
    *,
    blob: bytes,
    media_type: str,
    annotations: dict[str, str],
    is_duplicate: Callable[[dict[str, Any], bytes], bool],
) -> bool:
    """Add one layer to the cosign manifest at ``tag`` (read-modify-write, as cosign does).

    Skipped (returns False) when a layer of the same media type exists for which
    ``is_duplicate`` says it carries an equivalent claim (ECDSA signatures are randomised,
    so equal claims are recognised by verifying, not by comparing bytes).
    """
    layers: list[dict[str, Any]] = []
    try:
        body, _, _ = client.get_manifest(repo, tag)
        layers = list(json.loads(body).get("layers", []))
    except RegistryError as exc:
        if "404" not in exc.message:
            raise
    blob_digest = sha256_digest(blob)
    for layer in layers:
        if layer.get("mediaType") == media_type and is_duplicate(layer, client.get_blob(repo, layer["digest"])):
            return False
    layers.append({"mediaType": media_type, "size": len(blob), "digest": blob_digest, "annotations": annotations})
    config = _go_config([layer["digest"] for layer in layers])
    client.push_blob(repo, blob_digest, blob)
    client.push_blob(repo, sha256_digest(config), config)
    manifest = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": OCI_CONFIG, "size": len(config), "digest": sha256_digest(config)},
        "layers": layers,
    }
    client.put_manifest(repo, tag, json.dumps(manifest, separators=(",", ":")).encode(), OCI_MANIFEST)
    return True
