"""``python -m terminai_apts.egress serve`` refuses bad input with one error line and a hint."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from terminai_apts.egress.policy import parse_network_policy


def _serve(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "terminai_apts.egress", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
    )


def _files(tmp_path: Path, policy: object) -> list[str]:
    (tmp_path / "policy.json").write_text(policy if isinstance(policy, str) else json.dumps(policy))
    return [
        "serve",
        "--policy-json",
        str(tmp_path / "policy.json"),
        "--socket",
        str(tmp_path / "proxy.sock"),
        "--ledger",
        str(tmp_path / "ledger.jsonl"),
    ]


GOOD = parse_network_policy("allow:allowed.test", source="t").to_json()


@pytest.mark.parametrize(
    ("policy", "extra", "code", "says"),
    [
        ("{not json", [], 3, "not JSON"),
        ({"mode": "off"}, [], 3, "serves mode 'allow'"),
        ({"mode": "allow", "allow": ["*"]}, [], 3, "pattern '*'"),
        (GOOD, ["--socket-mode", "9"], 3, "not octal"),
        (GOOD, ["--hosts-file", "/nonexistent/hosts"], 3, "hosts file"),
        (GOOD, ["--user", "no-such-user-here"], 3, "no such user"),
        (GOOD, ["--user", "0"], 3, "never serves as root"),
        (GOOD, ["--tcp-port", "70000"], 3, "outside 0-65535"),
        (GOOD, ["--bogus"], 2, "unrecognized arguments"),
    ],
)
def test_bad_input_is_one_error_and_a_hint(
    tmp_path: Path, policy: object, extra: list[str], code: int, says: str
) -> None:
    done = _serve(tmp_path, *_files(tmp_path, policy), *extra)
    assert done.returncode == code, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 2, done.stderr
    assert lines[0].startswith("error: ") and says in lines[0], lines[0]
    assert lines[1].startswith("  hint: ")
    assert done.stdout == ""
    assert not (tmp_path / "proxy.sock").exists()


def test_an_existing_socket_path_is_never_replaced(tmp_path: Path) -> None:
    argv = _files(tmp_path, GOOD)
    (tmp_path / "proxy.sock").write_text("someone else's")
    done = _serve(tmp_path, *argv)
    assert done.returncode == 3 and "exists" in done.stderr
    assert (tmp_path / "proxy.sock").read_text() == "someone else's"


def test_no_command_is_a_usage_error(tmp_path: Path) -> None:
    done = _serve(tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("error: ") and "\n  hint: " in done.stderr
