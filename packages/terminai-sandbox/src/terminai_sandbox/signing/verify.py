"""Verify an image's cosign signatures against a policy. Returns a value or raises.

Numbered steps (tests name the step they break):

1. The reference must be pinned to a digest (the caller resolved the tag exactly once).
2. Fetch the signatures stored for that digest (``.sig`` tag); none → refuse.
3. For each: the payload blob's bytes must hash to its descriptor digest (the registry
   client checks), and the DER signature must verify over the payload with a trusted key.
   Keyless policies (identities) instead accept a Sigstore bundle referrer verified by
   sigstore-python, or a ``.sig`` layer with a Fulcio certificate and Rekor bundle
   annotations (cosign's legacy keyless layout) verified in steps 3k.1–3k.6
   (:mod:`legacy_verify`) against the Sigstore trusted root.
4. The verified payload must be in the exact cosign format and name the same digest.
5. The verified payload's repository identity must be this repository.
6. With ``attestation`` (or several ``attestations``): for each type, some DSSE attestation
   of that type for that digest must verify under a trusted key (or a keyless identity).
   A SLSA v1 provenance predicate must also carry the fields SLSA requires (6p).

Signatures come from the registry (``client``) or, air-gapped, from a release directory
(``offline_dir``: OCI layout + ``signatures.json``).

At least one signature must pass every step. The most specific failure is reported.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from terminai_sandbox import provenance
from terminai_sandbox.errors import RegistryError, VerificationError
from terminai_sandbox.reference import ImageRef
from terminai_sandbox.registry import RegistryClient
from terminai_sandbox.signing import attest, cosign, keyless
from terminai_sandbox.signing.bundles import is_key_bundle
from terminai_sandbox.signing.bundles import verify_key_bundle as key_bundle_check
from terminai_sandbox.signing.legacy_verify import is_keyless
from terminai_sandbox.signing.legacy_verify import verify_keyless as verify_legacy
from terminai_sandbox.signing.payload import SignedClaims, parse
from terminai_sandbox.signing.policy import VerificationPolicy
from terminai_sandbox.signing.sources import OfflineSource, RegistrySource, SignatureSource
from terminai_sandbox.signing.trustroot import load_trust


@dataclass(frozen=True, slots=True, kw_only=True)
class VerifiedSignature:
    key_id: str
    key_source: str
    docker_reference: str
    payload_digest: str
    certificate_identity: str | None = None
    certificate_issuer: str | None = None
    rekor_log_index: int | None = None
    rekor_integrated_time: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class VerificationResult:
    digest: str
    repository: str
    signatures: tuple[VerifiedSignature, ...]
    policy_fingerprint: str
    claims: tuple[dict[str, Any], ...] = field(default=())

    def to_dict(self) -> dict[str, object]:
        return {
            "digest": self.digest,
            "repository": self.repository,
            "policy": self.policy_fingerprint,
            "claims": list(self.claims),
            "signatures": [
                {
                    "key_id": s.key_id,
                    "key": s.key_source,
                    "docker_reference": s.docker_reference,
                    "payload_digest": s.payload_digest,
                    "certificate_identity": s.certificate_identity,
                    "certificate_issuer": s.certificate_issuer,
                    "rekor_log_index": s.rekor_log_index,
                    "rekor_integrated_time": s.rekor_integrated_time,
                }
                for s in self.signatures
            ],
        }


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
        source = OfflineSource(offline_dir)
    elif client is not None:
        source = RegistrySource(client, ref.repository)
    else:
        raise VerificationError("nothing to verify against: give a registry client or an offline directory")
    try:
        result = _verify_signatures(ref, ref.digest, policy, source, trusted_root)
        wanted = [*([attestation] if attestation is not None else []), *attestations]
        if wanted:
            claims: tuple[dict[str, Any], ...] = ()
            for kind in dict.fromkeys(wanted):
                claims += _verify_attestation(ref.digest, policy, source, attest.predicate_type(kind), trusted_root)
            result = VerificationResult(
                digest=result.digest,
                repository=result.repository,
                signatures=result.signatures,
                policy_fingerprint=result.policy_fingerprint,
                claims=claims,
            )
    except RegistryError as exc:
        if "corrupted" in exc.message:
            raise VerificationError(f"step 3: a signature blob for {ref.pinned} is corrupted: {exc.message}") from None
        if "unreachable" in exc.message:
            raise VerificationError(f"cannot verify {ref.pinned}: {exc.message}", hint=exc.hint) from None
        raise
    return result


def _verify_signatures(
    ref: ImageRef, digest: str, policy: VerificationPolicy, source: SignatureSource, trusted_root: Path | None
) -> VerificationResult:
    keyless_refusal: VerificationError | None = None
    if policy.identities:
        try:
            found = _verify_keyless(ref, digest, policy, source, trusted_root)
        except VerificationError as exc:
            if not policy.keys:
                raise
            found, keyless_refusal = None, exc  # a trusted key may still pass
        if found is not None:
            return found
        if not policy.keys:
            raise VerificationError(
                f"step 2: no keyless signature found for {ref.pinned} "
                f"(neither a Sigstore bundle referrer nor a certificate in {cosign.signature_tag(digest)})",
                hint="sign with 'terminai-sandbox sign --keyless' in CI",
            )
    try:
        return _verify_keyed(ref, digest, policy, source)
    except VerificationError as exc:
        if keyless_refusal is None:
            raise
        raise VerificationError(f"{exc.message}; and {keyless_refusal.message}", hint=exc.hint) from None


def _verify_keyed(
    ref: ImageRef, digest: str, policy: VerificationPolicy, source: SignatureSource
) -> VerificationResult:
    repository = ref.name
    verified: list[VerifiedSignature] = []
    problems: list[str] = []
    # Step 2: key-based Sigstore bundles (cosign v3 referrers) count like .sig signatures.
    public_keys = [key.public_key for key in policy.keys]
    bundles = source.bundles(digest) if policy.keys else []
    for bundle in bundles:
        if not is_key_bundle(bundle):
            continue  # certificate bundles are keyless: checked against identities above
        try:
            index = key_bundle_check(bundle, digest, public_keys)
        except VerificationError as exc:
            problems.append(f"step 3: bundle: {exc.message}")
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
            f"{ref.pinned} has {len(bundles)} bundle(s) but none is acceptable: {'; '.join(sorted(set(problems)))}"
        )
    if not stored:
        raise VerificationError(
            f"step 2: no signature found for {ref.pinned} (tag {cosign.signature_tag(digest)})",
            hint="sign the image (terminai-sandbox sign) or use a signed release",
        )
    for item in stored:
        # Step 3
        trusted = [key for key in policy.keys if cosign.verifies(key.public_key, item.payload, item.signature)]
        if not trusted:
            problems.append(
                "step 3: signature does not verify with any trusted key (wrong key, or altered payload or signature)"
            )
            continue
        # Steps 4 and 5
        try:
            claims = _check_claims(parse(item.payload), digest, repository)
        except VerificationError as exc:
            problems.append(exc.message)
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
            hint="check that you trust the right key and that the image was not altered",
        )
    return VerificationResult(
        digest=digest, repository=repository, signatures=tuple(verified), policy_fingerprint=policy.fingerprint()
    )


def _verify_attestation(
    digest: str, policy: VerificationPolicy, source: SignatureSource, predicate_uri: str, trusted_root: Path | None
) -> tuple[dict[str, Any], ...]:
    # Step 6: keyed DSSE envelopes first, then keyless bundles carrying that predicate.
    claims: list[dict[str, Any]] = []
    problems: list[str] = []
    envelopes = source.attestations(digest)
    if envelopes and policy.keys:
        try:
            found = attest.verify_envelopes(envelopes, digest, [k.public_key for k in policy.keys], predicate_uri)
            claims += [{"predicateType": a.predicate_type, "predicate": a.predicate} for a in found]
        except VerificationError as exc:
            problems.append(exc.message)
    if not claims and policy.identities:
        for bundle in source.bundles(digest):
            for identity in policy.identities:
                try:
                    statement = keyless.verify_bundle(
                        bundle,
                        digest=digest,
                        identity=identity,
                        predicate_type=predicate_uri,
                        trusted_root=trusted_root,
                    )
                except VerificationError as exc:
                    problems.append(exc.message)
                    continue
                claims.append({"predicateType": predicate_uri, "predicate": statement.get("predicate")})
    if predicate_uri == provenance.PREDICATE_TYPE:
        # Step 6p: a signed provenance must still say what SLSA v1 requires.
        valid = []
        for claim in claims:
            try:
                provenance.check_predicate(claim["predicate"])
            except VerificationError as exc:
                problems.append(f"step 6p: {exc.message}")
                continue
            valid.append(claim)
        claims = valid
    if not claims:
        detail = "; ".join(sorted(set(problems))) or "none stored"
        raise VerificationError(f"step 6: no verified {predicate_uri} attestation for {digest}: {detail}")
    return tuple(claims)


BUNDLE_MEDIA = "application/vnd.dev.sigstore.bundle.v0.3+json"


def referrer_bundles(client: RegistryClient, repo: str, digest: str) -> list[str]:
    """Sigstore bundles attached to ``digest`` as OCI 1.1 referrers (API, then the fallback tag)."""
    response = client.request(
        "GET", repo, f"referrers/{digest}", headers={"Accept": "application/vnd.oci.image.index.v1+json"}
    )
    if response.status_code == 200:
        index = response.json()
    else:
        try:
            body, _, _ = client.get_manifest(repo, digest.replace(":", "-"))
        except RegistryError as exc:
            if "404" in exc.message:
                return []
            raise
        index = json.loads(body)
    bundles = []
    for entry in index.get("manifests", []):
        if entry.get("artifactType") != BUNDLE_MEDIA:
            continue
        manifest = json.loads(client.get_manifest(repo, entry["digest"])[0])
        for layer in manifest.get("layers", []):
            if layer.get("mediaType") == BUNDLE_MEDIA:
                bundles.append(client.get_blob(repo, layer["digest"]).decode())
    return bundles


def _verify_keyless(
    ref: ImageRef, digest: str, policy: VerificationPolicy, source: SignatureSource, trusted_root: Path | None
) -> VerificationResult | None:
    """The first keyless signature (bundle referrer, then legacy ``.sig``) that passes; None if none exists."""
    bundles = [bundle for bundle in source.bundles(digest) if not is_key_bundle(bundle)]
    legacy = [item for item in source.signatures(digest) if is_keyless(item)]
    if not bundles and not legacy:
        return None
    problems: list[VerificationError] = []
    for bundle in bundles:
        for identity in policy.identities:
            try:
                keyless.verify_bundle(
                    bundle,
                    digest=digest,
                    identity=identity,
                    predicate_type=keyless.COSIGN_SIGN_PREDICATE,
                    trusted_root=trusted_root,
                )
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
                rekor_log_index=_tlog_field(bundle, "logIndex"),
                rekor_integrated_time=_tlog_field(bundle, "integratedTime"),
            )
            return _keyless_result(ref, digest, policy, signed)
    if legacy:
        trust = load_trust(trusted_root)
        for item in legacy:
            for identity in policy.identities:
                try:
                    proof = verify_legacy(item, identity, trust)
                    claims = _check_claims(parse(item.payload), digest, ref.name)
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


def _check_claims(claims: SignedClaims, digest: str, repository: str) -> SignedClaims:
    """Steps 4 and 5 for a verified payload: this digest, this repository."""
    if claims.manifest_digest != digest:
        raise VerificationError(f"step 4: signature is for another image digest ({claims.manifest_digest})")
    if claims.docker_reference.split("@")[0].rsplit(":", 1)[0] != repository and claims.docker_reference != repository:
        raise VerificationError(f"step 5: signed for repository {claims.docker_reference!r}, not {repository!r}")
    return claims


def _tlog_field(bundle_json: str, name: str) -> int | None:
    """A field of the bundle's (already verified) Rekor entry, for display and the audit record."""
    try:
        return int(json.loads(bundle_json)["verificationMaterial"]["tlogEntries"][0][name])
    except (ValueError, KeyError, IndexError, TypeError):
        return None
