"""The console script's click-free ``run`` path: it parses exactly as click does, or declines."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from terminai_sandbox import console
from terminai_sandbox.cli import main
from terminai_sandbox.cli.launch_cmd import run_cmd
from terminai_sandbox.launch import entry, session
from terminai_sandbox.launch.options import limits_from, parse_run, request_from
from terminai_sandbox.launch.run import Limits

CLI = str(Path(sys.executable).with_name("terminai-sandbox"))
PINNED = "127.0.0.1:5000/terminai/sandbox:0.1.0@sha256:" + "a" * 64

ACCEPTED = [
    [],
    ["true"],
    ["--", "true"],
    ["--image", PINNED, "--key", "k.pub", "--", "python3", "-m", "apts.action.cleanup", "--image", "x"],
    ["--image=foo:1", "--json", "bash"],
    ["--unsafe-allow-flag", "--privileged", "--unsafe-allow-flag=--cap-add", "--", "sh"],
    ["--network", "bridge", "--memory", "1g", "--cpus", "1.5", "ls", "-la"],
    ["--policy", "p.json", "--allow-floating-tag", "--insecure-registry", "--unsafe-skip-verify", "-", "x"],
    ["--image", "a:1", "--image", "b:2", "true"],
    ["--certificate-identity", "id", "--certificate-oidc-issuer", "https://issuer", "cmd", "--", "y"],
    ["--engine", "podman", "--", "--", "x"],
    ["--image", "", "--key=", "true"],
    ["ls", "--json", "-h", "--help"],
]

DECLINED = [
    ["--help"],
    ["-h"],
    ["--nope", "true"],
    ["-x", "true"],
    ["--imag", "a:1"],
    ["--json=yes"],
    ["--image"],
    ["--key", "k.pub", "--memory"],
]


@pytest.mark.parametrize("args", ACCEPTED, ids=" ".join)
def test_accepted_command_lines_parse_exactly_as_click_parses_them(args: list[str]) -> None:
    ctx = run_cmd.make_context("run", list(args))
    assert parse_run(args) == ctx.params


@pytest.mark.parametrize("args", DECLINED, ids=" ".join)
def test_declined_command_lines_are_left_to_click(args: list[str]) -> None:
    assert parse_run(args) is None
    with pytest.raises((click.exceptions.Exit, click.UsageError)):
        run_cmd.make_context("run", list(args))


def test_options_after_the_command_belong_to_the_command() -> None:
    params = parse_run(["--memory", "1g", "python3", "--memory", "4g", "--", "--json"])
    assert params is not None
    assert params["command"] == ("python3", "--memory", "4g", "--", "--json")
    assert limits_from(params) == Limits(memory="1g")
    assert request_from(params) == session.LaunchRequest()


def _fast_run(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPROFILEIMPORTTIME": "1"}
    return subprocess.run(
        [CLI, "run", *args], env={**base, **env}, capture_output=True, text=True, timeout=60, check=False
    )


def test_both_paths_report_a_refusal_with_the_same_message_and_exit_code(tmp_path: Path) -> None:
    env = {"TERMINAI_SANDBOX": "docker", "SANDBOX_MOUNTS": "relative/path"}
    fast = _fast_run(["--image", PINNED, "--unsafe-skip-verify", "true"], tmp_path, **env)
    fast_errors = [line for line in fast.stderr.splitlines() if not line.startswith("import time:")]
    via_click = CliRunner().invoke(
        main, ["run", "--image", PINNED, "--unsafe-skip-verify", "true"], env={**env, "HOME": str(tmp_path)}
    )
    assert fast.returncode == via_click.exit_code == 3
    assert "SANDBOX_MOUNTS" in fast_errors[-2] or "SANDBOX_MOUNTS" in fast_errors[-1]
    assert fast_errors == via_click.stderr.splitlines()


def test_an_interrupt_is_exit_130_with_a_message(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(*_args: object, **_kwargs: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(session, "run", interrupted)
    assert entry.launch(["true"]) == 130
    assert capsys.readouterr().err == "error: interrupted\n"


def test_other_command_lines_go_to_click(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["terminai-sandbox", "run", "--help"])
    with pytest.raises(SystemExit) as exit_info:
        console.main()
    assert exit_info.value.code == 0


def _boom(*_args: object, **_kwargs: object) -> object:
    raise RuntimeError("the unforeseen\nsecond line")


UNEXPECTED = [
    "error: unexpected failure: RuntimeError: the unforeseen",
    "  hint: rerun with 'terminai-sandbox --debug ...' to see the traceback, and report it if it is a bug",
]


def test_an_unforeseen_failure_on_the_click_path_is_one_line_and_a_hint(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from terminai_sandbox import engine

    monkeypatch.setattr(engine, "connect", _boom)
    monkeypatch.setattr(sys, "argv", ["terminai-sandbox", "engine", "status"])
    with pytest.raises(SystemExit) as exit_info:
        console.main()
    assert exit_info.value.code == 1
    assert capsys.readouterr().err.splitlines() == UNEXPECTED


def test_debug_adds_the_traceback_before_the_message(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from terminai_sandbox import engine

    monkeypatch.setattr(engine, "connect", _boom)
    monkeypatch.setattr(sys, "argv", ["terminai-sandbox", "--debug", "engine", "status"])
    with pytest.raises(SystemExit) as exit_info:
        console.main()
    assert exit_info.value.code == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "Traceback (most recent call last):"
    assert "RuntimeError: the unforeseen" in err and err[-2:] == UNEXPECTED


def test_an_unforeseen_failure_on_the_launch_path_is_exit_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(session, "run", _boom)
    assert entry.launch(["true"]) == 1
    assert capsys.readouterr().err.splitlines() == UNEXPECTED


def test_sandbox_errors_keep_their_own_exit_code_and_text_through_the_console(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from terminai_sandbox import engine
    from terminai_sandbox.errors import EngineError

    def refuse(*_args: object, **_kwargs: object) -> object:
        raise EngineError("no engine here", hint="start one")

    monkeypatch.setattr(engine, "connect", refuse)
    monkeypatch.setattr(sys, "argv", ["terminai-sandbox", "--debug", "engine", "status"])
    with pytest.raises(SystemExit) as exit_info:
        console.main()
    assert exit_info.value.code == 4
    assert capsys.readouterr().err == "error: no engine here\n  hint: start one\n"
