"""The pipeline against the real restricted executor (no mocks of security features)."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest
from terminai_apts.errors import EvolutionError, IntegrityError
from terminai_apts.evolution import EvolutionConfig, EvolutionOrchestrator, State
from terminai_apts.evolution.states import Transition

GOOD = "def double(x):\n    return x * 2\n\ndef check():\n    assert double(2) == 4\n"
TESTS = "assert double(3) == 6\n"
AUTO = EvolutionConfig(require_human_approval=False, timeout_seconds=5, max_memory_mb=128)


def _states(attempt) -> list[str]:  # type: ignore[no-untyped-def]
    return [t.target.value for t in attempt.transitions]


def test_valid_proposal_with_fitness_goes_through_testing(tmp_path: Path) -> None:
    orch = EvolutionOrchestrator(tmp_path, AUTO)
    seen: list[Transition] = []
    orch.subscribe(lambda a, t: seen.append(t))
    attempt = orch.evolve(GOOD, fitness_fn=lambda code: float(len(code)), tests=TESTS)
    assert _states(attempt) == ["VALIDATING", "TESTING", "EVALUATING", "APPROVED", "DEPLOYED"]
    assert [t.target.value for t in seen] == _states(attempt)
    assert all(t.actor and t.reason and t.at > 0 for t in seen)
    assert attempt.sandbox is not None and attempt.sandbox["success"] is True
    assert orch.rollback.current_code() == GOOD


def test_missing_module_import_rejected_with_import_in_reason(tmp_path: Path) -> None:
    orch = EvolutionOrchestrator(tmp_path, AUTO)
    attempt = orch.evolve("import nosuchmodule_xyz\n\ndef f():\n    return 1\n", fitness_fn=lambda c: 1.0)
    assert attempt.state is State.REJECTED
    assert "import" in attempt.reason
    assert attempt.violations and orch.rollback.current is None


def test_security_violation_rejected_with_violations(tmp_path: Path) -> None:
    attempt = EvolutionOrchestrator(tmp_path, AUTO).evolve("def f():\n    return eval('1')\n")
    assert attempt.state is State.REJECTED and "eval" in attempt.reason
    assert "TESTING" not in _states(attempt)


def test_failing_test_and_timeout_reject_with_sandbox_result(tmp_path: Path) -> None:
    orch = EvolutionOrchestrator(tmp_path, EvolutionConfig(require_human_approval=False, timeout_seconds=1))
    bad = orch.evolve(GOOD, tests="assert double(3) == 7\n")
    assert bad.state is State.REJECTED and "AssertionError" in bad.reason
    assert bad.sandbox is not None and bad.sandbox["success"] is False
    slow = orch.evolve("def spin():\n    while True:\n        pass\n")
    assert slow.state is State.REJECTED and "timed out" in slow.reason
    assert slow.sandbox is not None and slow.sandbox["timed_out"] is True


def test_smoke_test_actually_calls_the_code(tmp_path: Path) -> None:
    attempt = EvolutionOrchestrator(tmp_path, AUTO).evolve("def boom():\n    return 1 // 0\n")
    assert attempt.state is State.REJECTED and "ZeroDivisionError" in attempt.reason


def test_validation_only_mode_warns_and_records(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        attempt = EvolutionOrchestrator(tmp_path, AUTO).evolve(GOOD)
    assert attempt.validation_only and attempt.state is State.DEPLOYED
    assert "validation-only" in caplog.text
    strict = EvolutionOrchestrator(tmp_path, EvolutionConfig(require_fitness_fn=True))
    with pytest.raises(EvolutionError, match="fitness function is required"):
        strict.evolve(GOOD)


def test_fitness_threshold(tmp_path: Path) -> None:
    cfg = EvolutionConfig(require_human_approval=False, improvement_threshold=0.5)
    orch = EvolutionOrchestrator(tmp_path, cfg)
    scores = {GOOD: 1.0}
    orch.evolve(GOOD, fitness_fn=lambda c: scores.get(c, 0.0))
    better = GOOD + "\n# v2\n"
    scores[better] = 1.4
    low = orch.evolve(better, fitness_fn=lambda c: scores[c])
    assert low.state is State.REJECTED and "does not exceed threshold" in low.reason
    assert "TESTING" in _states(low)
    scores[better] = 2.0
    assert orch.evolve(better, fitness_fn=lambda c: scores[c]).state is State.DEPLOYED


def test_approval_gate(tmp_path: Path) -> None:
    orch = EvolutionOrchestrator(tmp_path, EvolutionConfig(require_human_approval=True))
    attempt = orch.evolve(GOOD, fitness_fn=lambda c: 1.0)
    assert attempt.state is State.PENDING_APPROVAL and orch.is_pending_approval(attempt.attempt_id)
    assert orch.rollback.current is None  # never deployed before a human says so
    reloaded = EvolutionOrchestrator(tmp_path)
    reloaded.approve(attempt.attempt_id, "alice")
    done = reloaded.get(attempt.attempt_id)
    assert done.state is State.DEPLOYED and done.transitions[-2].actor == "alice"
    assert reloaded.rollback.get(1).approver == "alice"
    with pytest.raises(EvolutionError, match="illegal transition DEPLOYED -> APPROVED"):
        reloaded.approve(attempt.attempt_id, "alice")
    other = reloaded.evolve(GOOD + "# b\n")
    reloaded.reject(other.attempt_id, "bob", "not needed")
    assert other.state is State.REJECTED and other.reason == "not needed"
    assert not reloaded.is_pending_approval()


def test_rollback_marks_attempts_and_refuses_tampered_target(tmp_path: Path) -> None:
    orch = EvolutionOrchestrator(tmp_path, AUTO)
    orch.evolve(GOOD)
    second = orch.evolve(GOOD + "# v2\n")
    orch.rollback_to(1, "ops")
    assert second.state is State.ROLLED_BACK and orch.rollback.current == 1
    orch.rollback.get(2).code = "evil = 1\n"
    with pytest.raises(IntegrityError, match="snapshot v2"):
        orch.rollback_to(2, "ops")


def _cli(*args: str, stdin: str = "", env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "terminai_apts.cli", "evolve", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )


def test_cli_end_to_end(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    key = tmp_path / "key"
    key.write_text("cli-secret")
    base = ["--store", store, "--hmac-key-file", str(key), "--json"]
    out = _cli("propose", "-", *base, stdin=GOOD)
    assert out.returncode == 0, out.stderr
    attempt = json.loads(out.stdout)
    assert attempt["state"] == "PENDING_APPROVAL"
    assert _cli("approve", attempt["attempt_id"], "--approver", "alice", *base).returncode == 0
    rejected = _cli("propose", "-", *base, stdin="import os\n")
    assert rejected.returncode == 1 and "import" in json.loads(rejected.stdout)["reason"]
    hist = json.loads(_cli("history", *base).stdout)
    assert hist["current_version"] == 1 and hist["snapshots"][0]["mac"]
    assert json.loads(_cli("verify", *base).stdout)["ok"] is True
    status = json.loads(_cli("status", *base).stdout)
    assert {a["state"] for a in status["attempts"]} == {"DEPLOYED", "REJECTED"}
    snap_file = tmp_path / "store" / "snapshots.json"
    data = json.loads(snap_file.read_text())
    data["snapshots"][0]["code"] = "evil = 1\n"
    snap_file.write_text(json.dumps(data))
    bad = _cli("verify", *base)
    assert bad.returncode == 1 and "v1" in bad.stdout
    assert _cli("rollback", "1", *base).returncode != 0
