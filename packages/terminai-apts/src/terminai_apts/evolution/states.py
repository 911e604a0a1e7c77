"""The evolution state machine: legal transitions and their audit records."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from terminai_apts.errors import EvolutionError


class State(enum.Enum):
    """Lifecycle of one evolution attempt."""

    PROPOSED = "PROPOSED"
    VALIDATING = "VALIDATING"
    TESTING = "TESTING"
    EVALUATING = "EVALUATING"
    PENDING_APPROVAL = "PENDING_APPROVAL"
    APPROVED = "APPROVED"
    DEPLOYED = "DEPLOYED"
    REJECTED = "REJECTED"
    FAILED = "FAILED"
    ROLLED_BACK = "ROLLED_BACK"


# EVALUATING is reachable only from TESTING, so no fitness decision can skip the sandbox run.
LEGAL: dict[State, frozenset[State]] = {
    State.PROPOSED: frozenset({State.VALIDATING, State.FAILED}),
    State.VALIDATING: frozenset({State.TESTING, State.REJECTED, State.FAILED}),
    State.TESTING: frozenset({State.EVALUATING, State.REJECTED, State.FAILED}),
    State.EVALUATING: frozenset({State.PENDING_APPROVAL, State.APPROVED, State.REJECTED, State.FAILED}),
    State.PENDING_APPROVAL: frozenset({State.APPROVED, State.REJECTED}),
    State.APPROVED: frozenset({State.DEPLOYED, State.FAILED}),
    State.DEPLOYED: frozenset({State.ROLLED_BACK}),
    State.REJECTED: frozenset(),
    State.FAILED: frozenset(),
    State.ROLLED_BACK: frozenset(),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Transition:
    """One recorded state change: who moved the attempt, when, and why."""

    source: State
    target: State
    at: float
    actor: str
    reason: str

    def to_json(self) -> dict[str, object]:
        return {
            "from": self.source.value,
            "to": self.target.value,
            "at": self.at,
            "actor": self.actor,
            "reason": self.reason,
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Transition:
        return cls(
            source=State(str(data["from"])),
            target=State(str(data["to"])),
            at=float(str(data["at"])),
            actor=str(data["actor"]),
            reason=str(data["reason"]),
        )


def check_transition(source: State, target: State) -> None:
    """Raise :class:`EvolutionError` unless ``source -> target`` is a legal move."""
    if target not in LEGAL[source]:
        allowed = ", ".join(sorted(s.value for s in LEGAL[source])) or "none (terminal)"
        raise EvolutionError(
            f"illegal transition {source.value} -> {target.value}",
            hint=f"from {source.value} the allowed next states are: {allowed}",
        )
