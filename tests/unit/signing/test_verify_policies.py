"""Composable verification policies: each returns evidence or raises; the combinators compose.

The leaf policies here are plain objects standing in for the numbered steps (pure logic:
the steps themselves are exercised against a real registry in tests/integration/signing).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from terminai_sandbox.common.reference import ImageRef
from terminai_sandbox.errors import VerificationError
from terminai_sandbox.signing.store import OfflineStore, SignatureSource
from terminai_sandbox.signing.verify.policy import AllOf, Attested
from terminai_sandbox.signing.verify.result import Evidence, VerifiedSignature
from terminai_sandbox.signing.verify.trust import VerificationPolicy

DIGEST = "sha256:" + "5" * 64
REF = ImageRef.parse(f"registry.example.test/terminai/sandbox@{DIGEST}")
NOWHERE: SignatureSource = OfflineStore(Path("/nonexistent"))  # the stand-in steps never read it


def _signed(key_id: str) -> VerifiedSignature:
    return VerifiedSignature(key_id=key_id, key_source="test", docker_reference=REF.name, payload_digest="")


@dataclass
class Passes:
    key_id: str
    calls: int = 0

    def verify(self, ref: ImageRef, digest: str, source: SignatureSource) -> Evidence:
        self.calls += 1
        return Evidence(signatures=(_signed(self.key_id),), claims=({"predicateType": self.key_id},))


@dataclass
class Refuses:
    message: str
    calls: int = 0

    def verify(self, ref: ImageRef, digest: str, source: SignatureSource) -> Evidence:
        self.calls += 1
        raise VerificationError(self.message, hint=f"hint for {self.message}")


def test_all_of_refuses_an_empty_list() -> None:
    with pytest.raises(VerificationError, match="at least one policy"):
        AllOf([])


def test_all_of_adds_the_evidence_of_every_policy() -> None:
    evidence = AllOf([Passes("a"), Passes("b")]).verify(REF, DIGEST, NOWHERE)
    assert [s.key_id for s in evidence.signatures] == ["a", "b"]
    assert [c["predicateType"] for c in evidence.claims] == ["a", "b"]


def test_all_of_raises_the_first_refusal_and_stops() -> None:
    later = Passes("late")
    with pytest.raises(VerificationError, match=r"^step 3: bad$"):
        AllOf([Passes("a"), Refuses("step 3: bad"), later]).verify(REF, DIGEST, NOWHERE)
    assert later.calls == 0


def test_step_6_unknown_attestation_type_is_refused_when_checked() -> None:
    # the type is resolved when the step runs, after the signatures passed (as before)
    step = Attested(VerificationPolicy(keys=(), identities=()), "no-such-type")
    with pytest.raises(VerificationError, match="unknown attestation type"):
        step.verify(REF, DIGEST, NOWHERE)
