"""The one-shot path agents use (`terminai-apts exec`): its parser is built from the
executor's commands alone, and the run's zygote starts before the program is read."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest
from terminai_apts import cli
from terminai_apts.executor.host import cli as executor_cli

BIN = Path(sys.executable).parent


def test_the_executor_commands_are_exactly_what_its_module_registers() -> None:
    parser = argparse.ArgumentParser()
    executor_cli.register(parser.add_subparsers())
    registered = {
        name for action in parser._actions if isinstance(action, argparse._SubParsersAction) for name in action.choices
    }
    assert registered == cli.EXECUTOR_COMMANDS


@pytest.mark.parametrize(
    ("argv", "word"),
    [
        (["exec", "--json"], "exec"),
        (["-q", "exec"], "exec"),
        (["--verbose", "repl"], "repl"),
        (["memory", "count", "x"], "memory"),
        (["--version"], None),
        (["-q", "--help", "exec"], None),
        ([], None),
    ],
)
def test_command_word(argv: list[str], word: str | None) -> None:
    assert cli.command_word(argv) == word


def _imported_by(argv: list[str], program: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run ``terminai-apts ARGV`` in a fresh interpreter; its result and the top-level
    ``terminai_apts`` sub-packages it imported."""
    probe = (
        "import sys, atexit\n"
        "atexit.register(lambda: print('MODULES', *sorted({m.split('.')[1] for m in sys.modules"
        " if m.startswith('terminai_apts.')}), file=sys.__stderr__))\n"
        f"sys.argv = ['terminai-apts', *{argv!r}]\n"
        "from terminai_apts.cli import main\n"
        "sys.exit(main())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], input=program, capture_output=True, text=True, timeout=120, check=False
    )
    line = next(x for x in done.stderr.splitlines() if x.startswith("MODULES"))
    return done, set(line.split()[1:])


def test_exec_loads_neither_the_memory_store_nor_evolution() -> None:
    done, packages = _imported_by(["exec", "--json"], "print(6 * 7)")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["stdout"] == "42\n"
    assert "executor" in packages and not packages & {"memory", "evolution"}, packages


def test_exec_results_and_exit_codes_are_unchanged_by_the_short_parser() -> None:
    refused, _ = _imported_by(["-q", "exec", "--mode", "strict"], "import os\n")
    assert refused.returncode == 1 and "not allowed" in refused.stderr
    usage = subprocess.run(
        [str(BIN / "terminai-apts"), "exec", "--mode", "lax"], input="", capture_output=True, text=True, check=False
    )
    assert usage.returncode == 2 and "invalid choice: 'lax'" in usage.stderr
    # Every other command still sees the whole tree.
    memory, packages = _imported_by(["memory", "--help"], "")
    assert memory.returncode == 0 and "memory" in packages
