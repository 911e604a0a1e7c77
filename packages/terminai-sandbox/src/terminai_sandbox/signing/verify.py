"""Verify an image's cosign signatures against a policy. Returns a value or raises.

Numbered steps (tests name the step they break):

1. The reference must be pinned to a digest (the caller resolved the tag exactly once).
2. Fetch the signatures stored for that digest (``.sig`` tag); none → refuse.
3. For each: the payload blob's bytes must hash to its descriptor digest (the registry
   client checks), and the DER signature must verify over the payload with a trusted key.
4. The verified payload must be in the exact cosign format and name the same digest.
5. The verified payload's repository identity must be this repository.

At least one signature must pass every step. The most specific failure is reported.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from terminai_sandbox.errors import RegistryError, VerificationError
from terminai_sandbox.reference import ImageRef
from terminai_sandbox.registry import RegistryClient
from terminai_sandbox.signing import cosign, keyless
from terminai_sandbox.signing.payload import parse
from terminai_sandbox.signing.policy import VerificationPolicy


@dataclass(frozen=True, slots=True, kw_only=True)
class VerifiedSignature:
    key_id: str
    key_source: str
    docker_reference: str
    payload_digest: str


@dataclass(frozen=True, slots=True, kw_only=True)
class VerificationResult:
    digest: str
    repository: str
    signatures: tuple[VerifiedSignature, ...]
    policy_fingerprint: str

    def to_dict(self) -> dict[str, object]:
        return {
            "digest": self.digest,
            "repository": self.repository,
            "policy": self.policy_fingerprint,
            "signatures": [
                {
                    "key_id": s.key_id,
                    "key": s.key_source,
                    "docker_reference": s.docker_reference,
                    "payload_digest": s.payload_digest,
                }
                for s in self.signatures
            ],
        }


def verify_image(ref: ImageRef, policy: VerificationPolicy, *, client: RegistryClient) -> VerificationResult:
    """Verify ``ref`` (pinned by digest) against ``policy``; raise :class:`VerificationError` otherwise."""
    # Step 1
    if ref.digest is None:
        raise VerificationError(f"{ref} is not pinned to a digest", hint="resolve the tag once, then verify by digest")
    if not policy.keys and not policy.identities:
        raise VerificationError(
            "the verification policy trusts no key and no identity: nothing can pass",
            hint="pass --key cosign.pub or a --policy file",
        )
    if policy.identities:
        found = _verify_keyless(ref, policy, client)
        if found is not None:
            return found
        if not policy.keys:
            raise VerificationError(
                f"step 2: no keyless (Sigstore bundle) signature found for {ref.pinned}",
                hint="sign with 'terminai-sandbox sign --keyless' in CI",
            )
    repository = ref.name
    # Step 2
    try:
        stored = cosign.fetch(client, ref.repository, ref.digest)
    except RegistryError as exc:
        if "corrupted" in exc.message:
            raise VerificationError(f"step 3: a signature blob for {ref.pinned} is corrupted: {exc.message}") from None
        raise
    if not stored:
        raise VerificationError(
            f"step 2: no signature found for {ref.pinned} (tag {cosign.signature_tag(ref.digest)})",
            hint="sign the image (terminai-sandbox sign) or use a signed release",
        )
    verified: list[VerifiedSignature] = []
    problems: list[str] = []
    for item in stored:
        # Step 3
        trusted = [key for key in policy.keys if cosign.verifies(key.public_key, item.payload, item.signature)]
        if not trusted:
            problems.append(
                "step 3: signature does not verify with any trusted key (wrong key, or altered payload or signature)"
            )
            continue
        # Step 4
        try:
            claims = parse(item.payload)
        except VerificationError as exc:
            problems.append(f"step 4: {exc.message}")
            continue
        if claims.manifest_digest != ref.digest:
            problems.append(f"step 4: signature is for another image digest ({claims.manifest_digest})")
            continue
        # Step 5
        if (
            claims.docker_reference.split("@")[0].rsplit(":", 1)[0] != repository
            and claims.docker_reference != repository
        ):
            problems.append(f"step 5: signed for repository {claims.docker_reference!r}, not {repository!r}")
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
            f"{ref.pinned} has {len(stored)} signature(s) but none is acceptable: {detail}",
            hint="check that you trust the right key and that the image was not altered",
        )
    return VerificationResult(
        digest=ref.digest, repository=repository, signatures=tuple(verified), policy_fingerprint=policy.fingerprint()
    )


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


def _verify_keyless(ref: ImageRef, policy: VerificationPolicy, client: RegistryClient) -> VerificationResult | None:
    assert ref.digest is not None
    bundles = referrer_bundles(client, ref.repository, ref.digest)
    if not bundles:
        return None
    problems = []
    for bundle in bundles:
        for identity in policy.identities:
            try:
                keyless.verify_bundle(
                    bundle, digest=ref.digest, identity=identity, predicate_type=keyless.COSIGN_SIGN_PREDICATE
                )
            except VerificationError as exc:
                problems.append(exc.message)
                continue
            wanted = identity.identity or identity.identity_regexp or "?"
            signed = VerifiedSignature(
                key_id=f"keyless:{wanted}",
                key_source=identity.issuer or identity.issuer_regexp or "?",
                docker_reference=ref.name,
                payload_digest="",
            )
            return VerificationResult(
                digest=ref.digest, repository=ref.name, signatures=(signed,), policy_fingerprint=policy.fingerprint()
            )
    raise VerificationError(
        f"{ref.pinned}: no keyless signature matches the policy: {'; '.join(sorted(set(problems)))}"
    )
