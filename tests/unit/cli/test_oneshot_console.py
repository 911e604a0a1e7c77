"""The console script (`terminai_apts.console`): for `exec` the run's zygote is
started before the command line's modules load, and results, exit codes and output
are those of `cli.main`.

The moment of the start is observed with CPython's own audit hook (the
``os.posix_spawn`` and ``subprocess.Popen`` events, raised as the zygote is spawned), not
by anything the console module reports about itself."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from terminai_apts import boundary, durable

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
# Loaded by the command line (parser, error boundary, validation), none needed to spawn.
# CPython's audit events of a new process (argv is the second argument of both).
_SPAWNS = ("subprocess.Popen", "os.posix_spawn")
_LATER = ("argparse", "terminai_apts.cli", "terminai_apts.boundary", "terminai_apts.executor.python_layer.validate")


def _spawn_probe(entry: str, argv: list[str], program: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Run ``entry`` as pip's wrapper does; which of ``_LATER`` were loaded when the
    production zygote was spawned."""
    probe = (
        "import re, sys\n"
        f"_SPAWNS = {_SPAWNS!r}\n"
        "def hook(event, args):\n"
        "    if event in _SPAWNS and 'terminai_apts.executor.process.zygote' in args[1]:\n"
        f"        loaded = [m for m in {_LATER!r} if m in sys.modules]\n"
        "        print('SPAWNED', *loaded, file=sys.__stderr__, flush=True)\n"
        "sys.addaudithook(hook)\n"
        f"sys.argv = ['terminai-apts', *{argv!r}]\n"
        f"from {entry} import main\n"
        "sys.exit(main())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], input=program, capture_output=True, text=True, timeout=120, check=False
    )
    lines = [line.split()[1:] for line in done.stderr.splitlines() if line.startswith("SPAWNED")]
    assert len(lines) == 1, done.stderr
    return done, lines[0]


def test_the_console_script_runs_the_console_module() -> None:
    scripts = tomllib.loads((ROOT / "packages/terminai-apts/pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["terminai-apts"] == "terminai_apts.console:main"


def test_exec_spawns_the_zygote_before_the_command_line_loads() -> None:
    done, loaded = _spawn_probe("terminai_apts.console", ["exec", "--json"], "print(6 * 7)")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["stdout"] == "42\n"
    assert loaded == [], loaded


def test_the_probe_sees_a_late_start() -> None:
    # The same probe through `cli.main` (which starts the zygote once its own modules are
    # loaded): the modules show, so the empty list above is not the probe's blindness.
    done, loaded = _spawn_probe("terminai_apts.cli", ["exec", "--json"], "print(6 * 7)")
    assert done.returncode == 0, done.stderr
    assert {"argparse", "terminai_apts.cli", "terminai_apts.boundary"} <= set(loaded), loaded


def test_other_commands_start_no_zygote() -> None:
    probe = (
        "import sys\n"
        f"sys.addaudithook(lambda e, a: e in {_SPAWNS!r} and print('SPAWNED', file=sys.__stderr__))\n"
        "sys.argv = ['terminai-apts', 'version']\n"
        "from terminai_apts.console import main\n"
        "sys.exit(main())\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and done.stdout.startswith("terminai-apts ")
    assert "SPAWNED" not in done.stderr


def _script(*args: str, program: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "terminai-apts"), *args], input=program, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.parametrize(
    ("args", "program", "code", "stdout", "stderr"),
    [
        (["exec"], "print('hi')", 0, "hi\n", ""),
        (["-q", "exec", "--mode", "strict"], "import os\n", 1, "", "not allowed"),
        (["exec"], "print(1", 1, "", "SyntaxError"),
        (["exec", "--mode", "lax"], "", 2, "", "invalid choice: 'lax'"),
        (["exec", "--timeout", "nan"], "", 2, "", "not a finite number"),
        # An error raised inside the command, through the boundary (the atomic writer not loaded).
        (["exec", "--db", "/nonexistent/x.db"], "print(1)", 2, "", "memory database /nonexistent/x.db not found"),
    ],
)
def test_exec_through_the_script_keeps_results_and_exit_codes(
    args: list[str], program: str, code: int, stdout: str, stderr: str
) -> None:
    done = _script(*args, program=program)
    assert done.returncode == code, done.stderr
    assert done.stdout == stdout
    assert stderr in done.stderr


def test_the_fast_exit_loses_no_output() -> None:
    # The process ends without the interpreter's teardown once the result is written:
    # a large result still arrives whole through a pipe, and so does the JSON form.
    big = _script("exec", "--max-output", "5000000", program="print('x' * 3_000_000)")
    assert big.returncode == 0, big.stderr
    assert big.stdout == "x" * 3_000_000 + "\n"
    shaped = _script("exec", "--json", program="print('y' * 100_000)")
    assert json.loads(shaped.stdout)["stdout"] == "y" * 100_000 + "\n"


def test_exec_loads_no_pathlib() -> None:
    # Observed at the very end (the console module leaves through ``os._exit``, so an atexit
    # handler would never run): pathlib pulls urllib.parse and ipaddress in with it.
    probe = (
        "import os, sys\n"
        "real = os._exit\n"
        "def leave(code):\n"
        "    print('LOADED', *[m for m in ('pathlib', 'shutil', 'argparse') if m in sys.modules],"
        " file=sys.__stderr__, flush=True)\n"
        "    real(code)\n"
        "os._exit = leave\n"
        "sys.argv = ['terminai-apts', 'exec']\n"
        "from terminai_apts.console import main\n"
        "sys.exit(main())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], input="print(1)", capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0 and done.stdout == "1\n", done.stderr
    line = next(x for x in done.stderr.splitlines() if x.startswith("LOADED"))
    assert "argparse" in line and "pathlib" not in line, line


def test_a_failed_command_still_removes_the_writers_temporary_files(tmp_path: Path) -> None:
    # The boundary no longer imports the atomic writer itself: a command that used it
    # (so loaded it) still has its unrenamed temporary file removed when it fails.
    tmp = durable.temp_path(tmp_path / "index.db")
    tmp.write_bytes(b"half")

    def body() -> int:
        raise OSError(28, "No space left on device")

    code = boundary.guarded(body, as_json=lambda: False, subject=lambda: None, exec_shape=lambda: False)
    assert code != 0 and not tmp.exists()


def test_the_audit_line_is_written_before_the_fast_exit(tmp_path: Path) -> None:
    log = str(tmp_path / "audit.log")
    for program in ("print(1)", "import os"):
        _script("exec", "--audit", log, program=program)
    verified = _script("exec-audit", log)
    assert verified.returncode == 0 and verified.stdout == "ok: 2 entries\n", verified.stderr
