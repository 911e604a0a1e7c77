"""Issue 23.5: everything the CLI prints is bounded by the caps and honest about cuts.

* a refusal reports at most ``MAX_REPORTED`` violations and the allowlist once (a 100 KB
  program of violations printed 43.6 MB of JSON with ``--max-output 65536``);
* an oversized program is refused before any scan (50 MB: 6.7 s and 166 MB RSS before);
* output is capped as text, and a cut always sets ``output_truncated`` (60,001 ``"``
  came back as 16,384 characters with ``output_truncated: false``: JSON escaping
  doubled the frame, which the child then cut silently); what the CLI prints is capped
  again after escaping (issue #36);
* C1 controls and bidi overrides from the program's output are ``\\u`` escapes in the JSON.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from terminai_apts.executor import SandboxConfig, execute
from terminai_apts.executor.policy import MAX_SOURCE_BYTES
from terminai_apts.executor.python_layer import output
from terminai_apts.executor.python_layer.validate import MAX_REPORTED, validate_code


def _cli(args: list[str], stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "terminai_apts.cli", *args],
        input=stdin,
        capture_output=True,
        timeout=120,
        check=False,
    )


def _many_violations(size: int) -> str:
    lines = []
    i = 0
    while sum(len(x) + 1 for x in lines) < size:
        lines.append(f"import os{i}; x{i} = eval('1').__class__.__base__")
        i += 1
    return "\n".join(lines)


def test_a_refusal_reports_a_bounded_summary_and_the_allowlist_once() -> None:
    code = _many_violations(100_000)
    report = validate_code(code)
    assert len(report.violations) == MAX_REPORTED and report.total > 5_000
    summary = report.summary()
    assert f"and {report.total - MAX_REPORTED} more" in summary
    assert summary.count("dataclasses") == 1 and len(summary) < 10_000


def test_cli_output_of_a_100kb_refusal_is_bounded() -> None:
    """Before: 43.6 MB of JSON. Now a few kilobytes, with the count of what was left out."""
    done = _cli(["exec", "--json", "--max-output", "65536"], _many_violations(100_000).encode())
    assert done.returncode == 1
    assert len(done.stdout) < 32_768, len(done.stdout)
    data = json.loads(done.stdout)
    assert len(data["violations"]) == MAX_REPORTED and "more" in data["error"]
    assert data["error"].count("Allowed imports") == 1


_RSS = """
import resource, subprocess, sys, time
data = b"x = 1\\n" * (50 * 1024 * 1024 // 6)
started = time.perf_counter()
done = subprocess.run([sys.executable, "-m", "terminai_apts.cli", "exec", "--json"], input=data,
                      capture_output=True, timeout=120, check=False)
elapsed = time.perf_counter() - started
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(elapsed, rss, done.returncode)
sys.stdout.write(done.stdout.decode())
"""


def test_an_oversized_program_is_refused_before_any_scan() -> None:
    """50 MB on stdin: refused from its first 200,001 bytes (before: 6.7 s, 166 MB RSS)."""
    done = subprocess.run([sys.executable, "-c", _RSS], capture_output=True, text=True, timeout=180, check=False)
    head, _, rest = done.stdout.partition("\n")
    elapsed, rss_kb, code = head.split()
    data = json.loads(rest)
    assert int(code) == 1 and data["violations"][0]["rule"] == "L1-source-size"
    assert "or more" in data["error"] and str(MAX_SOURCE_BYTES) in data["error"]
    assert float(elapsed) < 3.0, elapsed
    assert int(rss_kb) < 100_000, rss_kb  # the interpreter itself is about 40 MB


def test_validation_checks_the_size_before_scanning() -> None:
    big = "(" * (MAX_SOURCE_BYTES * 50)
    started = time.perf_counter()
    report = validate_code(big)
    assert time.perf_counter() - started < 0.05
    assert [v.rule for v in report.violations] == ["L1-source-size"]


@pytest.mark.parametrize(
    ("text", "repeat", "cap"),
    [('"', 60_001, 65_536), ("\\x01", 60_001, 65_536), ("\\\\", 40_000, 65_536), ("é", 30_000, 65_536)],
)
def test_escaping_never_cuts_output_that_fits(text: str, repeat: int, cap: int) -> None:
    result = execute(f"print('{text}' * {repeat}, end='')", SandboxConfig(max_output_bytes=cap))
    assert result.success, result.error
    expected = eval(f"'{text}'") * repeat
    assert result.stdout == expected and not result.output_truncated


@pytest.mark.parametrize("text", ['"', "\\x01", "a"])
def test_a_cut_always_sets_the_flag(text: str) -> None:
    result = execute(f"print('{text}' * 70_000, end='')", SandboxConfig(max_output_bytes=65_536))
    assert result.output_truncated
    assert result.stdout == eval(f"'{text}'") * 65_536


def test_encode_result_cuts_only_with_the_flag() -> None:
    base = {"success": True, "error": None, "output_truncated": False}
    fits = output.encode_result({**base, "stdout": '"' * 1000}, 1000)
    assert json.loads(fits)["stdout"] == '"' * 1000 and not json.loads(fits)["output_truncated"]
    # a frame that cannot fit (only a run lying about its buffer could make one)
    over = json.loads(output.encode_result({**base, "stdout": "\x01" * 20_000_000}, 1000))
    assert over["output_truncated"] and len(over["stdout"]) < 20_000_000


# Lone surrogates (what os.fsdecode makes of undecodable bytes, or a JSON "\udcff" escape)
# are not text: output holding one came back as "" with output_truncated set, an error
# message holding one did the same, and source holding one was "too complex to parse".


def test_output_with_a_lone_surrogate_is_kept_as_its_escape() -> None:
    result = execute("print('a' + chr(0xDCFF) + 'b')", SandboxConfig())
    assert result.success, result.error
    assert result.stdout == "a\\udcffb\n" and not result.output_truncated


def test_an_error_message_with_a_lone_surrogate_is_kept_as_its_escape() -> None:
    result = execute("print('before')\nraise ValueError('x' + chr(0xDC80))", SandboxConfig())
    assert not result.success
    assert result.stdout == "before\n" and not result.output_truncated
    assert result.error is not None and result.error.endswith("x\\udc80")


def test_source_with_a_lone_surrogate_is_refused_by_name_and_place() -> None:
    report = validate_code("x = 1\ny = '\udcff'\n")
    assert [(v.rule, v.line, v.col) for v in report.violations] == [("L1-encoding", 2, 6)]
    assert "lone surrogate (U+DCFF)" in report.violations[0].message


def test_encode_result_escapes_a_lone_surrogate_without_dropping_output() -> None:
    base = {"success": False, "stdout": "kept", "error": "E: \udcff", "output_truncated": False}
    frame = json.loads(output.encode_result(base, 1000))
    assert frame == {**base, "error": "E: \\udcff"}


UNSAFE = "\u202e\u2066\u2069\u200e\u200f\u202a\x85\x9b\u2028\ufeff"


def test_json_line_escapes_c1_and_bidi() -> None:
    line = output.json_line({"stdout": f"a{UNSAFE}b é ü 日本"})
    assert all(ch not in line for ch in UNSAFE)
    assert "\\u202e" in line and "\\u0085" in line and "é ü 日本" in line
    assert json.loads(line)["stdout"] == f"a{UNSAFE}b é ü 日本"


def test_cli_json_has_no_raw_control_or_bidi_characters() -> None:
    program = "print('x' + " + repr(UNSAFE) + " + 'y')"
    done = _cli(["exec", "--json"], program.encode())
    text = done.stdout.decode()
    assert done.returncode == 0 and all(ch not in text for ch in UNSAFE)
    assert json.loads(text)["stdout"] == f"x{UNSAFE}y\n"


def test_cli_output_is_bounded_by_the_cap() -> None:
    """The worst case: every byte of output a control character (six bytes escaped). The
    cap bounds what is printed, escapes included (issue #36: 65,536 printed 393,500)."""
    done = _cli(["exec", "--json", "--max-output", "4096"], b"print('\\x01' * 100_000)")
    data = json.loads(done.stdout)
    assert data["output_truncated"] and len(data["stdout"]) == 4096 // 6
    assert len(done.stdout) <= 4096 + 1024


def test_repl_json_skips_an_oversized_line_without_keeping_it() -> None:
    big = json.dumps({"code": "x = 1\n" * 300_000}).encode()
    lines = b"\n".join([b'{"code": "print(1)"}', big, b'{"code": "print(2)"}']) + b"\n"
    done = _cli(["repl", "--json"], lines)
    answers = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert [a.get("stdout") for a in answers] == ["1\n", None, "2\n"]
    assert "at most" in answers[1]["error"] and len(done.stdout) < 4096
