"""The assume-breach runner cannot be reached from the CLI, the API or the image's entry
points: production code starts one zygote module, which always runs RestrictedPython."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import terminai_apts
from terminai_apts.executor import SandboxConfig, execute
from terminai_apts.executor.host import run, zygote_client
from terminai_apts.executor.process import child, zygote

PACKAGE = Path(terminai_apts.__file__).parent


def _calls(name: str) -> list[ast.Call]:
    found = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if called == name:
                    found.append(node)
    return found


def test_the_package_never_names_the_harness() -> None:
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text()
        assert "tests.breach" not in text and "run_raw" not in text, path


def test_production_starts_only_the_production_zygote_with_its_defaults() -> None:
    assert zygote_client.ZygoteClient.__init__.__defaults__ == ("terminai_apts.executor.process.zygote", ())
    # Every construction of a zygote client in the package passes no module or arguments,
    assert all(not call.args and not call.keywords for call in _calls("ZygoteClient"))
    # and the zygote's entry point runs RestrictedPython whatever it is given.
    assert zygote.main.__defaults__ == (child.run_cell, frozenset())
    assert all(not call.args and not call.keywords for call in _calls("main"))


def test_extra_arguments_do_not_switch_a_layer_off() -> None:
    probe = zygote_client.ZygoteClient(args=("namespaces,landlock,seccomp,rlimits",))
    try:
        result = run._run_fresh("print(1)", SandboxConfig(timeout_seconds=10), None, lambda: probe)
    finally:
        probe.close()
    assert "seccomp" in result.isolation and result.stdout == "1\n"
    assert result.isolation == execute("print(2)", SandboxConfig(timeout_seconds=10)).isolation


def test_the_cli_offers_no_way_to_it() -> None:
    shown = subprocess.run(
        [sys.executable, "-m", "terminai_apts.cli", "exec", "--help"], capture_output=True, text=True, check=True
    ).stdout
    options = sorted({word.split("=")[0] for word in shown.split() if word.startswith("--")})
    assert options == [
        "--audit",
        "--caller",
        "--db",
        "--help",
        "--json",
        "--max-output",
        "--memory-mb",
        "--mode",
        "--timeout",
    ]
