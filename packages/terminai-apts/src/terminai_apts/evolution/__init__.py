"""Governed code evolution: validate, test in the executor, score, approve, deploy, roll back.

Nothing an agent writes becomes a reusable tool without AST validation, a sandboxed test
run, a fitness decision and, where configured, a human approval. Every deployed version is
a hash-checked (optionally HMAC-signed) snapshot that can be restored.
"""

from terminai_apts.evolution.orchestrator import Attempt, EvolutionConfig, EvolutionOrchestrator
from terminai_apts.evolution.snapshots import RollbackManager, Snapshot
from terminai_apts.evolution.states import State, Transition, check_transition

__all__ = [
    "Attempt",
    "EvolutionConfig",
    "EvolutionOrchestrator",
    "RollbackManager",
    "Snapshot",
    "State",
    "Transition",
    "check_transition",
]
