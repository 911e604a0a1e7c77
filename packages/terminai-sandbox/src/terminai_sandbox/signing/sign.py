"""Produce signatures and attestations and store them where cosign looks for them.

Each function makes the claim with :mod:`~terminai_sandbox.signing.formats` and writes it
through :class:`~terminai_sandbox.signing.store.RegistryStore`. Signing accumulates: a new
layer is added unless an equivalent claim (same payload, verifying under the same key) is
already stored, so re-running a release does not pile up copies.
"""

from __future__ import annotations

import base64
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec

from terminai_sandbox.errors import SigningError
from terminai_sandbox.registry import RegistryClient
from terminai_sandbox.signing.formats import dsse, rekor, sig
from terminai_sandbox.signing.formats import payload as payload_format
from terminai_sandbox.signing.formats.trustroot import SigstoreTrust
from terminai_sandbox.signing.keyless import KeylessSigner
from terminai_sandbox.signing.store import RegistryStore


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
    RegistryStore(client, repo).require_image(digest, "sign")
    data, signature = sig.sign_payload(key, docker_reference=docker_reference, digest=digest, optional=optional)
    added = RegistryStore(client, repo).append_layer(
        sig.signature_tag(digest),
        blob=data,
        media_type=payload_format.MEDIA_TYPE,
        annotations={sig.SIGNATURE_ANNOTATION: base64.b64encode(signature).decode()},
        is_duplicate=sig.signed_by(key.public_key(), data),
    )
    return data, signature, added


def attest(
    client: RegistryClient,
    repo: str,
    digest: str,
    key: ec.EllipticCurvePrivateKey,
    *,
    subject_name: str,
    predicate_uri: str,
    predicate: Any,
) -> tuple[bytes, bool]:
    """Store a signed attestation for ``digest`` in the .att tag; return (envelope bytes, added)."""
    RegistryStore(client, repo).require_image(digest, "attest")
    body = dsse.statement(subject_name, digest, predicate_uri, predicate)
    env = dsse.envelope(body, key)
    added = RegistryStore(client, repo).append_layer(
        dsse.attestation_tag(digest),
        blob=env,
        media_type=dsse.DSSE_MEDIA_TYPE,
        annotations={sig.SIGNATURE_ANNOTATION: "", "predicateType": predicate_uri},
        is_duplicate=dsse.same_statement(key.public_key(), body),
    )
    return env, added


def attach_bundle(client: RegistryClient, repo: str, digest: str, bundle_json: str) -> str:
    """Attach a Sigstore bundle to ``digest`` as an OCI referrer; return the artifact digest."""
    return RegistryStore(client, repo).attach_bundle(digest, bundle_json)


def sign_legacy_keyless(
    client: RegistryClient,
    repo: str,
    digest: str,
    signer: KeylessSigner,
    trust: SigstoreTrust,
    *,
    docker_reference: str,
    optional: dict[str, str] | None = None,
) -> tuple[bytes, dict[str, str], bool]:
    """Sign ``digest`` keyless and add the layer to its ``.sig`` tag; return (payload, annotations, added)."""
    from sigstore.errors import Error as SigstoreError  # noqa: PLC0415 (slow import, keyless only)

    RegistryStore(client, repo).require_image(digest, "sign")
    data = payload_format.simple_signing(docker_reference, digest, optional)
    try:
        bundle = signer.sign_artifact(data)
    except SigstoreError as exc:
        raise SigningError(f"keyless signing failed: {exc}") from None
    leaf = bundle.signing_certificate
    if not sig.verifies(_ec_key(leaf), data, bundle.signature):
        raise SigningError("the signer returned a signature its certificate does not verify")
    chain = trust.issuing_chain(leaf)
    if not chain:
        raise SigningError(f"the signing certificate was not issued by a Fulcio CA of {trust.source}")
    notes = rekor.layer_annotations(bundle.signature, leaf, chain, rekor.rekor_bundle(bundle.to_json()))

    def duplicate(layer: dict[str, Any], blob: bytes) -> bool:
        # cosign's rule: same payload and every non-signature annotation equal, and the
        # stored signature verifies with this signer's key (ECDSA signatures are randomised).
        have = layer.get("annotations") or {}
        same = all(have.get(k) == v for k, v in notes.items() if k != sig.SIGNATURE_ANNOTATION)
        stored = sig.stored_signature(layer, blob)
        return same and stored.payload == data and sig.verifies(_ec_key(leaf), blob, stored.signature)

    added = RegistryStore(client, repo).append_layer(
        sig.signature_tag(digest),
        blob=data,
        media_type=payload_format.MEDIA_TYPE,
        annotations=notes,
        is_duplicate=duplicate,
    )
    return data, notes, added


def _ec_key(cert: x509.Certificate) -> ec.EllipticCurvePublicKey:
    key = cert.public_key()
    if not isinstance(key, ec.EllipticCurvePublicKey):
        raise SigningError(f"the signing certificate holds a {type(key).__name__}, not an ECDSA key")
    return key
