"""Fulcio signing certificates: chain, embedded SCT, usage, identity and issuer.

The same rules sigstore-python's ``Verifier`` applies to a bundle's certificate, for
certificates that arrive outside a bundle (cosign's ``.sig`` annotations):

* the chain is built to a CA of the trusted root at a *verified* time (the transparency
  log's integrated time), with the Web PKI extension profile except that the extended key
  usage is ``codeSigning``, not ``clientAuth`` (checked separately);
* the certificate carries an SCT (RFC 6962 precertificate timestamp) signed by a CT log of
  the trusted root (cosign refuses certificates without one by default, too);
* the identity (a SAN) and the OIDC issuer (Fulcio extension OIDs) match the policy,
  exactly or by a full regular expression (``re.fullmatch``).
"""

from __future__ import annotations

import hashlib
import re
import struct
from collections.abc import Sequence
from datetime import datetime

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.certificate_transparency import LogEntryType, SignedCertificateTimestamp
from cryptography.x509.oid import ExtendedKeyUsageOID
from cryptography.x509.verification import Criticality, ExtensionPolicy, PolicyBuilder, Store
from cryptography.x509.verification import VerificationError as X509VerificationError

from terminai_sandbox.errors import VerificationError
from terminai_sandbox.signing.formats.trustroot import SigstoreTrust
from terminai_sandbox.signing.verify.trust import KeylessIdentity

ISSUER_V1 = x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.1")
ISSUER_V2 = x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.8")


def identity_of(cert: x509.Certificate) -> tuple[list[str], str | None]:
    """The certificate's identities (SAN e-mail, URI, other name) and its OIDC issuer."""
    names: list[str] = []
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        names += [str(v) for v in san.get_values_for_type(x509.RFC822Name)]
        names += [str(v) for v in san.get_values_for_type(x509.UniformResourceIdentifier)]
        names += [o.value.decode(errors="replace")[2:] for o in san.get_values_for_type(x509.OtherName)]
    except x509.ExtensionNotFound:
        pass
    issuer = None
    for oid in (ISSUER_V2, ISSUER_V1):
        try:
            raw = cert.extensions.get_extension_for_oid(oid).value
        except x509.ExtensionNotFound:
            continue
        data = raw.value if isinstance(raw, x509.UnrecognizedExtension) else b""
        # v2 is a DER UTF8String (tag 0x0c + length), v1 is the raw string.
        issuer = data[2:].decode() if oid == ISSUER_V2 and data[:1] == b"\x0c" else data.decode()
        break
    return names, issuer


def identity_problem(cert: x509.Certificate, wanted: KeylessIdentity) -> str | None:
    """Why ``cert`` does not match ``wanted`` (issuer first, then identity); None when it does."""
    names, issuer = identity_of(cert)
    if wanted.issuer is not None and issuer != wanted.issuer:
        return f"issuer mismatch: certificate issuer {issuer!r} is not {wanted.issuer!r}"
    if wanted.issuer_regexp is not None and not (issuer and re.fullmatch(wanted.issuer_regexp, issuer)):
        return f"issuer mismatch: certificate issuer {issuer!r} does not match {wanted.issuer_regexp!r}"
    if wanted.identity is not None and wanted.identity not in names:
        return f"identity mismatch: certificate identity {names} is not {wanted.identity!r}"
    if wanted.identity_regexp is not None and not any(re.fullmatch(wanted.identity_regexp, n) for n in names):
        return f"identity mismatch: certificate identity {names} does not match {wanted.identity_regexp!r}"
    return None


def check_usage(cert: x509.Certificate) -> None:
    """Fulcio's profile: a digital-signature key for code signing."""
    try:
        usage = cert.extensions.get_extension_for_class(x509.KeyUsage).value
        extended = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    except x509.ExtensionNotFound as exc:
        raise VerificationError(
            f"the signing certificate lacks extension {exc.oid.dotted_string}: not a Fulcio certificate"
        ) from None
    if not usage.digital_signature or ExtendedKeyUsageOID.CODE_SIGNING not in extended:
        raise VerificationError("the signing certificate is not for digital signatures / code signing")


def verify_chain(
    leaf: x509.Certificate, untrusted: Sequence[x509.Certificate], trust: SigstoreTrust, at: datetime
) -> list[x509.Certificate]:
    """The chain (issuer first) from ``leaf`` to a trusted Fulcio CA, valid at ``at``.

    ``untrusted`` (the signature's chain annotation) only helps path building: every
    anchor comes from the trusted root.
    """
    if not leaf.not_valid_before_utc <= at <= leaf.not_valid_after_utc:
        raise VerificationError(
            f"the log's integrated time {at.isoformat()} is outside the certificate's validity "
            f"({leaf.not_valid_before_utc.isoformat()} to {leaf.not_valid_after_utc.isoformat()})"
        )
    # Fulcio certificates carry codeSigning, not the clientAuth the client profile expects;
    # sigstore-python relaxes exactly this (EKU is checked by check_usage).
    ca_policy = ExtensionPolicy.webpki_defaults_ca().may_be_present(
        x509.ExtendedKeyUsage, Criticality.NON_CRITICAL, None
    )
    ee_policy = ExtensionPolicy.webpki_defaults_ee().may_be_present(
        x509.ExtendedKeyUsage, Criticality.NON_CRITICAL, None
    )
    verifier = (
        PolicyBuilder()
        .store(Store(trust.ca_certificates()))
        .time(at)
        .extension_policies(ca_policy=ca_policy, ee_policy=ee_policy)
        .build_client_verifier()
    )
    try:
        return list(verifier.verify(leaf, list(untrusted)).chain[1:])
    except (X509VerificationError, x509.UnsupportedGeneralNameType) as exc:
        raise VerificationError(
            f"the signing certificate does not chain to a Fulcio CA of {trust.source}: {exc}"
        ) from None


def _signed_sct_data(sct: SignedCertificateTimestamp, leaf: x509.Certificate, issuer_key_hash: bytes) -> bytes:
    # RFC 6962 §3.2 digitally-signed struct for a precertificate entry: the leaf's TBS
    # without the SCT list, bound to the issuer's key (sha256 of its SubjectPublicKeyInfo).
    tbs = leaf.tbs_precertificate_bytes
    millis = int(sct.timestamp.timestamp() * 1000)
    return (
        struct.pack("!BBQH", sct.version.value, 0, millis, sct.entry_type.value)
        + issuer_key_hash
        + len(tbs).to_bytes(3, "big")
        + tbs
        + struct.pack("!H", len(sct.extension_bytes))
        + sct.extension_bytes
    )


def verify_sct(leaf: x509.Certificate, chain: Sequence[x509.Certificate], trust: SigstoreTrust) -> None:
    """At least one embedded SCT is signed by a CT log of the trusted root."""
    try:
        scts = list(leaf.extensions.get_extension_for_class(x509.PrecertificateSignedCertificateTimestamps).value)
    except x509.ExtensionNotFound:
        raise VerificationError("the signing certificate has no embedded SCT (certificate transparency)") from None
    issuer = chain[0]
    extended = _extended_usage(issuer)
    if ExtendedKeyUsageOID.CERTIFICATE_TRANSPARENCY in extended and len(chain) > 1:
        issuer = chain[1]  # a precertificate signing certificate stands in for the real issuer
    spki = issuer.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    issuer_key_hash = hashlib.sha256(spki).digest()
    for sct in scts:
        log = trust.ct(sct.log_id.hex())
        if log is None or sct.entry_type != LogEntryType.PRE_CERTIFICATE:
            continue
        if not isinstance(log.public_key, ec.EllipticCurvePublicKey):
            continue
        try:
            signed = _signed_sct_data(sct, leaf, issuer_key_hash)
            log.public_key.verify(sct.signature, signed, ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            continue
        return
    raise VerificationError(f"no SCT of the signing certificate is signed by a CT log of {trust.source}")


def _extended_usage(cert: x509.Certificate) -> list[x509.ObjectIdentifier]:
    try:
        return list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value)
    except x509.ExtensionNotFound:
        return []
