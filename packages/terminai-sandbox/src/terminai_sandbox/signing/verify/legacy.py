"""Verify one keyless signature stored in cosign's legacy ``.sig`` layout.

Why not sigstore-python: converting the annotations into a v0.1 ``Bundle`` (inclusion
promise, no inclusion proof) is refused by sigstore-python 4.x: ``TransparencyLogEntry``
requires an inclusion proof with a checkpoint even for v0.1 bundles, and its ``Verifier``
always checks the Merkle proof. cosign's bundle annotation carries no proof, so the checks
below reimplement, with ``cryptography``, what the ``Verifier`` and cosign's
``VerifyBundle`` do for such an entry. A unit test pins that refusal: when sigstore-python
accepts promise-only entries, this module should convert and delegate instead.

Steps (numbered "3k.N": they replace step 3 of :mod:`verify` for keyless layers; steps 4
and 5, payload digest and repository, follow unchanged):

1. The certificate, chain and bundle annotations are present and parse.
2. The signature verifies over the payload with the certificate's key.
3. The SET verifies with the key of the Rekor log the entry names (``logID``), a log of
   the trusted root whose key was valid at the integrated time.
4. The Rekor entry is for this signature: a ``hashedrekord`` whose signature, certificate
   and payload hash equal the layer's (so a SET cannot be borrowed from another entry).
5. The certificate chains to a Fulcio CA of the trusted root at the integrated time (so
   the integrated time lies within the certificate's validity), and carries an SCT
   signed by a CT log of the trusted root.
6. The certificate is a code-signing certificate whose identity and issuer match the policy.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

from terminai_sandbox.errors import VerificationError
from terminai_sandbox.signing.formats import sig
from terminai_sandbox.signing.formats.rekor import (
    BUNDLE_ANNOTATION,
    CERTIFICATE_ANNOTATION,
    CHAIN_ANNOTATION,
    RekorBundle,
)
from terminai_sandbox.signing.formats.trustroot import SigstoreTrust
from terminai_sandbox.signing.verify import certs
from terminai_sandbox.signing.verify.trust import KeylessIdentity

_RESIGN = "re-sign the image with 'terminai-sandbox sign --keyless' (or cosign sign) in CI"


@dataclass(frozen=True, slots=True, kw_only=True)
class KeylessProof:
    identity: str
    issuer: str | None
    log_index: int
    integrated_time: int


def is_keyless(stored: sig.StoredSignature) -> bool:
    """A ``.sig`` layer that claims a certificate (keyless or certificate-based signing)."""
    return CERTIFICATE_ANNOTATION in stored.annotations


def _fail(step: str, message: str, hint: str = _RESIGN) -> VerificationError:
    return VerificationError(f"step 3k.{step}: {message}", hint=hint)


def _certificates(text: str, name: str) -> list[x509.Certificate]:
    try:
        return x509.load_pem_x509_certificates(text.encode()) if text.strip() else []
    except ValueError:
        raise _fail("1", f"malformed {name} annotation: not PEM certificates") from None


def _material(stored: sig.StoredSignature) -> tuple[x509.Certificate, list[x509.Certificate], RekorBundle]:
    # Step 3k.1
    notes = stored.annotations
    for name in (CERTIFICATE_ANNOTATION, CHAIN_ANNOTATION, BUNDLE_ANNOTATION):
        if name not in notes:
            raise _fail("1", f"missing annotation {name}: the keyless signature is incomplete")
    leaf = _certificates(notes[CERTIFICATE_ANNOTATION], CERTIFICATE_ANNOTATION)
    if len(leaf) != 1:
        raise _fail("1", f"{CERTIFICATE_ANNOTATION} must hold exactly one certificate, not {len(leaf)}")
    chain = _certificates(notes[CHAIN_ANNOTATION], CHAIN_ANNOTATION)
    try:
        rekor = RekorBundle.from_annotation(notes[BUNDLE_ANNOTATION])
    except VerificationError as exc:
        raise _fail("1", exc.message) from None
    return leaf[0], chain, rekor


def _check_set(rekor: RekorBundle, trust: SigstoreTrust) -> datetime:
    # Step 3k.3
    log = trust.rekor(rekor.log_id)
    if log is None:
        raise _fail(
            "3",
            f"bad SET: log {rekor.log_id} is not a Rekor log of {trust.source}",
            hint="pass the trusted root of the Sigstore instance that signed it (--trusted-root)",
        )
    when = datetime.fromtimestamp(rekor.integrated_time, tz=UTC)
    if not log.valid.contains(when):
        raise _fail("3", f"bad SET: the key of log {rekor.log_id[:16]}… was not valid at {when.isoformat()}")
    if not isinstance(log.public_key, ec.EllipticCurvePublicKey):
        raise _fail("3", f"bad SET: log {rekor.log_id[:16]}… has a {type(log.public_key).__name__} key, not ECDSA")
    try:
        log.public_key.verify(rekor.signed_entry_timestamp, rekor.signed_payload(), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        raise _fail(
            "3", "bad SET: the Signed Entry Timestamp does not verify (entry, time, index or log altered)"
        ) from None
    return when


def _check_entry(rekor: RekorBundle, stored: sig.StoredSignature, leaf: x509.Certificate) -> None:
    # Step 3k.4, as cosign's VerifyBundle: compare signature, key and payload hash.
    try:
        entry = json.loads(rekor.body)
        kind = (entry["kind"], entry["apiVersion"])
    except (ValueError, KeyError, TypeError):
        raise _fail("4", "the transparency log entry is not a Rekor entry") from None
    if kind != ("hashedrekord", "0.0.1"):
        raise _fail("4", f"the transparency log entry is {kind[0]}/{kind[1]}, not hashedrekord/0.0.1")
    try:
        spec = entry["spec"]
        logged_signature = base64.b64decode(spec["signature"]["content"])
        logged_certs = x509.load_pem_x509_certificates(base64.b64decode(spec["signature"]["publicKey"]["content"]))
        algorithm, value = spec["data"]["hash"]["algorithm"], spec["data"]["hash"]["value"]
    except (ValueError, KeyError, TypeError):
        raise _fail("4", "the transparency log entry is a hashedrekord entry without a certificate") from None
    if logged_signature != stored.signature:
        raise _fail("4", "the transparency log entry records another signature")
    if logged_certs != [leaf]:
        raise _fail("4", "the transparency log entry records another certificate")
    if (algorithm, value) != ("sha256", hashlib.sha256(stored.payload).hexdigest()):
        raise _fail("4", "the transparency log entry records another payload")


def verify_keyless(stored: sig.StoredSignature, identity: KeylessIdentity, trust: SigstoreTrust) -> KeylessProof:
    """Steps 3k.1–3k.6 for one layer; :class:`VerificationError` names the step that failed."""
    leaf, chain, rekor = _material(stored)
    # Step 3k.2
    key = leaf.public_key()
    if not isinstance(key, ec.EllipticCurvePublicKey) or not sig.verifies(key, stored.payload, stored.signature):
        raise _fail("2", "bad signature: it does not verify over the payload with the certificate's key")
    when = _check_set(rekor, trust)
    _check_entry(rekor, stored, leaf)
    # Step 3k.5
    try:
        verified_chain = certs.verify_chain(leaf, chain, trust, when)
        certs.verify_sct(leaf, verified_chain, trust)
    except VerificationError as exc:
        raise _fail(
            "5",
            f"certificate not from a trusted CA: {exc.message}",
            hint=f"pass the trusted root of the Sigstore instance that signed it (--trusted-root), or {_RESIGN}",
        ) from None
    # Step 3k.6
    try:
        certs.check_usage(leaf)
    except VerificationError as exc:
        raise _fail("6", exc.message) from None
    problem = certs.identity_problem(leaf, identity)
    if problem is not None:
        raise _fail(
            "6",
            problem,
            hint="check --certificate-identity / --certificate-oidc-issuer against who signed the image in CI",
        )
    names, issuer = certs.identity_of(leaf)
    pattern = identity.identity_regexp
    matched = next(n for n in names if n == identity.identity or (pattern and re.fullmatch(pattern, n)))
    return KeylessProof(
        identity=matched, issuer=issuer, log_index=rekor.log_index, integrated_time=rekor.integrated_time
    )
