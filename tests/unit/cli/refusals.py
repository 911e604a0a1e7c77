"""What every refused input must look like from the installed console scripts.

A refusal ends within :data:`TIME_BOUND` with the documented exit code, exactly one line
starting with ``error:`` followed by a ``  hint:`` line, no traceback and no "unexpected
failure"; the fragments the case names (the file, the key, the entry) are in the error.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

BIN = Path(sys.executable).parent
SANDBOX = str(BIN / "terminai-sandbox")
APTS = str(BIN / "terminai-apts")
REPO = Path(__file__).resolve().parents[3]
# A FIFO or /dev/zero read like a file hangs or fills memory; a refusal takes about a second
# (several for the release commands, whose imports are heavy) on a loaded machine.
TIME_BOUND = 40.0


def run(
    tool: str, *args: str, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [tool, *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        timeout=TIME_BOUND,
    )


def in_process(tool: str, *args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``tool``'s console entry point called in this interpreter, answered like :func:`run`.

    For the rows that pin what a command decides (which input it refuses, in which words,
    before which work), not what the process boundary adds: a few rows of each file still
    go through :func:`run`, and ``test_refused_build_inputs`` holds both drivers to the same
    stderr. Never for an input that could block (a FIFO, a device): there only a process
    can be given up on at :data:`TIME_BOUND`.
    """
    module = {SANDBOX: "terminai_sandbox.console", APTS: "terminai_apts.console"}[tool]
    main = importlib.import_module(module).main
    out, err = io.StringIO(), io.StringIO()
    saved_argv, saved_env, saved_term = sys.argv, dict(os.environ), signal.getsignal(signal.SIGTERM)
    os.environ.update(env or {})
    sys.argv = [tool, *args]
    code: object = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main()  # the console script's exit status, when it returns one
            except SystemExit as exc:
                code = exc.code
    finally:
        sys.argv = saved_argv
        os.environ.clear()
        os.environ.update(saved_env)
        signal.signal(signal.SIGTERM, saved_term)  # the entry point installs its own
    returncode = code if isinstance(code, int) else (0 if code is None else 1)
    return subprocess.CompletedProcess([tool, *args], returncode, out.getvalue(), err.getvalue())


def error_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The one ``error:`` line (asserted to be one, and to be followed by its hint)."""
    lines = proc.stderr.splitlines()
    errors = [n for n, line in enumerate(lines) if line.startswith("error:")]
    assert len(errors) == 1, proc.stderr
    assert errors[0] + 1 < len(lines) and lines[errors[0] + 1].startswith("  hint: "), proc.stderr
    assert lines[errors[0] + 1].strip() != "hint:", proc.stderr
    return lines[errors[0]]


def assert_refused(proc: subprocess.CompletedProcess[str], code: int, *fragments: str) -> str:
    """``proc`` refused with ``code``, one error line naming each of ``fragments``; that line."""
    assert "Traceback" not in proc.stderr and "unexpected failure" not in proc.stderr, proc.stderr
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    line = error_line(proc)
    for fragment in fragments:
        assert fragment in line, (fragment, line)
    return line


# What a path is made into instead of the file a command reads.
def make_directory(path: Path) -> None:
    path.mkdir()


def make_fifo(path: Path) -> None:
    os.mkfifo(path)


def make_device(path: Path) -> None:
    path.symlink_to("/dev/zero")
