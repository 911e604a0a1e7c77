"""Verification policies: each returns what it established or raises; they compose.

Modelled on sigstore-python's ``verify/policy.py``: a policy has one method, ``verify``,
which returns :class:`~.result.Evidence` or raises
:class:`~terminai_sandbox.errors.VerificationError`. :class:`AllOf` combines policies and
refuses an empty list (an empty conjunction would pass everything).

The leaf policies are the numbered steps of :mod:`terminai_sandbox.signing.verify`:
:class:`SignedBy` (steps 2-5, keyless then keyed) and :class:`Attested` (step 6).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from terminai_sandbox.common.reference import ImageRef
from terminai_sandbox.errors import VerificationError
from terminai_sandbox.signing.formats import dsse, sig
from terminai_sandbox.signing.store import SignatureSource
from terminai_sandbox.signing.verify.attestations import verify_attestation
from terminai_sandbox.signing.verify.by_identity import verify_keyless
from terminai_sandbox.signing.verify.by_key import verify_keyed
from terminai_sandbox.signing.verify.result import Evidence, VerificationResult
from terminai_sandbox.signing.verify.trust import VerificationPolicy


class Policy(Protocol):
    """Check one image (pinned: ``digest``) against what ``source`` stores for it."""

    def verify(self, ref: ImageRef, digest: str, source: SignatureSource) -> Evidence: ...


class AllOf:
    """Every policy must pass; the first refusal is raised. The evidence adds up."""

    def __init__(self, policies: Sequence[Policy]) -> None:
        if not policies:
            raise VerificationError("an AllOf policy needs at least one policy: an empty one would pass anything")
        self.policies = tuple(policies)

    def verify(self, ref: ImageRef, digest: str, source: SignatureSource) -> Evidence:
        evidence = Evidence()
        for policy in self.policies:
            evidence += policy.verify(ref, digest, source)
        return evidence


@dataclass(frozen=True, slots=True)
class SignedBy:
    """Steps 2-5: some signature for the digest passes under the trusted keys or identities."""

    trust: VerificationPolicy
    trusted_root: Path | None = None

    def verify(self, ref: ImageRef, digest: str, source: SignatureSource) -> Evidence:
        result = verify_signatures(ref, digest, self.trust, source, self.trusted_root)
        return Evidence(signatures=result.signatures)


@dataclass(frozen=True, slots=True)
class Attested:
    """Step 6: a verified attestation of type ``kind`` (a cosign ``--type`` name or a URI)."""

    trust: VerificationPolicy
    kind: str
    trusted_root: Path | None = None

    def verify(self, ref: ImageRef, digest: str, source: SignatureSource) -> Evidence:
        claims = verify_attestation(digest, self.trust, source, dsse.predicate_type(self.kind), self.trusted_root)
        return Evidence(claims=claims)


def verify_signatures(
    ref: ImageRef, digest: str, policy: VerificationPolicy, source: SignatureSource, trusted_root: Path | None
) -> VerificationResult:
    """Steps 2-5: keyless signatures first (when identities are trusted), then keyed ones.

    A keyless refusal does not end the check while a trusted key may still pass; when both
    fail, both refusals are named (the keyed one first).
    """
    keyless_refusal: VerificationError | None = None
    if policy.identities:
        try:
            found = verify_keyless(ref, digest, policy, source, trusted_root)
        except VerificationError as exc:
            if not policy.keys:
                raise
            found, keyless_refusal = None, exc  # a trusted key may still pass
        if found is not None:
            return found
        if not policy.keys:
            raise VerificationError(
                f"step 2: no keyless signature found for {ref.pinned} "
                f"(neither a Sigstore bundle referrer nor a certificate in {sig.signature_tag(digest)})",
                hint="sign with 'terminai-sandbox sign --keyless' in CI",
            )
    try:
        return verify_keyed(ref, digest, policy, source)
    except VerificationError as exc:
        if keyless_refusal is None:
            raise
        raise VerificationError(f"{exc.message}; and {keyless_refusal.message}", hint=exc.hint) from None
