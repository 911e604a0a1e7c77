"""How a release signs: with a private key (local and air-gapped releases) or keyless (CI).

Both sign the pushed digest and attest the SBOM and the provenance in one step, and say
what they signed as, so the release manifest can name its signer.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from cryptography.hazmat.primitives.asymmetric import ec
from terminai_apts import durable

from terminai_sandbox.registry import RegistryClient
from terminai_sandbox.signing import keyless, sign
from terminai_sandbox.signing.formats import keys
from terminai_sandbox.signing.verify.trust import TrustedKey, VerificationPolicy


class ReleaseSigner(Protocol):
    def sign(
        self, client: RegistryClient, repo: str, digest: str, name: str, predicates: list[tuple[str, Any]], target: Path
    ) -> dict[str, Any]:
        """Sign ``digest`` and attest each (predicate type, predicate); return what to record."""
        ...


@dataclass(frozen=True, slots=True)
class KeySigner:
    key: ec.EllipticCurvePrivateKey

    def policy(self) -> VerificationPolicy:
        return VerificationPolicy(keys=(TrustedKey(pem=keys.public_pem(self.key), source="release key"),))

    def sign(
        self, client: RegistryClient, repo: str, digest: str, name: str, predicates: list[tuple[str, Any]], target: Path
    ) -> dict[str, Any]:
        payload, signature, _ = sign.sign(client, repo, digest, self.key, docker_reference=name)
        for uri, body in predicates:
            sign.attest(client, repo, digest, self.key, subject_name=name, predicate_uri=uri, predicate=body)
        # What an air-gapped verifier (or openssl) needs besides signatures.json.
        durable.write(target / "cosign.pub", keys.public_pem(self.key))
        durable.write(target / "payload.json", payload)
        durable.write(target / "payload.sig", signature)
        return {"key_id": keys.key_id(self.key.public_key())}


@dataclass(frozen=True, slots=True)
class KeylessSigner:
    """The ambient OIDC identity (CI): a bundle referrer and a legacy ``.sig`` layer per signature."""

    session: Callable[[], AbstractContextManager[keyless.KeylessSession]] = keyless.ambient_session

    def sign(
        self, client: RegistryClient, repo: str, digest: str, name: str, predicates: list[tuple[str, Any]], target: Path
    ) -> dict[str, Any]:
        with self.session() as session:
            sign.attach_bundle(client, repo, digest, keyless.sign_statement(session.signer, name, digest))
            sign.sign_legacy_keyless(client, repo, digest, session.signer, session.trust, docker_reference=name)
            for uri, body in predicates:
                bundle = keyless.sign_statement(session.signer, name, digest, predicate_type=uri, predicate=body)
                sign.attach_bundle(client, repo, digest, bundle)
        return {"keyless": True}
