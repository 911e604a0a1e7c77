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


@dataclass(frozen=True, slots=True, kw_only=True)
class Evidence:
    """What one policy established: the signatures that passed and the claims they carry."""

    signatures: tuple[VerifiedSignature, ...] = ()
    claims: tuple[dict[str, Any], ...] = ()

    def __add__(self, other: Evidence) -> Evidence:
        return Evidence(signatures=self.signatures + other.signatures, claims=self.claims + other.claims)
