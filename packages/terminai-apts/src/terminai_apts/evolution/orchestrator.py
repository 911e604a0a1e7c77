"""The governed pipeline: validate -> test in the executor -> evaluate -> approve -> deploy."""

from __future__ import annotations

import ast
import logging
import math
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from terminai_apts.errors import EvolutionError
from terminai_apts.evolution.persist import read_json, write_json_atomic
from terminai_apts.evolution.snapshots import RollbackManager
from terminai_apts.evolution.states import State, Transition, check_transition
from terminai_apts.executor import SandboxConfig, execute, validate_code
from terminai_apts.executor.policy import Mode

log = logging.getLogger(__name__)

ATTEMPTS_FILE = "attempts.json"
SYSTEM = "system"
# Printed after the tests/smoke calls: its absence means the run never reached the end.
SMOKE_MARKER = "__terminai_evolution_checks_passed__"

FitnessFn = Callable[[str], float]
Subscriber = Callable[["Attempt", Transition], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class EvolutionConfig:
    """Policy of the pipeline. Every field is read by :class:`EvolutionOrchestrator`."""

    security_mode: Mode = "high"
    timeout_seconds: float = 10.0
    max_memory_mb: int = 256
    improvement_threshold: float = 0.0
    require_human_approval: bool = True
    require_fitness_fn: bool = False


@dataclass(slots=True, kw_only=True)
class Attempt:
    """One proposal's journey through the state machine."""

    attempt_id: str
    code: str
    state: State = State.PROPOSED
    transitions: list[Transition] = field(default_factory=list)
    reason: str = ""
    validation_only: bool = False
    violations: list[dict[str, object]] = field(default_factory=list)
    sandbox: dict[str, object] | None = None
    candidate_score: float | None = None
    current_score: float | None = None
    deployed_version: int | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "attempt_id": self.attempt_id,
            "code": self.code,
            "state": self.state.value,
            "transitions": [t.to_json() for t in self.transitions],
            "reason": self.reason,
            "validation_only": self.validation_only,
            "violations": self.violations,
            "sandbox": self.sandbox,
            "candidate_score": self.candidate_score,
            "current_score": self.current_score,
            "deployed_version": self.deployed_version,
        }

    @classmethod
    def from_json(cls, d: dict[str, object]) -> Attempt:
        def opt_float(v: object) -> float | None:
            return None if v is None else float(str(v))

        dv = d.get("deployed_version")
        sandbox = d.get("sandbox")
        return cls(
            attempt_id=str(d["attempt_id"]),
            code=str(d["code"]),
            state=State(str(d["state"])),
            transitions=[Transition.from_json(t) for t in d.get("transitions", [])],  # type: ignore[attr-defined]
            reason=str(d.get("reason", "")),
            validation_only=bool(d.get("validation_only", False)),
            violations=list(d.get("violations", [])),  # type: ignore[call-overload]
            sandbox=dict(sandbox) if isinstance(sandbox, dict) else None,
            candidate_score=opt_float(d.get("candidate_score")),
            current_score=opt_float(d.get("current_score")),
            deployed_version=None if dv is None else int(str(dv)),
        )


def smoke_calls(code: str) -> list[str]:
    """Top-level functions callable without arguments: the smoke test calls each one."""
    tree = ast.parse(code)
    names = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            a = node.args
            required = len(a.posonlyargs) + len(a.args) - len(a.defaults)
            required += sum(1 for d in a.kw_defaults if d is None)
            if required == 0 and not node.name.startswith("_"):
                names.append(node.name)
    return names


class EvolutionOrchestrator:
    """Runs proposals through the state machine and deploys approved ones as snapshots."""

    def __init__(
        self,
        store_dir: Path,
        config: EvolutionConfig | None = None,
        *,
        rollback: RollbackManager | None = None,
    ) -> None:
        self.config = config or EvolutionConfig()
        self.store_dir = store_dir
        self.rollback = rollback or RollbackManager(store_dir)
        raw = read_json(store_dir / ATTEMPTS_FILE, [])
        self.attempts: dict[str, Attempt] = {a["attempt_id"]: Attempt.from_json(a) for a in raw}
        self._subscribers: list[Subscriber] = []

    # -- state machine -------------------------------------------------------------------
    def subscribe(self, callback: Subscriber) -> None:
        """Call ``callback(attempt, transition)`` after every transition, in order."""
        self._subscribers.append(callback)

    def _move(self, attempt: Attempt, target: State, reason: str, actor: str = SYSTEM) -> None:
        check_transition(attempt.state, target)
        t = Transition(source=attempt.state, target=target, at=time.time(), actor=actor, reason=reason)
        attempt.state = target
        attempt.transitions.append(t)
        if target in (State.REJECTED, State.FAILED):
            attempt.reason = reason
        self._save()
        for cb in self._subscribers:
            cb(attempt, t)

    def _save(self) -> None:
        write_json_atomic(self.store_dir / ATTEMPTS_FILE, [a.to_json() for a in self.attempts.values()])

    def get(self, attempt_id: str) -> Attempt:
        try:
            return self.attempts[attempt_id]
        except KeyError:
            raise EvolutionError(
                f"no attempt {attempt_id!r}", hint="list attempts with `terminai-apts evolve status`"
            ) from None

    def is_pending_approval(self, attempt_id: str | None = None) -> bool:
        """Whether ``attempt_id`` (or any attempt, when None) waits for a human."""
        if attempt_id is not None:
            return self.get(attempt_id).state is State.PENDING_APPROVAL
        return any(a.state is State.PENDING_APPROVAL for a in self.attempts.values())

    # -- pipeline ------------------------------------------------------------------------
    def evolve(self, code: str, *, fitness_fn: FitnessFn | None = None, tests: str | None = None) -> Attempt:
        """Run ``code`` through validation, sandboxed tests, evaluation and approval."""
        if fitness_fn is None and self.config.require_fitness_fn:
            raise EvolutionError(
                "a fitness function is required by this configuration",
                hint="pass fitness_fn= or set require_fitness_fn=False for validation-only mode",
            )
        attempt = Attempt(attempt_id=uuid.uuid4().hex[:12], code=code)
        self.attempts[attempt.attempt_id] = attempt
        self._save()
        self._move(attempt, State.VALIDATING, "proposal received")
        if not self._validate(attempt, tests):
            return attempt
        self._move(attempt, State.TESTING, "validation passed")
        if not self._test(attempt, tests):
            return attempt
        self._move(attempt, State.EVALUATING, "sandbox tests passed")
        if not self._evaluate(attempt, fitness_fn):
            return attempt
        if self.config.require_human_approval:
            self._move(attempt, State.PENDING_APPROVAL, "waiting for a human approver")
            return attempt
        self._move(attempt, State.APPROVED, "auto-approved: human approval not required")
        self._deploy(attempt, SYSTEM)
        return attempt

    def _validate(self, attempt: Attempt, tests: str | None) -> bool:
        mode = self.config.security_mode
        found = list(validate_code(attempt.code, mode=mode, proposal=True).violations)
        if tests is not None:
            found += validate_code(tests, mode=mode, proposal=True).violations
        if not found:
            return True
        attempt.violations = [v.to_json() for v in found]
        kinds = {"import" for v in found if "import" in v.rule.lower() or "import" in v.message.lower()}
        detail = "; ".join(f"line {v.line}: {v.message}" for v in found)
        prefix = "refused import: " if kinds else "validation failed: "
        self._move(attempt, State.REJECTED, prefix + detail)
        return False

    def _test(self, attempt: Attempt, tests: str | None) -> bool:
        if tests is not None:
            checks = tests
        else:
            calls = smoke_calls(attempt.code)
            checks = "\n".join(f"{name}()" for name in calls)
        program = f"{attempt.code}\n\n{checks}\nprint({SMOKE_MARKER!r})\n"
        cfg = SandboxConfig(
            timeout_seconds=self.config.timeout_seconds,
            max_memory_mb=self.config.max_memory_mb,
            security_mode=self.config.security_mode,
            caller_id=f"evolution:{attempt.attempt_id}",
        )
        result = execute(program, cfg)
        attempt.sandbox = result.to_json()
        if result.success and SMOKE_MARKER in result.stdout and not result.output_truncated:
            return True
        if result.timed_out:
            why = "sandbox test timed out"
        elif result.memory_exceeded:
            why = "sandbox test exceeded the memory limit"
        elif not result.success:
            why = f"sandbox test failed: {result.error_type}: {result.error}"
        else:
            why = "sandbox test did not run to completion (output truncated or marker missing)"
        self._move(attempt, State.REJECTED, why)
        return False

    def _evaluate(self, attempt: Attempt, fitness_fn: FitnessFn | None) -> bool:
        if fitness_fn is None:
            attempt.validation_only = True
            log.warning("evolution attempt %s: no fitness function, validation-only mode", attempt.attempt_id)
            return True
        current = self.rollback.current_code()
        try:
            cand = float(fitness_fn(attempt.code))
            base = float(fitness_fn(current)) if current is not None else None
        except Exception as exc:  # the fitness function is caller code; any failure fails the attempt
            self._move(attempt, State.FAILED, f"fitness function raised {type(exc).__name__}: {exc}")
            return False
        attempt.candidate_score, attempt.current_score = cand, base
        if not math.isfinite(cand) or (base is not None and not math.isfinite(base)):
            self._move(attempt, State.FAILED, "fitness function returned a non-finite score")
            return False
        if base is not None and cand - base <= self.config.improvement_threshold:
            self._move(
                attempt,
                State.REJECTED,
                f"improvement {cand - base:.6g} does not exceed threshold {self.config.improvement_threshold:.6g}",
            )
            return False
        return True

    # -- approval ------------------------------------------------------------------------
    def approve(self, attempt_id: str, approver: str) -> Attempt:
        """Human approval of a pending attempt; deploys it as the new current version."""
        attempt = self.get(attempt_id)
        if not approver.strip():
            raise EvolutionError("an approver name is required", hint="pass the approver's name")
        self._move(attempt, State.APPROVED, "approved", actor=approver)
        self._deploy(attempt, approver)
        return attempt

    def reject(self, attempt_id: str, approver: str, reason: str) -> Attempt:
        attempt = self.get(attempt_id)
        self._move(attempt, State.REJECTED, reason or "rejected by approver", actor=approver)
        return attempt

    def _deploy(self, attempt: Attempt, approver: str) -> None:
        try:
            snap = self.rollback.deploy(attempt.code, approver=approver, metadata={"attempt_id": attempt.attempt_id})
        except EvolutionError as exc:
            self._move(attempt, State.FAILED, f"deploy failed: {exc.message}")
            raise
        attempt.deployed_version = snap.version
        self._move(attempt, State.DEPLOYED, f"deployed as v{snap.version}", actor=approver)

    def rollback_to(self, version: int, actor: str) -> None:
        """Restore ``version``; attempts deployed after it are marked ROLLED_BACK."""
        self.rollback.rollback_to(version)
        for a in self.attempts.values():
            if a.state is State.DEPLOYED and a.deployed_version is not None and a.deployed_version > version:
                self._move(a, State.ROLLED_BACK, f"rolled back to v{version}", actor=actor)
