"""The agent-program corpus (``tests/corpus/programs``, one program per file) through the
real executor, against a real memory index: no refusal in standard and high mode, and
every program runs to completion there; strict mode's refusal rate is pinned so a change
shows.

One session per mode (a fresh one if a program ends it), so the whole corpus takes a few
seconds per mode.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from terminai_apts.executor import ExecutionResult, ExecutorSession, SandboxConfig, thermal_spec
from terminai_apts.executor.policy import Mode

from tests.corpus import memory_fixture

CORPUS = Path(__file__).resolve().parents[2] / "corpus" / "programs"
PROGRAMS = sorted(CORPUS.glob("*.py"))
# Measured: strict mode has no imports, so programs that import a module are refused there
# (and only those). Update with the new figure when the corpus or strict mode changes.
STRICT_REFUSED = 48


@pytest.fixture(scope="module")
def memory_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return memory_fixture.build(tmp_path_factory.mktemp("corpus-memory"))


def refused(result: ExecutionResult) -> bool:
    return result.refused_by is not None or result.error_type in ("SandboxViolation", "ValidationError")


def run_corpus(mode: Mode, db: Path) -> dict[str, ExecutionResult]:
    config = SandboxConfig(timeout_seconds=10, security_mode=mode)
    results: dict[str, ExecutionResult] = {}
    session: ExecutorSession | None = None
    try:
        for path in PROGRAMS:
            if session is None or session.closed:
                session = ExecutorSession(config, api=thermal_spec(str(db)))
            results[path.name] = session.run(path.read_text())
    finally:
        if session is not None:
            session.close()
    return results


def test_the_corpus_is_large_and_one_program_per_file() -> None:
    assert len(PROGRAMS) >= 150
    assert len({p.read_text() for p in PROGRAMS}) == len(PROGRAMS)  # no duplicates


@pytest.mark.parametrize("mode", ["standard", "high"])
def test_no_refusal_and_every_program_completes(mode: Mode, memory_db: Path) -> None:
    results = run_corpus(mode, memory_db)
    failures = {name: f"{r.error_type}: {r.error}" for name, r in results.items() if not r.success}
    assert not failures, "\n".join(f"{k}: {v}" for k, v in sorted(failures.items()))
    assert all(r.stdout.strip() for r in results.values())


def test_strict_refusal_rate(memory_db: Path) -> None:
    results = run_corpus("strict", memory_db)
    refusals = {name for name, r in results.items() if refused(r)}
    importing = {
        p.name for p in PROGRAMS if any(line.startswith(("import ", "from ")) for line in p.read_text().splitlines())
    }
    assert refusals == importing  # only the programs that import something
    assert len(refusals) == STRICT_REFUSED, f"strict refuses {len(refusals)} of {len(PROGRAMS)}"
    others = {name: r.error for name, r in results.items() if name not in refusals and not r.success}
    assert not others, others
