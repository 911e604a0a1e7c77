"""The attack generator (``attack_generator.py``): a fixed seed and a few seconds in the
default run, 30 s behind the ``slow`` marker and 10 minutes in ``make attacks``
(``APTS_ATTACK_SECONDS`` and ``APTS_ATTACK_SEED`` override both), with a planted list of
forbidden objects for the callback routes; and proof that it finds escapes when the
guard's checks are switched back to the old ones, and when only the checks at a
function's entry are switched off."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from terminai_apts.executor.python_layer import sandbox_globals
from terminai_apts.executor.python_layer.transform import SandboxTransformer
from terminai_apts.memory import store

from tests.unit.executor import attack_generator, reachability
from tests.unit.executor.test_attacks_on_value_check_shortcuts import _OLD_SCANNED, _raising_check
from tests.unit.memory.conftest import make_records

ROOT = Path(__file__).resolve().parents[3]
SEED = int(os.environ.get("APTS_ATTACK_SEED", "2026"))


def _run(*args: str, timeout: float) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "tests.unit.executor.attack_generator", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def _describe(findings: list[dict[str, Any]]) -> str:
    return "\n\n".join(f"{f['kind']}: {f['value']} (seed {f['seed']})\n{f['source']}" for f in findings[:3])


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("generator") / "mem.db"
    store.build(path, make_records())
    return str(path)


def test_generated_attacks_find_nothing(db: str) -> None:
    seconds = os.environ.get("APTS_ATTACK_SECONDS", "4")
    result = _run("--seed", str(SEED), "--seconds", seconds, "--db", db, "--plant", timeout=float(seconds) + 120)
    assert result["findings"] == [], _describe(result["findings"])
    assert result["programs"] > 100 and result["statements"] > 300


@pytest.mark.slow
def test_generated_attacks_find_nothing_long(db: str) -> None:
    seconds = os.environ.get("APTS_ATTACK_SECONDS", "30")  # `make attacks`: 10 minutes
    result = _run(
        "--seed", str(SEED + 1), "--seconds", seconds, "--db", db, "--plant", timeout=float(seconds) + 300
    )  # fmt: skip
    assert result["findings"] == [], _describe(result["findings"])


def test_generator_finds_escapes_with_the_old_checks() -> None:
    """Not vacuous: with names asked to the object itself and values unchecked (the guard
    before the fix), the same generator reaches a forbidden object."""
    result = _run("--seed", str(SEED), "--seconds", "30", "--checks-off", timeout=180)
    assert result["findings"], "the generator found nothing against the old guard"
    assert all(f["kind"] for f in result["findings"])


def test_generator_finds_callback_escapes_with_the_entry_checks_off() -> None:
    """Not vacuous for the callback routes: with every other check on and only the checks
    at a function's entry off, a route hands a planted forbidden object to the program's
    callbacks."""
    result = _run("--seed", str(SEED), "--seconds", "30", "--plant", "--entry-checks-off", timeout=180)
    assert result["findings"], "the generator found nothing with the entry checks off"
    assert {f["variable"] for f in result["findings"]} == {"caught"}


@pytest.mark.parametrize("old", ["one-pass scan of a list", "a check that raises while the name is bound"])
def test_generator_finds_the_sixth_round_s_routes_with_their_old_behaviour(
    old: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not vacuous for the routes `test_attacks_on_value_check_shortcuts` closed: with either old behaviour
    back (and every other check on), the generator reaches a planted forbidden object."""
    if old.startswith("one-pass"):
        monkeypatch.setattr(attack_generator.guards, "_SCANNED", _OLD_SCANNED)
    else:  # names bound before their check, as they once were, and a check that raises
        monkeypatch.setattr(sandbox_globals, "guarded_capture", _raising_check)
        monkeypatch.setattr(SandboxTransformer, "hide_bound_names", False)
    report = attack_generator.generate_and_run(SEED, 60, ("high", "strict"), stop_at_first=True, plant=True)
    assert report.findings, f"the generator found nothing with the {old} back"
    assert {f.variable for f in report.findings} == {"caught"}


def test_every_move_is_generated() -> None:
    rng = random.Random(SEED)
    text = "".join(attack_generator.generate(rng, "high", 6, thermal=True, plant=True).source for _ in range(400))
    for move in (
        "getattr(", "Liar(", "Spoof(", "bytes(", "bytearray(", "Sub(", "next(iter(", "*rest", "star",
        "class C", "@", "raise ", "except Exception as e", "json.dumps(", "object_hook=", ".format(",
        "{1:{0.", "key=lambda", "type(", "setattr(", "thermal.search(", ".__class__", ".__name__",
        "hasattr(", "delattr(", "staticmethod(", "classmethod(", "property(",
        "sorted(leak", "key=keep", "map(keep", "Eq() in", ".send,", "case [m", "yield from", "with ",
        "functools.reduce(", "itertools.groupby(", "itertools.starmap(", "cmp_to_key(", "default=keep",
        "object_pairs_hook=", "re.sub(", "defaultdict(keep_star)", ".extend(", "[1:2] = ", ".update(zip(",
        "caught.append(m",
    ):  # fmt: skip
        assert move in text, move
    strict = attack_generator.generate(random.Random(1), "strict", 3).source
    assert "import" not in strict and "Spoof" not in strict  # strict has neither modules nor hash()


def test_a_planted_escape_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checker reports a forbidden object a program binds, and a rewrite of the
    guards' module state (planted here: nothing reachable leads to either)."""
    glb = reachability.sandbox_globals("high", {"leak": attack_generator.guards.guarded_getattr})
    findings = attack_generator.run_program(attack_generator.Program("v0 = leak\nv1 = 1\n"), glb, 0)
    assert [(f.variable, f.kind) for f in findings] == [("v0", "python function")]
    monkeypatch.setattr(attack_generator.guards, "FORBIDDEN_ATTRS", attack_generator.guards.FORBIDDEN_ATTRS)
    glb = reachability.sandbox_globals("high", {"state": vars(attack_generator.guards)})
    findings = attack_generator.run_program(attack_generator.Program("state['FORBIDDEN_ATTRS'] = 1\n"), glb, 0)
    assert [f.kind for f in findings] == ["guard state rewritten"]
