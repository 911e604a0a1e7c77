"""Keyless (Sigstore) signatures: verify bundles offline, sign with the ambient CI identity.

Verification uses sigstore-python's ``Verifier`` with the public-good trusted root
(offline: no TUF refresh; an explicit ``trusted_root.json`` pins it for air-gapped use)
and checks what the library leaves to the caller: the DSSE payload type is in-toto, a
subject digest equals the image digest, and the predicate type is the expected one.
Identities match exactly or by a full regular expression (``re.fullmatch``).

Signing (CI only: GitHub Actions with ``id-token: write``) builds the in-toto statement
that ``cosign sign`` v3 signs and asks Fulcio and Rekor through sigstore-python.
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

from cryptography import x509

from terminai_sandbox.errors import SigningError, VerificationError
from terminai_sandbox.signing.policy import KeylessIdentity

INTOTO = "application/vnd.in-toto+json"
COSIGN_SIGN_PREDICATE = "https://sigstore.dev/cosign/sign/v1"
_ISSUER_V1 = x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.1")
_ISSUER_V2 = x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.8")


def _cert_identity(cert: x509.Certificate) -> tuple[list[str], str | None]:
    names: list[str] = []
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        names += [str(v) for v in san.get_values_for_type(x509.RFC822Name)]
        names += [str(v) for v in san.get_values_for_type(x509.UniformResourceIdentifier)]
        names += [o.value.decode(errors="replace")[2:] for o in san.get_values_for_type(x509.OtherName)]
    except x509.ExtensionNotFound:
        pass
    issuer = None
    for oid in (_ISSUER_V2, _ISSUER_V1):
        try:
            raw = cert.extensions.get_extension_for_oid(oid).value
        except x509.ExtensionNotFound:
            continue
        data = raw.value if isinstance(raw, x509.UnrecognizedExtension) else b""
        # v2 is a DER UTF8String (tag 0x0c + length), v1 is the raw string.
        issuer = data[2:].decode() if oid == _ISSUER_V2 and data[:1] == b"\x0c" else data.decode()
        break
    return names, issuer


class _IdentityPolicy:
    """sigstore-python policy protocol: exact or full-regexp identity and issuer."""

    def __init__(self, wanted: KeylessIdentity) -> None:
        self.wanted = wanted

    def verify(self, cert: x509.Certificate) -> None:
        from sigstore.errors import VerificationError as SigstoreVerificationError

        names, issuer = _cert_identity(cert)
        w = self.wanted
        if w.issuer is not None and issuer != w.issuer:
            raise SigstoreVerificationError(f"certificate issuer {issuer!r} is not {w.issuer!r}")
        if w.issuer_regexp is not None and not (issuer and re.fullmatch(w.issuer_regexp, issuer)):
            raise SigstoreVerificationError(f"certificate issuer {issuer!r} does not match {w.issuer_regexp!r}")
        if w.identity is not None and w.identity not in names:
            raise SigstoreVerificationError(f"certificate identity {names} is not {w.identity!r}")
        if w.identity_regexp is not None and not any(re.fullmatch(w.identity_regexp, n) for n in names):
            raise SigstoreVerificationError(f"certificate identity {names} does not match {w.identity_regexp!r}")


def verify_bundle(
    bundle_json: str,
    *,
    digest: str,
    identity: KeylessIdentity,
    predicate_type: str | None = None,
    trusted_root: Path | None = None,
) -> dict[str, Any]:
    """Verify a DSSE Sigstore bundle for ``digest`` offline; return the in-toto statement."""
    from sigstore.errors import Error as SigstoreError
    from sigstore.models import Bundle, TrustedRoot
    from sigstore.verify import Verifier

    try:
        bundle = Bundle.from_json(bundle_json)
        verifier = (
            Verifier(trusted_root=TrustedRoot.from_file(str(trusted_root)))
            if trusted_root
            else Verifier.production(offline=True)
        )
        payload_type, payload = verifier.verify_dsse(bundle, _IdentityPolicy(identity))
    except (SigstoreError, ValueError) as exc:
        raise VerificationError(f"keyless bundle rejected: {exc}") from None
    if payload_type != INTOTO:
        raise VerificationError(f"keyless bundle carries {payload_type!r}, not an in-toto statement")
    statement: dict[str, Any] = json.loads(payload)
    hexd = digest.removeprefix("sha256:")
    if not any(s.get("digest", {}).get("sha256") == hexd for s in statement.get("subject", [])):
        raise VerificationError(f"keyless bundle is for another image digest (wanted {digest})")
    if predicate_type is not None and statement.get("predicateType") != predicate_type:
        raise VerificationError(
            f"keyless bundle has predicate {statement.get('predicateType')!r}, wanted {predicate_type!r}"
        )
    return statement


def signing_statement(repository: str, digest: str) -> dict[str, Any]:
    """The statement ``cosign sign`` v3 signs for an image (sigstore-python needs a subject name)."""
    return {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": repository, "digest": {"sha256": digest.removeprefix("sha256:")}}],
        "predicateType": COSIGN_SIGN_PREDICATE,
        "predicate": {},
    }


def sign_keyless(
    repository: str, digest: str, *, predicate_type: str = COSIGN_SIGN_PREDICATE, predicate: Any = None
) -> str:
    """Sign a statement about ``digest`` with the ambient OIDC identity (CI); return the bundle JSON.

    The default statement is the one ``cosign sign`` v3 signs; an attestation passes its own
    predicate type and predicate (e.g. the CycloneDX SBOM). Needs network access.
    """
    from sigstore.dsse import DigestSet, StatementBuilder, Subject
    from sigstore.errors import Error as SigstoreError
    from sigstore.models import ClientTrustConfig
    from sigstore.oidc import IdentityToken, detect_credential
    from sigstore.sign import SigningContext

    try:
        credential = detect_credential()
    except SigstoreError as exc:
        raise SigningError(f"no ambient OIDC identity: {exc}") from None
    if credential is None:
        raise SigningError(
            "no ambient OIDC identity for keyless signing",
            hint="run in GitHub Actions with 'permissions: id-token: write', or sign with --key",
        )
    body = signing_statement(repository, digest)
    statement = (
        StatementBuilder()
        .subjects([Subject(name=repository, digest=DigestSet(root={"sha256": body["subject"][0]["digest"]["sha256"]}))])
        .predicate_type(predicate_type)
        .predicate(predicate if predicate is not None else {})
        .build()
    )
    try:
        context = SigningContext.from_trust_config(ClientTrustConfig.production())
        with context.signer(IdentityToken(credential)) as signer:
            bundle = signer.sign_dsse(statement)
    except SigstoreError as exc:
        raise SigningError(f"keyless signing failed: {exc}") from None
    return str(bundle.to_json())


def statement_digest(bundle_json: str) -> str | None:
    """The first subject digest of a bundle's statement (unverified; for display only)."""
    try:
        env = json.loads(bundle_json)["dsseEnvelope"]
        subject = json.loads(base64.b64decode(env["payload"]))["subject"][0]
        return "sha256:" + str(subject["digest"]["sha256"])
    except (KeyError, ValueError, IndexError):
        return None
