"""The shape of keyless signatures in cosign's legacy ``.sig`` layout (cosign v2 without bundles).

The layer is the same as for key-based signing (the simple-signing payload blob, the
base64 DER signature in ``dev.cosignproject.cosign/signature``) plus three annotations:

* ``dev.sigstore.cosign/certificate``: the PEM Fulcio leaf certificate;
* ``dev.sigstore.cosign/chain``: the PEM CA chain (issuer first, root last);
* ``dev.sigstore.cosign/bundle``: the Rekor v1 entry and its inclusion promise,
  ``{"SignedEntryTimestamp":b64,"Payload":{"body":b64,"integratedTime":N,"logIndex":N,"logID":hex}}``
  (Go field order, compact). ``body`` is the canonicalised ``hashedrekord`` entry; the
  Signed Entry Timestamp (SET) is Rekor's signature over the RFC 8785 form of ``Payload``.

Signing (:func:`terminai_sandbox.signing.sign.sign_legacy_keyless`) asks sigstore-python's
signer for a ``hashedrekord`` signature over the payload bytes and converts its bundle
here. Only a Rekor v1 entry has an inclusion promise; a Rekor v2 entry (no SET) cannot be
written in this layout and is refused.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from terminai_sandbox.errors import SigningError, VerificationError
from terminai_sandbox.signing.formats.sig import SIGNATURE_ANNOTATION

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
        SIGNATURE_ANNOTATION: base64.b64encode(signature).decode(),
        CERTIFICATE_ANNOTATION: pem([leaf]),
        CHAIN_ANNOTATION: pem(chain),
        BUNDLE_ANNOTATION: rekor.to_annotation(),
    }
