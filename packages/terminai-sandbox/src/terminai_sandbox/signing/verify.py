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

from dataclasses import dataclass

from terminai_sandbox.errors import ConfigError, RegistryError, VerificationError
from terminai_sandbox.reference import ImageRef
from terminai_sandbox.registry import RegistryClient
from terminai_sandbox.signing import cosign
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
    if policy.identities and not policy.keys:
        raise ConfigError(
            "keyless (certificate identity) verification is not available in this version",
            hint="verify with a public key (--key) for now",
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
