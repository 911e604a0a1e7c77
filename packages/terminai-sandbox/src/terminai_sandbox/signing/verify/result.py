"""What verification returns: the signatures that passed and the attested claims."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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
class PlatformResult:
    """One platform manifest of a verified index: listed in it, and signed (and attested) itself."""

    platform: str
    digest: str
    signatures: tuple[VerifiedSignature, ...]
    claims: tuple[dict[str, Any], ...] = field(default=())


@dataclass(frozen=True, slots=True, kw_only=True)
class VerificationResult:
    """``digest`` is the image verified; for an index, ``signatures`` are the index's own and
    ``platforms`` the platform manifests verified under it (empty for a single manifest)."""

    digest: str
    repository: str
    signatures: tuple[VerifiedSignature, ...]
    policy_fingerprint: str
    claims: tuple[dict[str, Any], ...] = field(default=())
    platforms: tuple[PlatformResult, ...] = field(default=())

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "digest": self.digest,
            "repository": self.repository,
            "policy": self.policy_fingerprint,
            "claims": list(self.claims),
            "signatures": [_signature(s) for s in self.signatures],
        }
        if self.platforms:
            out["platforms"] = [
                {
                    "platform": p.platform,
                    "digest": p.digest,
                    "claims": list(p.claims),
                    "signatures": [_signature(s) for s in p.signatures],
                }
                for p in self.platforms
            ]
        return out


def _signature(s: VerifiedSignature) -> dict[str, object]:
    return {
        "key_id": s.key_id,
        "key": s.key_source,
        "docker_reference": s.docker_reference,
        "payload_digest": s.payload_digest,
        "certificate_identity": s.certificate_identity,
        "certificate_issuer": s.certificate_issuer,
        "rekor_log_index": s.rekor_log_index,
        "rekor_integrated_time": s.rekor_integrated_time,
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class Evidence:
    """What one policy established: the signatures that passed and the claims they carry."""

    signatures: tuple[VerifiedSignature, ...] = ()
    claims: tuple[dict[str, Any], ...] = ()

    def __add__(self, other: Evidence) -> Evidence:
        return Evidence(signatures=self.signatures + other.signatures, claims=self.claims + other.claims)
