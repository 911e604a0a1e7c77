"""Verified sources for unit tests: real policies and keys, a verification result as data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from terminai_sandbox.common.reference import ImageRef
from terminai_sandbox.kube.hardening import SessionShape
from terminai_sandbox.kube.manifests import manifests
from terminai_sandbox.kube.source import VerifiedSource
from terminai_sandbox.signing.formats import keys
from terminai_sandbox.signing.verify.result import VerificationResult
from terminai_sandbox.signing.verify.trust import VerificationPolicy

DIGEST = "sha256:" + "ab" * 32
REFERENCE = "registry.example:5000/terminai/sandbox"
IDENTITY = "https://github.com/terminai/sovereign-sandbox/.github/workflows/release.yml@refs/tags/v0.1.0"
ISSUER = "https://token.actions.githubusercontent.com"


def key_policy(tmp: Path, name: str = "cosign") -> tuple[VerificationPolicy, bytes]:
    pem = keys.public_pem(keys.generate())
    path = tmp / f"{name}.pub"
    path.write_bytes(pem)
    return VerificationPolicy.single_key(path), pem


def keyless_policy(identity: str = IDENTITY, issuer: str = ISSUER) -> VerificationPolicy:
    return VerificationPolicy.single_identity(identity, issuer)


def source(policy: VerificationPolicy, reference: str = REFERENCE, digest: str = DIGEST) -> VerifiedSource:
    ref = ImageRef.parse(reference).with_digest(digest)
    result = VerificationResult(
        digest=digest, repository=ref.name, signatures=(), policy_fingerprint=policy.fingerprint()
    )
    return VerifiedSource(ref=ref, policy=policy, result=result)


def emitted(policy: VerificationPolicy, shape: SessionShape | None = None, **kw: Any) -> list[dict[str, Any]]:
    return manifests(source(policy, **kw), shape or SessionShape(), "sandboxes")


def by_kind(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {obj["kind"]: obj for obj in objects}
