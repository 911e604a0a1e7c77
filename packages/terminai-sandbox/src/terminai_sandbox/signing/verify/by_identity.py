"""Steps 2 and 3 (3k) for keyless signatures: Sigstore bundle referrers, then legacy ``.sig`` layers."""

from __future__ import annotations

from pathlib import Path

from terminai_sandbox.common.reference import ImageRef
from terminai_sandbox.errors import VerificationError
from terminai_sandbox.signing.formats.bundle import (
    COSIGN_SIGN_PREDICATE,
    bundle_predicate,
    is_key_bundle,
    subject_names,
    tlog_field,
)
from terminai_sandbox.signing.formats.payload import parse
from terminai_sandbox.signing.formats.trustroot import load_trust
from terminai_sandbox.signing.store import SignatureSource
from terminai_sandbox.signing.verify.by_key import check_claims, check_subject_names
from terminai_sandbox.signing.verify.legacy import is_keyless
from terminai_sandbox.signing.verify.legacy import verify_keyless as verify_legacy
from terminai_sandbox.signing.verify.result import VerificationResult, VerifiedSignature
from terminai_sandbox.signing.verify.sigstore_bundle import verify_bundle
from terminai_sandbox.signing.verify.trust import VerificationPolicy


def verify_keyless(
    ref: ImageRef, digest: str, policy: VerificationPolicy, source: SignatureSource, trusted_root: Path | None
) -> VerificationResult | None:
    """The first keyless signature (bundle referrer, then legacy ``.sig``) that passes; None if none exists."""
    # Attestation bundles (another predicate) are step 6's: sorting on the unverified
    # predicate only leaves bundles out, it never lets one pass.
    bundles = [
        bundle
        for bundle in source.bundles(digest)
        if not is_key_bundle(bundle) and bundle_predicate(bundle) in (COSIGN_SIGN_PREDICATE, None)
    ]
    legacy = [item for item in source.signatures(digest) if is_keyless(item)]
    if not bundles and not legacy:
        return None
    problems: list[VerificationError] = []
    for bundle in bundles:
        for identity in policy.identities:
            try:
                statement = verify_bundle(
                    bundle,
                    digest=digest,
                    identity=identity,
                    predicate_type=COSIGN_SIGN_PREDICATE,
                    trusted_root=trusted_root,
                )
                check_subject_names(subject_names(statement, digest), ref.name, policy)
            except VerificationError as exc:
                problems.append(exc)
                continue
            signed = VerifiedSignature(
                key_id="keyless",
                key_source="sigstore",
                docker_reference=ref.name,
                payload_digest="",
                certificate_identity=identity.identity or identity.identity_regexp,
                certificate_issuer=identity.issuer or identity.issuer_regexp,
                rekor_log_index=tlog_field(bundle, "logIndex"),
                rekor_integrated_time=tlog_field(bundle, "integratedTime"),
            )
            return _keyless_result(ref, digest, policy, signed)
    if legacy:
        trust = load_trust(trusted_root)
        for item in legacy:
            for identity in policy.identities:
                try:
                    proof = verify_legacy(item, identity, trust)
                    claims = check_claims(parse(item.payload), digest, ref.name, policy)
                except VerificationError as exc:
                    problems.append(exc)
                    continue
                signed = VerifiedSignature(
                    key_id="keyless",
                    key_source="sigstore (.sig)",
                    docker_reference=claims.docker_reference,
                    payload_digest=item.payload_digest,
                    certificate_identity=proof.identity,
                    certificate_issuer=proof.issuer,
                    rekor_log_index=proof.log_index,
                    rekor_integrated_time=proof.integrated_time,
                )
                return _keyless_result(ref, digest, policy, signed)
    if len(problems) == 1:
        only = problems[0]
        raise VerificationError(
            f"{ref.pinned}: no keyless signature matches the policy: {only.message}", hint=only.hint
        )
    raise VerificationError(
        f"{ref.pinned}: no keyless signature matches the policy: {'; '.join(sorted({p.message for p in problems}))}"
    )


def _keyless_result(
    ref: ImageRef, digest: str, policy: VerificationPolicy, signed: VerifiedSignature
) -> VerificationResult:
    return VerificationResult(
        digest=digest, repository=ref.name, signatures=(signed,), policy_fingerprint=policy.fingerprint()
    )
