"""The host bounds its own work on hostile programs (issue #36, parts 4 and 5), through
the installed `terminai-apts` console script: validation costs host CPU within the run's
deadline whatever the program, every byte printed stays within the caps (escapes
included), a malformed `repl --json` line gets an error reply and the session goes on,
and a native stack overflow from plain code is a specific error with a hint.

The host CPU figure is the CLI process's own (and what it reaped: the zygote and the
runs), read from ``RUSAGE_CHILDREN`` around one call; the bound is generous (start-up
included) and tied to ``--timeout``: before the fix a 199 KB f-string cost 2.8-11 s.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from terminai_apts.executor.frames import MAX_ERROR_CHARS
from terminai_apts.executor.policy import MAX_FSTRING_FIELDS, MAX_SOURCE_BYTES
from terminai_apts.executor.python_layer.output import fit_escaped, json_line, terminal_line

CLI = str(Path(sys.executable).parent / "terminai-apts")
# Start-up of the CLI, its zygote and one run on a loaded 2-core machine, in CPU seconds.
STARTUP_CPU = 3.0
# What a result line holds besides `stdout` and `error` (fields, isolation, hint).
ENVELOPE = 1024


def _cli(args: list[str], stdin: str | bytes, timeout: float = 60) -> tuple[subprocess.CompletedProcess[bytes], float]:
    """One run of the console script and the CPU seconds it (and what it reaped) used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [CLI, *args],
        input=stdin.encode() if isinstance(stdin, str) else stdin,
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return done, cpu


def _clean(done: subprocess.CompletedProcess[bytes]) -> None:
    err = done.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err and "unexpected failure" not in err, err[-2000:]


# -- 1. validation is bounded and inside the deadline ------------------------------------


def _fstring(fields: int) -> str:
    return 'a = 1\nx = f"' + "{a}" * fields + '"\n'


def _unary(n: int) -> str:
    return "x = " + "-" * n + "1\n"


def _operators(n: int) -> str:
    return "x = " + "1 + " * n + "1\n"


def _compare(n: int) -> str:
    return "x = " + "1 < " * n + "1\n"


def _names(n: int) -> str:
    return "a = 1\nx = [" + ", ".join(f"a{i}" for i in range(n)) + "]\n"


def _parens(n: int) -> str:
    return "x = " + "(" * n + "1" + ")" * n + "\n"


def _boolean(n: int) -> str:
    return "x = " + "1 and " * n + "1\n"


GENERATORS: dict[str, Callable[[int], str]] = {
    "fstring-fields": _fstring,
    "unary-chain": _unary,
    "operator-chain": _operators,
    "compare-chain": _compare,
    "many-names": _names,
    "nested-parens": _parens,
    "boolean-chain": _boolean,
}
# Sizes as a share of the source limit: small, half, just under the limit.
SHARES = (0.05, 0.5, 0.99)


def _sized(generator: Callable[[int], str], share: float) -> str:
    """The largest program of ``generator`` within ``share`` of MAX_SOURCE_BYTES."""
    budget = int(MAX_SOURCE_BYTES * share)
    low, high = 1, budget
    while low < high:
        middle = (low + high + 1) // 2
        if len(generator(middle).encode()) <= budget:
            low = middle
        else:
            high = middle - 1
    return generator(low)


@pytest.mark.parametrize("share", SHARES)
@pytest.mark.parametrize("kind", sorted(GENERATORS))
def test_hostile_program_costs_the_host_no_more_than_its_deadline(kind: str, share: float) -> None:
    timeout = 1.0
    code = _sized(GENERATORS[kind], share)
    done, cpu = _cli(["exec", "--json", "--timeout", str(timeout)], code)
    _clean(done)
    assert done.returncode in (0, 1), done.stderr
    result = json.loads(done.stdout)
    assert set(result) >= {"success", "error", "error_type"}
    assert cpu < timeout + STARTUP_CPU, (kind, len(code), cpu, result["error"])


def test_giant_fstring_is_refused_with_the_limit_named() -> None:
    done, cpu = _cli(["exec", "--json", "--timeout", "1"], _fstring(66_000))
    result = json.loads(done.stdout)
    assert done.returncode == 1 and result["error_type"] == "ValidationError"
    assert result["violations"][0]["rule"] == "L1-fstring-fields"
    assert f"limit {MAX_FSTRING_FIELDS} per f-string" in result["error"] and "split it" in result["error"]
    assert cpu < 1 + STARTUP_CPU


def test_fstring_at_the_limit_still_runs() -> None:
    done, _ = _cli(["exec", "--json"], _fstring(MAX_FSTRING_FIELDS) + "print(len(x))\n")
    result = json.loads(done.stdout)
    assert result["success"] and result["stdout"] == f"{MAX_FSTRING_FIELDS}\n", result


def test_validation_time_counts_inside_the_timeout() -> None:
    # A valid program that takes the host's validation well over 20 ms (33,000 operands):
    # with --timeout 0.02 it is stopped as a timeout, with the host's part said.
    code = _sized(_boolean, 0.99)
    done, cpu = _cli(["exec", "--json", "--timeout", "0.02"], code)
    result = json.loads(done.stdout)
    assert done.returncode == 1 and result["timed_out"] and result["error_type"] == "TimeoutError", result
    assert "validating the program took" in result["error"]
    assert cpu < 0.02 + STARTUP_CPU
    # The same program with room to run it succeeds: the timeout above was the cause.
    done, _ = _cli(["exec", "--json", "--timeout", "20"], code)
    assert json.loads(done.stdout)["success"]


def test_validation_time_counts_inside_a_cell_and_the_session_goes_on() -> None:
    slow = json.dumps({"code": _sized(_boolean, 0.99)})
    lines = [json.dumps({"code": "x = 41"}), slow, json.dumps({"code": "print(x + 1)"})]
    done, _ = _cli(["repl", "--json", "--timeout", "0.05"], "\n".join(lines) + "\n")
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(replies) == 3 and replies[0]["success"], replies
    assert replies[1]["timed_out"] and "validating the program took" in replies[1]["error"]
    assert replies[2]["stdout"] == "42\n" and done.returncode == 0


# -- 2. every byte printed stays within the caps ------------------------------------------

CAP = 65536
# Characters that escaping grows: a C0 control (6 bytes in JSON), a quote and a backslash
# (2), a bidi override and a C1 control (escaped by the CLI: 6), a newline (2).
HOSTILE_CHARS = {"control": "chr(1)", "quote": "'\"'", "backslash": "chr(92)", "bidi": "chr(0x202e)",
                 "c1": "chr(0x85)", "newline": "chr(10)", "mixed": "chr(1) + chr(0x202e) + 'a'"}  # fmt: skip


@pytest.mark.parametrize("name", sorted(HOSTILE_CHARS))
def test_json_output_of_exec_stays_within_max_output(name: str) -> None:
    code = f"print(({HOSTILE_CHARS[name]}) * 70000, end='')\n"
    done, _ = _cli(["exec", "--json", "--max-output", str(CAP)], code)
    _clean(done)
    assert len(done.stdout) <= CAP + ENVELOPE, len(done.stdout)  # was 393,500 for chr(1)
    result = json.loads(done.stdout)
    assert result["success"] and result["output_truncated"] and result["stdout"], result["error"]


def test_human_output_of_exec_stays_within_max_output() -> None:
    done, _ = _cli(["exec", "--max-output", str(CAP)], "print(chr(1) * 70000 + chr(0x202e) * 9000, end='')\n")
    assert len(done.stdout) <= CAP and done.returncode == 0
    assert b"output truncated" in done.stderr


@pytest.mark.parametrize("mode", ["exec", "repl"])
def test_error_text_stays_within_its_cap_and_on_one_line(mode: str) -> None:
    code = "raise ValueError(chr(27) * 3000 + chr(10) + chr(0x202e) * 3000)\n"
    stdin = code if mode == "exec" else json.dumps({"code": code}) + "\n"
    done, _ = _cli([mode, "--json"], stdin)
    assert len(done.stdout) <= MAX_ERROR_CHARS + ENVELOPE and done.stdout.count(b"\n") == 1
    assert json.loads(done.stdout)["error"].startswith("ValueError")
    if mode == "exec":
        done, _ = _cli([mode], code)
        lines = done.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(b"error (line 1): ValueError"), done.stderr[:300]
        assert len(lines[0]) <= MAX_ERROR_CHARS + 64 and b"\x1b" not in done.stderr and b"\\x1b" in done.stderr


def test_repl_json_output_stays_within_max_output() -> None:
    cells = [{"code": "print(chr(1) * 70000, end='')"}, {"code": "print(chr(0x202e) * 70000, end='')"}]
    done, _ = _cli(["repl", "--json", "--max-output", str(CAP)], "".join(json.dumps(c) + "\n" for c in cells))
    lines = done.stdout.splitlines()
    assert len(lines) == 2 and all(len(line) <= CAP + ENVELOPE for line in lines), [len(x) for x in lines]
    assert all(json.loads(line)["output_truncated"] for line in lines)


# -- 3. a malformed repl line is answered, and the session goes on ------------------------

MALFORMED = {
    "deep-list": "[" * 100_000,
    "deep-object": '{"a": ' * 100_000,
    "deep-code-value": '{"code": ' + "[" * 100_000,
    "deep-closed-list": "[" * 100_000 + "]" * 100_000,
    "not-json": "{code: 1",
    "not-an-object": '"print(1)"',
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_repl_answers_a_malformed_line_and_keeps_its_state(name: str) -> None:
    lines = [json.dumps({"code": "x = 41"}), MALFORMED[name], json.dumps({"code": "print(x + 1)"})]
    done, _ = _cli(["repl", "--json"], "\n".join(lines) + "\n")
    _clean(done)
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(replies) == 3, done.stdout[-500:]
    assert replies[1]["success"] is False and replies[1]["error_type"] == "UsageError" and replies[1]["hint"]
    assert replies[2]["stdout"] == "42\n" and done.returncode == 0


# -- 4. a native stack overflow is named, with a hint --------------------------------------

NESTING = {
    "map": "it = iter([1])\nfor _ in range(300000):\n    it = map(abs, it)\nprint(next(it))\n",
    "filter": "it = iter([1])\nfor _ in range(300000):\n    it = filter(None, it)\nprint(next(it))\n",
    "zip": "it = iter([1])\nfor _ in range(300000):\n    it = zip(it)\nprint(next(it))\n",
    "itertools": "import itertools\nit = iter([1])\nfor _ in range(300000):\n"
    "    it = itertools.chain(it)\nprint(next(it))\n",
    "tuple-hash": "t = ()\nfor _ in range(1000000):\n    t = (t,)\nprint(hash(t))\n",
}


# Building 300,000 guarded wrappers takes a few seconds: the chains other than `map` and
# the tuple are slow.
_SLOW_NESTING = ("filter", "itertools", "zip")


@pytest.mark.parametrize(
    ("name", "mode"),
    [
        *(pytest.param(n, "high", marks=[pytest.mark.slow] if n in _SLOW_NESTING else []) for n in sorted(NESTING)),
        pytest.param("map", "strict", marks=pytest.mark.slow),
    ],
)
def test_native_stack_overflow_is_a_specific_error(name: str, mode: str) -> None:
    timeout = 20.0
    done, cpu = _cli(["exec", "--json", "--mode", mode, "--timeout", str(timeout)], NESTING[name])
    result = json.loads(done.stdout)
    assert done.returncode == 1 and result["error_type"] == "ChildCrashed", result
    assert result["error"].startswith("native stack overflow") and "nesting too deep" in result["error"]
    assert "signal 11 (SIGSEGV)" in result["error"] and "flatten the nesting" in result["hint"]
    assert cpu < timeout + STARTUP_CPU


def test_native_stack_overflow_in_text_mode_is_an_error_line_and_a_hint() -> None:
    done, _ = _cli(["exec"], NESTING["tuple-hash"])
    lines = done.stderr.decode().splitlines()
    assert lines[0].startswith("error: native stack overflow") and lines[1].startswith("  hint: flatten"), lines
    assert done.returncode == 1


def test_native_crash_in_a_session_is_that_cells_error_and_ends_it() -> None:
    lines = [{"code": "x = 1"}, {"code": NESTING["tuple-hash"]}, {"code": "print(x)"}]
    done, _ = _cli(["repl", "--json"], "".join(json.dumps(c) + "\n" for c in lines))
    _clean(done)
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    # The crash is the second cell's answer; the session ends with it (said there), so the
    # third line gets no answer and the exit code says the session did not end normally.
    assert len(replies) == 2 and replies[0]["success"], replies
    assert replies[1]["error"].startswith("native stack overflow")
    assert "the session has ended with it and its state is gone" in replies[1]["error"]
    assert replies[1]["hint"] and done.returncode == 1


# -- pure helpers (the CLI's caps) --------------------------------------------------------


@pytest.mark.parametrize("text", ["", "abc", "\x01" * 50, '"\\' * 30, "\u202e" * 40, "é" * 33, "a\x01é\u2028" * 20])
@pytest.mark.parametrize("limit", [0, 1, 5, 6, 7, 64])
def test_fit_escaped_is_the_longest_prefix_within_the_limit(text: str, limit: int) -> None:
    fitted, cut = fit_escaped(text, limit)
    size = len(json_line(fitted).encode()) - 2
    assert size <= limit and text.startswith(fitted) and cut == (fitted != text)
    if cut:  # one more character would not fit
        assert len(json_line(text[: len(fitted) + 1]).encode()) - 2 > limit


def test_terminal_line_escapes_and_caps() -> None:
    assert terminal_line("a\x1b[2Jb\nc\u202e", 100) == "a\\x1b[2Jb\\x0ac\\u202e"
    assert len(terminal_line("\x01" * 5000, 4000).encode()) <= 4000


@pytest.mark.parametrize("limit", [4095, 4096, 4097, 10_000, 29_999, 10**9])
def test_fit_escaped_across_its_chunks(limit: int) -> None:
    text = 'a\x01é\u2028\U0001f600"' * 3000  # longer than a chunk, every kind of cost
    fitted, cut = fit_escaped(text, limit)
    assert len(json_line(fitted).encode()) - 2 <= limit and text.startswith(fitted) and cut == (fitted != text)
    if cut:
        assert len(json_line(text[: len(fitted) + 1]).encode()) - 2 > limit


def test_fit_escaped_is_linear_in_what_it_keeps() -> None:
    """A megabyte of bidi marks (six bytes each as printed) under a megabyte's cap: a
    binary search over the whole text took 2.4 s of CPU; one pass takes about 0.1 s."""
    started = time.process_time()
    fitted, cut = fit_escaped("\u202e" * 1_000_000, 1_000_000)
    assert cut and len(fitted) == 1_000_000 // 6
    assert time.process_time() - started < 1.0
