"""Keyless signatures in cosign's legacy ``.sig`` layout (what cosign v2 writes without bundles).

The layer is the same as for key-based signing (the simple-signing payload blob, the
base64 DER signature in ``dev.cosignproject.cosign/signature``) plus three annotations:

* ``dev.sigstore.cosign/certificate``: the PEM Fulcio leaf certificate;
* ``dev.sigstore.cosign/chain``: the PEM CA chain (issuer first, root last);
* ``dev.sigstore.cosign/bundle``: the Rekor v1 entry and its inclusion promise,
  ``{"SignedEntryTimestamp":b64,"Payload":{"body":b64,"integratedTime":N,"logIndex":N,"logID":hex}}``
  (Go field order, compact). ``body`` is the canonicalised ``hashedrekord`` entry; the
  Signed Entry Timestamp (SET) is Rekor's signature over the RFC 8785 form of ``Payload``.

Signing asks sigstore-python's signer for a ``hashedrekord`` signature over the payload
bytes and converts its bundle. Only a Rekor v1 entry has an inclusion promise; a Rekor v2
entry (no SET) cannot be written in this layout and is refused.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from terminai_sandbox.errors import SigningError, VerificationError
from terminai_sandbox.registry import RegistryClient
from terminai_sandbox.signing import cosign
from terminai_sandbox.signing import payload as payload_mod
from terminai_sandbox.signing.keyless import KeylessSigner
from terminai_sandbox.signing.trustroot import SigstoreTrust

CERTIFICATE_ANNOTATION = "dev.sigstore.cosign/certificate"
CHAIN_ANNOTATION = "dev.sigstore.cosign/chain"
BUNDLE_ANNOTATION = "dev.sigstore.cosign/bundle"


@dataclass(frozen=True, slots=True, kw_only=True)
class RekorBundle:
    """cosign's ``dev.sigstore.cosign/bundle``: one Rekor v1 entry and its inclusion promise."""

    signed_entry_timestamp: bytes
    body: bytes
    integrated_time: int
    log_index: int
    log_id: str

    def signed_payload(self) -> bytes:
        """The bytes the SET signs: the RFC 8785 (JCS) form of body, integratedTime, logID, logIndex."""
        # For this shape (ASCII keys, base64/hex strings, integers) JCS is sorted keys with
        # no whitespace, which the standard library produces exactly.
        return json.dumps(
            {
                "body": base64.b64encode(self.body).decode(),
                "integratedTime": self.integrated_time,
                "logID": self.log_id,
                "logIndex": self.log_index,
            },
            sort_keys=True,
            separators=(",", ":"),
        ).encode()

    def to_annotation(self) -> str:
        # Go's json.Marshal of cosign's RekorBundle: struct field order, compact.
        return json.dumps(
            {
                "SignedEntryTimestamp": base64.b64encode(self.signed_entry_timestamp).decode(),
                "Payload": {
                    "body": base64.b64encode(self.body).decode(),
                    "integratedTime": self.integrated_time,
                    "logIndex": self.log_index,
                    "logID": self.log_id,
                },
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_annotation(cls, text: str) -> RekorBundle:
        """Parse the annotation strictly; :class:`VerificationError` naming what is malformed."""
        try:
            data = json.loads(text)
            payload = data["Payload"]
            integrated, index, log_id = payload["integratedTime"], payload["logIndex"], payload["logID"]
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in (integrated, index)):
                raise TypeError("integratedTime and logIndex must be integers")
            if not isinstance(log_id, str) or len(bytes.fromhex(log_id)) != 32:
                raise TypeError("logID must be 64 hex digits")
            return cls(
                signed_entry_timestamp=base64.b64decode(data["SignedEntryTimestamp"], validate=True),
                body=base64.b64decode(payload["body"], validate=True),
                integrated_time=integrated,
                log_index=index,
                log_id=log_id,
            )
        except (ValueError, KeyError, TypeError, binascii.Error) as exc:
            raise VerificationError(
                f"malformed {BUNDLE_ANNOTATION} annotation: {exc!s}",
                hint="the signature layer was altered or written by an incompatible tool; re-sign the image",
            ) from None


def rekor_bundle(bundle_json: str) -> RekorBundle:
    """The Rekor v1 entry of a sigstore-python bundle, as cosign's bundle annotation holds it."""
    try:
        entry: dict[str, Any] = json.loads(bundle_json)["verificationMaterial"]["tlogEntries"][0]
        promise = entry.get("inclusionPromise") or {}
        if "signedEntryTimestamp" not in promise or "integratedTime" not in entry:
            raise SigningError(
                "the transparency log returned no inclusion promise (a Rekor v2 log?): "
                "cosign's .sig layout needs a Rekor v1 entry with a Signed Entry Timestamp",
                hint="sign into a Rekor v1 log, or rely on the Sigstore bundle referrer alone",
            )
        return RekorBundle(
            signed_entry_timestamp=base64.b64decode(promise["signedEntryTimestamp"]),
            body=base64.b64decode(entry["canonicalizedBody"]),
            integrated_time=int(entry["integratedTime"]),
            log_index=int(entry["logIndex"]),
            log_id=base64.b64decode(entry["logId"]["keyId"]).hex(),
        )
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise SigningError(f"unexpected Sigstore bundle from the signer: {exc!s}") from None


def pem(certificates: list[x509.Certificate] | tuple[x509.Certificate, ...]) -> str:
    return "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in certificates)


def layer_annotations(
    signature: bytes, leaf: x509.Certificate, chain: tuple[x509.Certificate, ...], rekor: RekorBundle
) -> dict[str, str]:
    """The layer annotations cosign writes for a keyless signature."""
    return {
        cosign.SIGNATURE_ANNOTATION: base64.b64encode(signature).decode(),
        CERTIFICATE_ANNOTATION: pem([leaf]),
        CHAIN_ANNOTATION: pem(chain),
        BUNDLE_ANNOTATION: rekor.to_annotation(),
    }


def sign(
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

    data = payload_mod.simple_signing(docker_reference, digest, optional)
    try:
        bundle = signer.sign_artifact(data)
    except SigstoreError as exc:
        raise SigningError(f"keyless signing failed: {exc}") from None
    leaf = bundle.signing_certificate
    if not cosign.verifies(_ec_key(leaf), data, bundle.signature):
        raise SigningError("the signer returned a signature its certificate does not verify")
    chain = trust.issuing_chain(leaf)
    if not chain:
        raise SigningError(f"the signing certificate was not issued by a Fulcio CA of {trust.source}")
    notes = layer_annotations(bundle.signature, leaf, chain, rekor_bundle(bundle.to_json()))

    def duplicate(layer: dict[str, Any], blob: bytes) -> bool:
        # cosign's rule: same payload and every non-signature annotation equal, and the
        # stored signature verifies with this signer's key (ECDSA signatures are randomised).
        have = layer.get("annotations") or {}
        same = all(have.get(k) == v for k, v in notes.items() if k != cosign.SIGNATURE_ANNOTATION)
        stored = cosign.stored_signature(layer, blob)
        return same and stored.payload == data and cosign.verifies(_ec_key(leaf), blob, stored.signature)

    added = cosign.append_layer(
        client,
        repo,
        cosign.signature_tag(digest),
        blob=data,
        media_type=payload_mod.MEDIA_TYPE,
        annotations=notes,
        is_duplicate=duplicate,
    )
    return data, notes, added


def _ec_key(cert: x509.Certificate) -> ec.EllipticCurvePublicKey:
    key = cert.public_key()
    if not isinstance(key, ec.EllipticCurvePublicKey):
        raise SigningError(f"the signing certificate holds a {type(key).__name__}, not an ECDSA key")
    return key
