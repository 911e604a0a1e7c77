"""Red team: the host reading a hostile run (frames, exit statuses, pacing).

A run can write anything to its result pipe and exit however it likes; what the host
reports (success, output, which limit was hit) must not be the run's to choose, and the
host must never fail with a traceback.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest
from terminai_apts.executor import SandboxConfig

from tests.breach import harness
from tests.breach.test_hostile_frames import FORGE, VALID

ROOT = Path(__file__).resolve().parents[2]


def _raw(payload: str) -> str:
    """Raw code sending ``payload`` (JSON text, written as is) as a result frame."""
    return FORGE + f"frame({payload!r}.encode())\ntime.sleep(30)\n"


def _valid_with(field: str, literal: str) -> str:
    """The valid result as JSON text with ``field`` set to a raw JSON ``literal``."""
    text = json.dumps({**VALID, field: "@@"})
    return text.replace('"@@"', literal)


@pytest.mark.parametrize(
    ("field", "literal"),
    [
        ("line", "NaN"),
        ("line", "Infinity"),
        ("line", "-Infinity"),
        ("line", "1e400"),
        ("line", "1" * 5000),  # past int's string-conversion limit
        ("seq", "true"),  # bool is an int in Python
        ("seq", "1.0"),
        ("line", "-1"),
    ],
    ids=["nan", "inf", "-inf", "huge-float", "huge-digits", "bool-seq", "float-seq", "negative-line"],
)
def test_non_json_numbers_are_protocol_errors(field: str, literal: str) -> None:
    result = harness.breach(_raw(_valid_with(field, literal)))
    assert not result.success and result.error_type == "ProtocolError", result


def test_duplicate_keys_cannot_smuggle_a_second_value() -> None:
    # JSON objects with repeated keys: the last wins; whatever wins, the schema is checked.
    payload = json.dumps(VALID)[:-1] + ', "success": "yes"}'
    result = harness.breach(_raw(payload))
    assert result.error_type == "ProtocolError", result


def _cli(code: str) -> subprocess.CompletedProcess[str]:
    """The real CLI printing a result from the harness zygote (``--json`` and human)."""
    driver = (
        "import sys\n"
        "from terminai_apts import cli\n"
        "from terminai_apts.executor.host import cli as exec_cli\n"
        "from tests.breach import harness\n"
        "exec_cli.execute = lambda code, config, api: harness.breach(code, config)\n"
        "sys.exit(cli.main(['exec', *sys.argv[1:]]))\n"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", driver, *flags],
            input=code,
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
            env={**os.environ, "PYTHONIOENCODING": "utf-8", "PYTHONPATH": str(ROOT)},
            check=False,
        )
        for flags in (["--json", "--timeout", "5"], ["--timeout", "5"])
    ]
    for done in runs:
        assert "Traceback" not in done.stderr, done.stderr
        assert done.returncode in {0, 1}, done
    return runs[0]


def test_a_lone_surrogate_does_not_crash_the_cli() -> None:
    # Valid JSON ("\\ud800" is an escape), but not text any stream can encode.
    done = _cli(_raw(_valid_with("stdout", '"owned \\ud800 and \\udfff"')))
    shown = json.loads(done.stdout)
    assert shown["error_type"] == "ProtocolError" or "\ud800" not in shown["stdout"], shown


def test_the_cli_survives_a_control_character_flood() -> None:
    # Escapes that print as terminal control sequences stay data in --json output.
    done = _cli(_raw(_valid_with("stdout", json.dumps("\x1b]0;owned\x07\x1b[2J" * 100))))
    assert "\x1b" not in done.stdout  # escaped by json.dumps


@pytest.mark.parametrize(
    ("status", "claim"),
    [(137, "memory"), (152, "cpu"), (159, "seccomp")],
    ids=["exit-137-as-sigkill", "exit-152-as-sigxcpu", "exit-159-as-sigsys"],
)
def test_an_exit_status_cannot_claim_a_limit(status: int, claim: str) -> None:
    # 128 + N is what a shell prints for "killed by signal N"; a run can simply exit so.
    result = harness.breach(f"import os\nos._exit({status})\n")
    assert not result.success
    assert not result.memory_exceeded and not result.timed_out, (claim, result)
    assert result.error_type not in {"MemoryError", "TimeoutError", "SandboxViolation"}, (claim, result)


def test_a_run_cannot_kill_itself_to_claim_the_memory_limit() -> None:
    # SIGKILL on itself through SIGIO (no kill() call): the host would read "memory".
    body = (
        "import fcntl\n"
        "fcntl.fcntl(res, fcntl.F_SETOWN, os.getpid())\n"
        "fcntl.fcntl(res, 10, 9)\n"  # F_SETSIG SIGKILL
        "fcntl.fcntl(res, fcntl.F_SETFL, os.O_WRONLY | os.O_ASYNC)\n"
    )
    result = harness.breach(FORGE + f"out['r'] = attempt(lambda: exec({body!r}))\n", skip=("namespaces",))
    assert not result.memory_exceeded and not result.timed_out, result


def test_a_flood_of_tiny_frames_ends_the_run_at_once() -> None:
    started = time.monotonic()
    result = harness.breach(FORGE + "for _ in range(100000):\n    frame(b'{}')\ntime.sleep(30)\n")
    assert result.error_type == "ProtocolError" and result.session_ended, result
    assert time.monotonic() - started < 5


def test_a_slow_drip_costs_the_host_little_and_ends_at_the_deadline() -> None:
    # One byte at a time, forever: the host wakes per byte but must stop at its deadline.
    config = SandboxConfig(timeout_seconds=2, security_mode="standard")
    body = (
        "data = struct.pack('>I', 1 << 20) + b'x' * (1 << 20)\n"
        "for i in range(len(data)):\n"
        "    os.write(res, data[i : i + 1])\n"
        "    time.sleep(0.0005)\n"
    )
    before = resource.getrusage(resource.RUSAGE_SELF)
    started = time.monotonic()
    result = harness.breach(FORGE + body, config)
    elapsed = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert result.timed_out and result.session_ended, result
    assert elapsed < config.timeout_seconds + 1.5
    assert used < 0.75 * elapsed, (used, elapsed)  # the host waited; it did not spin
