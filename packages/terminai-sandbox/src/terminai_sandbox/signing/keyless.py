"""Keyless (Sigstore) signatures: verify bundles offline, sign with the ambient CI identity.

Verification uses sigstore-python's ``Verifier`` with the public-good trusted root
(offline: no TUF refresh; an explicit ``trusted_root.json`` pins it for air-gapped use)
and checks what the library leaves to the caller: the DSSE payload type is in-toto, a
subject digest equals the image digest, and the predicate type is the expected one.
Identities match exactly or by a full regular expression (``re.fullmatch``).

Signing (CI only: GitHub Actions with ``id-token: write``) opens one session (one
ephemeral key and Fulcio certificate) and signs through sigstore-python: the in-toto
statement ``cosign sign`` v3 signs, and (see :mod:`legacy_keyless`) the simple-signing
payload of cosign's ``.sig`` layout. Both go through :class:`KeylessSigner`, so tests can
inject a signer backed by a test CA and log.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from cryptography import x509

from terminai_sandbox.errors import SigningError, VerificationError
from terminai_sandbox.signing.certs import identity_problem
from terminai_sandbox.signing.policy import KeylessIdentity
from terminai_sandbox.signing.trustroot import SigstoreTrust, from_sigstore

if TYPE_CHECKING:  # sigstore is imported lazily: it is slow to import and only some commands need it
    from sigstore.dsse import Statement
    from sigstore.models import Bundle

INTOTO = "application/vnd.in-toto+json"
COSIGN_SIGN_PREDICATE = "https://sigstore.dev/cosign/sign/v1"


class _IdentityPolicy:
    """sigstore-python policy protocol: exact or full-regexp identity and issuer."""

    def __init__(self, wanted: KeylessIdentity) -> None:
        self.wanted = wanted

    def verify(self, cert: x509.Certificate) -> None:
        from sigstore.errors import VerificationError as SigstoreVerificationError

        problem = identity_problem(cert, self.wanted)
        if problem is not None:
            raise SigstoreVerificationError(problem)


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


class KeylessSigner(Protocol):
    """What signing needs from sigstore-python's ``Signer`` (tests inject their own)."""

    def sign_artifact(self, input_: bytes) -> Bundle: ...

    def sign_dsse(self, input_: Statement) -> Bundle: ...


@dataclass(frozen=True, slots=True)
class KeylessSession:
    """One ephemeral Fulcio certificate for every signature of a run, and the root it chains to."""

    signer: KeylessSigner
    trust: SigstoreTrust


@contextmanager
def ambient_session() -> Iterator[KeylessSession]:
    """A signing session for the ambient OIDC identity (CI). Needs network access."""
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
    try:
        config = ClientTrustConfig.production()
        trust = from_sigstore(config.trusted_root, "the Sigstore public-good trusted root")
        # The signer requests the Fulcio certificate on entry; sigstore errors raised while
        # signing inside the session surface here too.
        with SigningContext.from_trust_config(config).signer(IdentityToken(credential)) as signer:
            yield KeylessSession(signer=signer, trust=trust)
    except SigstoreError as exc:
        raise SigningError(f"keyless signing failed: {exc}") from None


def sign_statement(
    signer: KeylessSigner,
    repository: str,
    digest: str,
    *,
    predicate_type: str = COSIGN_SIGN_PREDICATE,
    predicate: Any = None,
) -> str:
    """Sign a statement about ``digest``; return the bundle JSON.

    The default statement is the one ``cosign sign`` v3 signs; an attestation passes its own
    predicate type and predicate (e.g. the CycloneDX SBOM).
    """
    from sigstore.dsse import DigestSet, StatementBuilder, Subject
    from sigstore.errors import Error as SigstoreError

    body = signing_statement(repository, digest)
    statement = (
        StatementBuilder()
        .subjects([Subject(name=repository, digest=DigestSet(root={"sha256": body["subject"][0]["digest"]["sha256"]}))])
        .predicate_type(predicate_type)
        .predicate(predicate if predicate is not None else {})
        .build()
    )
    try:
        return str(signer.sign_dsse(statement).to_json())
    except SigstoreError as exc:
        raise SigningError(f"keyless signing failed: {exc}") from None


def sign_keyless(
    repository: str, digest: str, *, predicate_type: str = COSIGN_SIGN_PREDICATE, predicate: Any = None
) -> str:
    """Sign a statement about ``digest`` with the ambient OIDC identity (CI); return the bundle JSON."""
    with ambient_session() as session:
        return sign_statement(session.signer, repository, digest, predicate_type=predicate_type, predicate=predicate)


def statement_digest(bundle_json: str) -> str | None:
    """The first subject digest of a bundle's statement (unverified; for display only)."""
    try:
        env = json.loads(bundle_json)["dsseEnvelope"]
        subject = json.loads(base64.b64decode(env["payload"]))["subject"][0]
        return "sha256:" + str(subject["digest"]["sha256"])
    except (KeyError, ValueError, IndexError):
        return None
