"""Step 1 and the entry point: verify a pinned image against the trust policy.

The numbered steps are listed in :mod:`terminai_sandbox.signing.verify`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from terminai_sandbox.common.reference import ImageRef
from terminai_sandbox.errors import RegistryCorrupted, RegistryNotFound, RegistryUnreachable, VerificationError
from terminai_sandbox.registry import RegistryClient
from terminai_sandbox.signing.store import OfflineStore, RegistryStore, SignatureSource
from terminai_sandbox.signing.verify.policy import AllOf, Attested, Policy, SignedBy
from terminai_sandbox.signing.verify.result import VerificationResult, VerifiedSignature
from terminai_sandbox.signing.verify.trust import VerificationPolicy

__all__ = ["VerificationResult", "VerifiedSignature", "verify_image"]


def verify_image(
    ref: ImageRef,
    policy: VerificationPolicy,
    *,
    client: RegistryClient | None,
    offline_dir: Path | None = None,
    attestation: str | None = None,
    trusted_root: Path | None = None,
    attestations: Sequence[str] = (),
) -> VerificationResult:
    """Verify ``ref`` (pinned by digest) against ``policy``; raise :class:`VerificationError` otherwise.

    ``trusted_root`` pins the Sigstore trusted root for keyless signatures (default: the
    public-good root sigstore-python holds offline).
    """
    # Step 1
    if ref.digest is None:
        raise VerificationError(f"{ref} is not pinned to a digest", hint="resolve the tag once, then verify by digest")
    if not policy.keys and not policy.identities:
        raise VerificationError(
            "the verification policy trusts no key and no identity: nothing can pass",
            hint="pass --key cosign.pub or a --policy file",
        )
    source: SignatureSource
    if offline_dir is not None:
        source = OfflineStore(offline_dir)
    elif client is not None:
        source = RegistryStore(client, ref.repository)
        _require_image(source, ref)
    else:
        raise VerificationError("nothing to verify against: give a registry client or an offline directory")
    wanted = [*([attestation] if attestation is not None else []), *attestations]
    steps: list[Policy] = [SignedBy(policy, trusted_root)]
    steps += [Attested(policy, kind, trusted_root) for kind in dict.fromkeys(wanted)]
    try:
        evidence = AllOf(steps).verify(ref, ref.digest, source)
    except RegistryCorrupted as exc:
        raise VerificationError(f"step 3: a signature blob for {ref.pinned} is corrupted: {exc.message}") from None
    except RegistryUnreachable as exc:
        raise VerificationError(f"cannot verify {ref.pinned}: {exc.message}", hint=exc.hint) from None
    return VerificationResult(
        digest=ref.digest,
        repository=ref.name,
        signatures=evidence.signatures,
        policy_fingerprint=policy.fingerprint(),
        claims=evidence.claims,
    )


def _require_image(store: RegistryStore, ref: ImageRef) -> None:
    """Step 1: the pinned manifest exists. Signatures stored for a digest nobody pushed
    (a registry accepts a ``.sig`` tag for any digest) prove nothing about an image."""
    assert ref.digest is not None
    try:
        store.require_image(ref.digest, "verify")
    except RegistryNotFound as exc:
        raise VerificationError(f"step 1: {exc.message}", hint=exc.hint) from None
    except RegistryCorrupted as exc:
        raise VerificationError(f"step 1: the manifest of {ref.pinned} is corrupted: {exc.message}") from None
    except RegistryUnreachable as exc:
        raise VerificationError(f"cannot verify {ref.pinned}: {exc.message}", hint=exc.hint) from None
