"""Composable verification policies: each returns evidence or raises; the combinators compose.

The leaf policies here are plain objects standing in for the numbered steps (pure logic:
the steps themselves are exercised against a real registry in tests/integration/supply).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from terminai_sandbox.errors import VerificationError
from terminai_sandbox.launch.reference import ImageRef
from terminai_sandbox.signing.store import OfflineStore, SignatureSource
from terminai_sandbox.signing.verify.policy import AllOf, AnyOf, Attested, Policy, UnsafeWarnOnly
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


def test_any_of_refuses_an_empty_list() -> None:
    with pytest.raises(VerificationError, match="at least one policy"):
        AnyOf([])


def test_any_of_returns_the_first_that_passes() -> None:
    second, third = Passes("second"), Passes("third")
    evidence = AnyOf([Refuses("no"), second, third]).verify(REF, DIGEST, NOWHERE)
    assert [s.key_id for s in evidence.signatures] == ["second"]
    assert third.calls == 0


def test_any_of_names_every_refusal_when_none_passes() -> None:
    with pytest.raises(VerificationError) as caught:
        AnyOf([Refuses("step 3: one"), Refuses("step 6: two")]).verify(REF, DIGEST, NOWHERE)
    assert "step 3: one; step 6: two" in caught.value.message
    assert caught.value.hint == "hint for step 3: one"


def test_unsafe_warn_only_warns_on_refusal_and_establishes_nothing() -> None:
    warnings: list[str] = []
    evidence = UnsafeWarnOnly(Refuses("step 2: no signature"), warnings.append).verify(REF, DIGEST, NOWHERE)
    assert evidence == Evidence()
    assert len(warnings) == 1 and warnings[0].startswith("UNSAFE: ") and "step 2: no signature" in warnings[0]


def test_unsafe_warn_only_passes_evidence_through_silently() -> None:
    warnings: list[str] = []
    evidence = UnsafeWarnOnly(Passes("k"), warnings.append).verify(REF, DIGEST, NOWHERE)
    assert [s.key_id for s in evidence.signatures] == ["k"] and warnings == []


def test_combinators_nest() -> None:
    policy: Policy = AllOf([AnyOf([Refuses("x"), Passes("a")]), UnsafeWarnOnly(Refuses("y"), lambda _: None)])
    assert [s.key_id for s in policy.verify(REF, DIGEST, NOWHERE).signatures] == ["a"]


def test_step_6_unknown_attestation_type_is_refused_when_checked() -> None:
    # the type is resolved when the step runs, after the signatures passed (as before)
    step = Attested(VerificationPolicy(keys=(), identities=()), "no-such-type")
    with pytest.raises(VerificationError, match="unknown attestation type"):
        step.verify(REF, DIGEST, NOWHERE)
