"""Steps 2 to 5 for key-based signatures: ``.sig`` layers and key-based Sigstore bundles."""

from __future__ import annotations

from terminai_sandbox.common.reference import ImageRef
from terminai_sandbox.errors import VerificationError
from terminai_sandbox.signing.formats import sig
from terminai_sandbox.signing.formats.bundle import (
    COSIGN_SIGN_PREDICATE,
    bundle_predicate,
    is_key_bundle,
    subject_names,
)
from terminai_sandbox.signing.formats.bundle import verify_key_bundle as key_bundle_check
from terminai_sandbox.signing.formats.payload import SignedClaims, parse
from terminai_sandbox.signing.store import SignatureSource
from terminai_sandbox.signing.verify.legacy import is_keyless
from terminai_sandbox.signing.verify.result import VerificationResult, VerifiedSignature
from terminai_sandbox.signing.verify.trust import VerificationPolicy


def verify_keyed(ref: ImageRef, digest: str, policy: VerificationPolicy, source: SignatureSource) -> VerificationResult:
    repository = ref.name
    verified: list[VerifiedSignature] = []
    problems: list[str] = []
    mirror_hint: str | None = None  # step 5's: how to name this repository as a mirror
    # Step 2: key-based Sigstore bundles (cosign v3 referrers) count like .sig signatures.
    public_keys = [key.public_key for key in policy.keys]
    # Attestation bundles (another predicate) are step 6's; sorting on the unverified
    # predicate only leaves bundles out, it never lets one pass.
    bundles = [
        bundle
        for bundle in (source.bundles(digest) if policy.keys else [])
        if is_key_bundle(bundle) and bundle_predicate(bundle) in (COSIGN_SIGN_PREDICATE, None)
    ]
    for bundle in bundles:
        try:
            index, statement = key_bundle_check(bundle, digest, public_keys)
        except VerificationError as exc:
            problems.append(f"step 3: bundle: {exc.message}")
            continue
        try:
            check_subject_names(subject_names(statement, digest), repository, policy)
        except VerificationError as exc:
            problems.append(exc.message)
            mirror_hint = mirror_hint or exc.hint
            continue
        key = policy.keys[index]
        verified.append(
            VerifiedSignature(
                key_id=key.key_id, key_source=key.source, docker_reference=repository, payload_digest="bundle"
            )
        )
    stored = [item for item in source.signatures(digest) if not policy.identities or not is_keyless(item)]
    if not stored and verified:
        return VerificationResult(
            digest=digest, repository=repository, signatures=tuple(verified), policy_fingerprint=policy.fingerprint()
        )
    if not stored and problems:
        raise VerificationError(
            f"{ref.pinned} has {len(bundles)} bundle(s) but none is acceptable: {'; '.join(sorted(set(problems)))}",
            hint=mirror_hint,
        )
    if not stored:
        raise VerificationError(
            f"step 2: no signature found for {ref.pinned} (tag {sig.signature_tag(digest)})",
            hint="sign the image (terminai-sandbox sign) or use a signed release",
        )
    for item in stored:
        # Step 3
        trusted = [key for key in policy.keys if sig.verifies(key.public_key, item.payload, item.signature)]
        if not trusted:
            problems.append(
                "step 3: signature does not verify with any trusted key (wrong key, or altered payload or signature)"
            )
            continue
        # Steps 4 and 5
        try:
            claims = check_claims(parse(item.payload), digest, repository, policy)
        except VerificationError as exc:
            problems.append(exc.message)
            mirror_hint = mirror_hint or exc.hint
            continue
        for key in trusted:
            verified.append(
                VerifiedSignature(
                    key_id=key.key_id,
                    key_source=key.source,
                    docker_reference=claims.docker_reference,
                    payload_digest=item.payload_digest,
                )
            )
    if not verified:
        detail = "; ".join(sorted(set(problems)))
        raise VerificationError(
            f"{ref.pinned} has {len(stored) + len(bundles)} signature(s) but none is acceptable: {detail}",
            hint=mirror_hint or "check that you trust the right key and that the image was not altered",
        )
    return VerificationResult(
        digest=digest, repository=repository, signatures=tuple(verified), policy_fingerprint=policy.fingerprint()
    )


def check_claims(claims: SignedClaims, digest: str, repository: str, policy: VerificationPolicy) -> SignedClaims:
    """Steps 4 and 5 for a verified payload: this digest, this repository (or a mirror the policy names)."""
    if claims.manifest_digest != digest:
        raise VerificationError(f"step 4: signature is for another image digest ({claims.manifest_digest})")
    signed = _repository_of(claims.docker_reference)
    if not policy.accepts_identity(signed, repository):
        raise _not_this_repository(claims.docker_reference, signed, repository)
    return claims


def check_subject_names(names: list[str], repository: str, policy: VerificationPolicy) -> None:
    """Step 5 for a bundle: a subject name, when the signer wrote one, is this repository or a named mirror."""
    for name in names:
        signed = _repository_of(name)
        if not policy.accepts_identity(signed, repository):
            raise _not_this_repository(name, signed, repository)


def _not_this_repository(claimed: str, signed: str, repository: str) -> VerificationError:
    return VerificationError(
        f"step 5: signed for repository {claimed!r}, not {repository!r}",
        hint=f"if {repository} is a mirror of {signed}, name it in the policy file: "
        f'"mirrors": [{{"identity": "{signed}", "repositories": ["{repository}"]}}]',
    )


def _repository_of(docker_reference: str) -> str:
    """The repository a signed ``docker-reference`` names (without tag or digest)."""
    name = docker_reference.split("@", maxsplit=1)[0]
    head, _, tail = name.rpartition(":")
    return head if head and "/" not in tail else name
