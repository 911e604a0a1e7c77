"""Keyless (Sigstore) signing with the ambient CI identity.

Verifying keyless bundles is :mod:`terminai_sandbox.signing.verify.sigstore_bundle`.

Signing (CI only: GitHub Actions with ``id-token: write``) opens one session (one
ephemeral key and Fulcio certificate) and signs through sigstore-python: the in-toto
statement ``cosign sign`` v3 signs, and (see :mod:`.formats.rekor`) the simple-signing
payload of cosign's ``.sig`` layout. Both go through :class:`KeylessSigner`, so tests can
inject a signer backed by a test CA and log.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from terminai_sandbox.errors import SigningError
from terminai_sandbox.signing.formats.bundle import COSIGN_SIGN_PREDICATE
from terminai_sandbox.signing.formats.trustroot import SigstoreTrust, from_sigstore

if TYPE_CHECKING:  # sigstore is imported lazily: it is slow to import and only some commands need it
    from sigstore.dsse import Statement
    from sigstore.models import Bundle


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
