"""The agent-program corpus (``tests/corpus/programs``, one program per file): programs
written the way a model given seed 000's prompt writes them, each with the output an
independent oracle gives (``tests/corpus/oracle.py``: CPython running the program with
the seed's documented SQL semantics over the archive's raw rows). Through the real
executor, against a real memory index, every program prints exactly that in standard
and high mode; strict mode refuses exactly the programs that import a module.

One session per mode (a fresh one if a program ends it), so the whole corpus takes a few
seconds per mode.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from terminai_apts.executor import ApiSpec, ExecutionResult, ExecutorSession, SandboxConfig, thermal_spec
from terminai_apts.executor.policy import Mode
from terminai_apts.executor.python_layer.transform import SandboxTransformer

from tests.corpus import memory_fixture, oracle

ROOT = Path(__file__).resolve().parents[2] / "corpus"
CORPUS = ROOT / "programs"
EXPECTED = ROOT / "expected"
PROGRAMS = sorted(CORPUS.glob("*.py"))
# Strict mode has no imports, so programs that import a module are refused there (and
# only those). Update with the new figure when the corpus or strict mode changes.
STRICT_REFUSED = 79


@pytest.fixture(scope="module")
def memory_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return memory_fixture.build(tmp_path_factory.mktemp("corpus-memory"))


def expected(path: Path) -> str:
    return (EXPECTED / f"{path.stem}.out").read_text()


def uses_memory(path: Path) -> bool:
    return "thermal." in path.read_text()


def imports(path: Path) -> bool:
    return any(
        line.startswith(("import ", "from ")) and not line.startswith("from __future__")
        for line in path.read_text().splitlines()
    )


def refused(result: ExecutionResult) -> bool:
    return result.refused_by is not None or result.error_type in ("SandboxViolation", "ValidationError")


# The oracle itself as the injected API (built inside the run like any API): what the
# programs print through the sandbox when the memory API has exactly the seed's semantics.
SEED_SEMANTICS = ApiSpec(
    name="thermal",
    factory="tests.corpus.oracle:SeedThermal",
    methods=("search", "grep", "filter", "count", "get", "summarize"),
)


def run_corpus(mode: Mode, db: Path | None, api: ApiSpec | None = None) -> dict[str, ExecutionResult]:
    config = SandboxConfig(timeout_seconds=10, security_mode=mode)
    spec = api or thermal_spec(str(db))
    results: dict[str, ExecutionResult] = {}
    session: ExecutorSession | None = None
    try:
        for path in PROGRAMS:
            if session is None or session.closed:
                session = ExecutorSession(config, api=spec)
            results[path.name] = session.run(path.read_text())
    finally:
        if session is not None:
            session.close()
    return results


def test_the_corpus_is_large_varied_and_has_expectations() -> None:
    assert len(PROGRAMS) >= 100
    assert len({p.read_text() for p in PROGRAMS}) == len(PROGRAMS)  # no duplicates
    assert sum(uses_memory(p) for p in PROGRAMS) >= 90
    assert {p.stem for p in PROGRAMS} == {p.stem for p in EXPECTED.glob("*.out")}


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_the_expected_output_is_the_oracles(path: Path) -> None:
    """The stored expectation is what the oracle prints (regenerate with
    ``python -m tests.corpus.regenerate`` after changing a program)."""
    assert oracle.run(path.read_text()) == expected(path)


def _failures(results: dict[str, ExecutionResult]) -> dict[str, str]:
    return {
        name: (f"{r.error_type}: {r.error}" if not r.success else f"output differs:\n{r.stdout}")
        for name, r in results.items()
        if not r.success or r.stdout != expected(CORPUS / name)
    }


@pytest.mark.parametrize("mode", ["standard", "high"])
def test_every_program_prints_the_oracles_output(mode: Mode, memory_db: Path) -> None:
    """The memory index as agents get it: its answers must be the seed's."""
    failures = _failures(run_corpus(mode, memory_db))
    assert not failures, f"{len(failures)} of {len(PROGRAMS)}:\n" + "\n".join(
        f"{k}: {v}" for k, v in sorted(failures.items())
    )


@pytest.mark.parametrize("mode", ["standard", "high"])
def test_the_sandbox_runs_every_program_as_cpython_does(mode: Mode) -> None:
    """The executor alone: with the seed's semantics injected (the oracle), each program
    prints in the sandbox what it prints under CPython, so a difference in the test above
    is a difference of the memory API."""
    failures = _failures(run_corpus(mode, None, SEED_SEMANTICS))
    assert not failures, f"{len(failures)} of {len(PROGRAMS)}:\n" + "\n".join(
        f"{k}: {v}" for k, v in sorted(failures.items())
    )


def test_strict_refusal_rate(memory_db: Path) -> None:
    results = run_corpus("strict", memory_db)
    refusals = {name for name, r in results.items() if refused(r)}
    importing = {p.name for p in PROGRAMS if imports(p)}
    assert refusals == importing  # only the programs that import something
    assert len(refusals) == STRICT_REFUSED, f"strict refuses {len(refusals)} of {len(PROGRAMS)}"


def _checks_entry(node: ast.FunctionDef | ast.Lambda) -> bool:
    """The compiled function starts by checking its parameters (or has none)."""
    args = node.args
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg) if a]
    if not names:
        return True
    if isinstance(node, ast.Lambda):
        return isinstance(node.body, ast.IfExp) and "_entered_(" in ast.unparse(node.body.test)
    head = "\n".join(ast.unparse(stmt) for stmt in node.body[:4])
    return all(f"_type_({n})" in head or f"_enter_star_({n})" in head or f"_enter_kw_({n})" in head for n in names)


def test_every_function_of_the_corpus_checks_its_parameters() -> None:
    """By construction, over real programs: every ``def`` (methods, nested and decorated
    functions, generators) and every lambda of the 148-program agent corpus, as the compile
    policy emits it, checks each of its parameters at entry."""
    functions = 0
    for path in PROGRAMS:
        errors: list[str] = []
        tree = SandboxTransformer(errors, [], {}).visit(ast.parse(path.read_text()))
        assert not errors, (path.name, errors)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.Lambda)) and not _is_generated(node):
                functions += 1
                assert _checks_entry(node), f"{path.name}: line {node.lineno}\n{ast.unparse(node)[:400]}"
    assert functions > 80


def _is_generated(node: ast.FunctionDef | ast.Lambda) -> bool:
    return isinstance(node, ast.FunctionDef) and node.name.startswith("_")
