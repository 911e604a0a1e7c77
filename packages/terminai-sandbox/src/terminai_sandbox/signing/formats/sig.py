"""The shape of cosign's tag-based signatures: ``sha256-<hex>.sig`` (and ``.att``) manifests.

One OCI manifest per signed digest; each signature is one layer holding the payload
blob, with the base64 DER signature in the ``dev.cosignproject.cosign/signature``
annotation. This module builds and reads those shapes and checks an ECDSA signature;
storing them (read-modify-write, accumulating layers) is :mod:`terminai_sandbox.signing.store`.
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

from terminai_sandbox.oci_media import OCI_CONFIG, OCI_MANIFEST, sha256_digest
from terminai_sandbox.signing.formats import payload as payload_mod

SIGNATURE_ANNOTATION = "dev.cosignproject.cosign/signature"


def signature_tag(digest: str) -> str:
    return digest.replace(":", "-") + ".sig"


def go_config(diff_ids: list[str]) -> bytes:
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


def sign_payload(
    key: ec.EllipticCurvePrivateKey, *, docker_reference: str, digest: str, optional: dict[str, str] | None = None
) -> tuple[bytes, bytes]:
    """(simple-signing payload, DER ECDSA signature over it) for ``digest``."""
    data = payload_mod.simple_signing(docker_reference, digest, optional)
    return data, key.sign(data, ec.ECDSA(hashes.SHA256()))


def signed_by(public: ec.EllipticCurvePublicKey, payload: bytes) -> Callable[[dict[str, Any], bytes], bool]:
    """Whether a stored ``.sig`` layer already carries ``payload`` signed by ``public``.

    ECDSA signatures are randomised, so equal claims are recognised by verifying, not by
    comparing bytes.
    """

    def same(layer: dict[str, Any], blob: bytes) -> bool:
        annotation = (layer.get("annotations") or {}).get(SIGNATURE_ANNOTATION, "")
        return layer.get("digest") == sha256_digest(payload) and verifies(public, blob, base64.b64decode(annotation))

    return same


def manifest(layers: list[dict[str, Any]]) -> tuple[bytes, bytes]:
    """(config blob, manifest bytes) of a cosign signature image holding ``layers``."""
    config = go_config([layer["digest"] for layer in layers])
    body = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": OCI_CONFIG, "size": len(config), "digest": sha256_digest(config)},
        "layers": layers,
    }
    return config, json.dumps(body, separators=(",", ":")).encode()
