"""Keyless (Sigstore) signing with the ambient CI identity.

Verifying keyless bundles is :mod:`terminai_sandbox.signing.verify.sigstore_bundle`.

Signing (CI only: GitHub Actions with ``id-token: write``) opens one session (one
ephemeral key and Fulcio certificate) and signs through sigstore-python: the in-toto
statement ``cosign sign`` v3 signs, and (see :mod:`.formats.rekor`) the simple-signing
payload of cosign's ``.sig`` layout. Both go through :class:`KeylessSigner`, so tests can
inject a signer backed by a test CA and log.

Deadline: every step that reaches a Sigstore service (the ambient OIDC token, the TUF
refresh of the trusted root, the Fulcio certificate, each Rekor entry) ends by the command's
total deadline (:class:`~terminai_sandbox.common.deadlines.CommandDeadline`,
docs/DEADLINES.md). sigstore-python bounds them only per socket read, and its Fulcio request
not at all, so a server that trickles or stalls would hold ``sign --keyless`` for ever; the
step runs in a worker thread that is waited for no longer than the deadline.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from terminai_sandbox.common import deadlines
from terminai_sandbox.errors import SigningError
from terminai_sandbox.signing.formats.bundle import COSIGN_SIGN_PREDICATE
from terminai_sandbox.signing.formats.trustroot import SigstoreTrust, from_sigstore

if TYPE_CHECKING:  # sigstore is imported lazily: it is slow to import and only some commands need it
    from sigstore.dsse import Statement
    from sigstore.models import Bundle, ClientTrustConfig

T = TypeVar("T")
#: Who is slow when a keyless step misses the deadline: the step names which of them it asked.
SIGSTORE = "Sigstore (Fulcio, Rekor, the OIDC token service or the TUF repository)"


def within_deadline(what: str, call: Callable[[], T]) -> T:
    """``call()``, or :class:`SigningError` once the command's total deadline passes first.

    The call runs in a daemon thread: nothing can interrupt sigstore-python's blocking
    reads from outside, so a step past the deadline is abandoned, not stopped; it holds
    only a socket, which the process's exit closes (the command is failing by then).
    Without a command deadline (a library caller) the ``sign`` command's default applies.
    """
    command = deadlines.active() or deadlines.CommandDeadline("sign", deadlines.COMMAND_SECONDS["sign"])
    box: list[tuple[bool, Any]] = []

    def work() -> None:
        try:
            box.append((True, call()))
        except BaseException as exc:  # handed to the caller's thread, raised there
            box.append((False, exc))

    worker = threading.Thread(target=work, name=f"keyless: {what}", daemon=True)
    worker.start()
    worker.join(max(0.0, command.left()))
    if not box:
        raise SigningError(
            f"keyless signing: {what} did not finish within {command.describe()}", hint=command.hint(SIGSTORE)
        )
    done, value = box[0]
    if not done:
        raise value
    return value  # type: ignore[no-any-return]


@dataclass(frozen=True, slots=True)
class _BoundedSigner:
    """A :class:`KeylessSigner` whose every signature (one Rekor entry each) ends by the deadline."""

    inner: KeylessSigner

    def sign_artifact(self, input_: bytes) -> Bundle:
        return within_deadline("logging a signature in Rekor", lambda: self.inner.sign_artifact(input_))

    def sign_dsse(self, input_: Statement) -> Bundle:
        return within_deadline("logging a signature in Rekor", lambda: self.inner.sign_dsse(input_))


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
def ambient_session(
    *, trust_config: Callable[[], ClientTrustConfig] | None = None, credential: Callable[[], str | None] | None = None
) -> Iterator[KeylessSession]:
    """A signing session for the ambient OIDC identity (CI). Needs network access.

    ``trust_config`` reads the Sigstore instance's trust configuration (default: the
    public-good instance, refreshed over TUF) and ``credential`` finds the OIDC token
    (default: sigstore-python's ambient detection); a private instance passes its own.
    Each network step ends by the command's deadline (:func:`within_deadline`).
    """
    from sigstore.errors import Error as SigstoreError
    from sigstore.models import ClientTrustConfig
    from sigstore.oidc import IdentityToken, detect_credential
    from sigstore.sign import SigningContext

    try:
        token = within_deadline("getting the ambient OIDC token", credential or detect_credential)
    except SigstoreError as exc:
        raise SigningError(f"no ambient OIDC identity: {exc}") from None
    if token is None:
        raise SigningError(
            "no ambient OIDC identity for keyless signing",
            hint="run in GitHub Actions with 'permissions: id-token: write', or sign with --key",
        )
    try:
        config = within_deadline(
            "refreshing the Sigstore trusted root over TUF", trust_config or ClientTrustConfig.production
        )
        trust = from_sigstore(config.trusted_root, "the Sigstore public-good trusted root")
        context = SigningContext.from_trust_config(config)
        identity = IdentityToken(token)
        # The signer requests the Fulcio certificate on entry; sigstore errors raised while
        # signing inside the session surface here too.
        manager = context.signer(identity)
        signer = within_deadline("getting a signing certificate from Fulcio", manager.__enter__)
        try:
            yield KeylessSession(signer=_BoundedSigner(signer), trust=trust)
        finally:
            manager.__exit__(None, None, None)
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
