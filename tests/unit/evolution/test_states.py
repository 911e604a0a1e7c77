from __future__ import annotations

import pytest
from terminai_apts.errors import EvolutionError
from terminai_apts.evolution.states import LEGAL, State, check_transition

ILLEGAL = [(s, t) for s in State for t in State if t not in LEGAL[s]]


@pytest.mark.parametrize(("source", "target"), ILLEGAL, ids=lambda s: s.value)
def test_every_illegal_transition_raises(source: State, target: State) -> None:
    with pytest.raises(EvolutionError, match="illegal transition"):
        check_transition(source, target)


# sorted: a set's order differs between processes, and pytest-xdist workers must collect alike
LEGAL_PAIRS = [(s, t) for s in State for t in sorted(LEGAL[s], key=lambda x: x.value)]


@pytest.mark.parametrize(("source", "target"), LEGAL_PAIRS, ids=lambda s: s.value)
def test_legal_transitions_pass(source: State, target: State) -> None:
    check_transition(source, target)


def test_fitness_decision_never_skips_testing() -> None:
    sources = [s for s in State if State.EVALUATING in LEGAL[s]]
    assert sources == [State.TESTING]
    assert State.DEPLOYED in LEGAL[State.APPROVED]
    assert all(State.DEPLOYED not in LEGAL[s] for s in State if s is not State.APPROVED)
