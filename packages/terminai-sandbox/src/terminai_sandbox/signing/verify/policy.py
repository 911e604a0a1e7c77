"""Verification policies: each returns what it established or raises; they compose.

Modelled on sigstore-python's ``verify/policy.py``: a policy has one method, ``verify``,
which returns :class:`~.result.Evidence` or raises
:class:`~terminai_sandbox.errors.VerificationError`. :class:`AllOf` and :class:`AnyOf`
combine policies and refuse an empty list (an empty conjunction would pass everything).
:class:`UnsafeWarnOnly` turns a refusal into a warning; its name says what it is, and
nothing on the launch path uses it.

The leaf policies are the numbered steps of :mod:`terminai_sandbox.signing.verify`:
:class:`SignedBy` (steps 2-5, keyless then keyed) and :class:`Attested` (step 6).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from terminai_sandbox.errors import VerificationError
from terminai_sandbox.launch.reference import ImageRef
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


class AnyOf:
    """The first policy that passes wins; when none does, every refusal is named."""

    def __init__(self, policies: Sequence[Policy]) -> None:
        if not policies:
            raise VerificationError("an AnyOf policy needs at least one policy: an empty one would refuse everything")
        self.policies = tuple(policies)

    def verify(self, ref: ImageRef, digest: str, source: SignatureSource) -> Evidence:
        refusals: list[VerificationError] = []
        for policy in self.policies:
            try:
                return policy.verify(ref, digest, source)
            except VerificationError as exc:
                refusals.append(exc)
        raise VerificationError(
            f"{ref.pinned}: no policy passed: {'; '.join(exc.message for exc in refusals)}", hint=refusals[0].hint
        )


@dataclass(frozen=True, slots=True)
class UnsafeWarnOnly:
    """Run ``policy`` but never refuse: a refusal goes to ``warn`` and nothing is established.

    For auditing a policy before enforcing it. The image is *not* verified when this passes.
    """

    policy: Policy
    warn: Callable[[str], None]

    def verify(self, ref: ImageRef, digest: str, source: SignatureSource) -> Evidence:
        try:
            return self.policy.verify(ref, digest, source)
        except VerificationError as exc:
            self.warn(f"UNSAFE: {ref.pinned} did not verify and the policy is not enforced: {exc.message}")
            return Evidence()


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
