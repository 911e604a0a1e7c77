"""The launch options' one parser.

The click-free ``run`` path and the click commands both use it, and it reads every command
line as click's own parser would (an oracle declared here, not generated from the table).
"""

from __future__ import annotations

import gc
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner
from terminai_sandbox import console
from terminai_sandbox.cli import main
from terminai_sandbox.cli.launch_cmd import preflight_cmd, run_cmd
from terminai_sandbox.cli.params import InputPath
from terminai_sandbox.common.hardening import Limits
from terminai_sandbox.launch import entry, options, session
from terminai_sandbox.launch.options import (
    PREFLIGHT_OPTIONS,
    RUN_OPTIONS,
    CommandLineError,
    HelpWanted,
    limits_from,
    parse,
    parse_run,
    request_from,
)

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
    ["--image", "", "--key=k.pub", "true"],
    ["ls", "--json", "-h", "--help"],
]

MISTAKES = [
    ["--key=", "true"],  # an empty path (an unset variable) and '-' are refused by the path type
    ["--policy", "-", "true"],
    ["--nope", "true"],
    ["-x", "true"],
    ["-hx"],
    ["--imag", "a:1"],
    ["--polic", "p.json"],
    ["--json=yes"],
    ["--help=1"],
    ["--help", "--nope"],
    ["--image"],
    ["--key", "k.pub", "--memory"],
]

HELP = [["--help"], ["-h"], ["--image", "a:1", "-h", "true"], ["--json", "--help", "--", "x"]]

PREFLIGHT_ACCEPTED = [
    [],
    ["--deep"],
    ["--json", "--deep", "--key", "k.pub"],
    ["--image=a:1", "--unsafe-allow-flag", "-x"],
]
PREFLIGHT_MISTAKES = [["x"], ["--", "x", "y"], ["--deep=1"], ["x", "--nope"], ["--json", "x", "--deep"]]


def _oracle(*, command: bool) -> click.Command:
    """``run`` (or ``preflight``) declared for click's own parser, written here from the docs.

    The kernel's parser must read every command line as click's parser reads it, and word
    every mistake as click words it: click is the grammar's independent oracle.
    """
    params: list[click.Parameter] = [
        click.Option(["--image"]),
        click.Option(["--engine"]),
        click.Option(["--runtime"]),
        click.Option(["--network-policy"]),
        click.Option(["--key", "key_path"], type=InputPath()),
        click.Option(["--certificate-identity"]),
        click.Option(["--certificate-oidc-issuer"]),
        click.Option(["--policy", "policy_path"], type=InputPath()),
        click.Option(["--unsafe-skip-verify"], is_flag=True),
        click.Option(["--unsafe-allow-flag"], multiple=True),
        click.Option(["--unsafe-allow-env"], multiple=True),
        click.Option(["--allow-floating-tag"], is_flag=True),
        click.Option(["--insecure-registry"], is_flag=True),
        click.Option(["--json", "as_json"], is_flag=True),
    ]
    if command:
        params += [
            click.Option(["--network"], default="none"),
            click.Option(["--memory"], default="2g"),
            click.Option(["--cpus"], default="2"),
            click.Argument(["command"], nargs=-1, type=click.UNPROCESSED),
        ]
    else:
        params.append(click.Option(["--deep"], is_flag=True))
    return click.Command(
        "run" if command else "preflight",
        params=params,
        context_settings={"allow_interspersed_args": not command, "help_option_names": ["-h", "--help"]},
    )


@pytest.mark.parametrize("args", ACCEPTED, ids=" ".join)
def test_accepted_command_lines_parse_exactly_as_click_parses_them(args: list[str]) -> None:
    assert parse_run(args) == _oracle(command=True).make_context("run", list(args)).params


@pytest.mark.parametrize("args", MISTAKES, ids=" ".join)
def test_each_mistake_is_worded_as_click_words_it(args: list[str]) -> None:
    with pytest.raises(CommandLineError) as kernel:
        parse_run(args)
    with pytest.raises(click.UsageError) as oracle:
        _oracle(command=True).make_context("run", list(args))
    assert str(kernel.value) == oracle.value.format_message()


@pytest.mark.parametrize("args", HELP, ids=" ".join)
def test_a_help_flag_among_the_options_asks_for_help(args: list[str]) -> None:
    with pytest.raises(HelpWanted):
        parse_run(args)
    with pytest.raises(click.exceptions.Exit):
        _oracle(command=True).make_context("run", list(args))


def _parse_preflight(args: Sequence[str]) -> dict[str, Any]:
    """``preflight``'s parameters as its click command has the kernel parse them."""
    return parse(args, PREFLIGHT_OPTIONS, command=False)


@pytest.mark.parametrize("args", PREFLIGHT_ACCEPTED, ids=" ".join)
def test_preflight_parses_as_click_parses_it(args: list[str]) -> None:
    assert _parse_preflight(args) == _oracle(command=False).make_context("preflight", list(args)).params


@pytest.mark.parametrize("args", PREFLIGHT_MISTAKES, ids=" ".join)
def test_preflight_mistakes_are_worded_as_click_words_them(args: list[str]) -> None:
    with pytest.raises(CommandLineError) as kernel:
        _parse_preflight(args)
    with pytest.raises(click.UsageError) as oracle:
        _oracle(command=False).make_context("preflight", list(args))
    assert str(kernel.value) == oracle.value.format_message()


@pytest.mark.parametrize(("command", "parser", "args"), [
    (run_cmd, parse_run, ["--image", PINNED, "--memory=1g", "--", "true"]),
    (preflight_cmd, _parse_preflight, ["--deep", "--key", "k.pub"]),
])  # fmt: skip
def test_the_click_commands_hand_their_arguments_to_the_kernel_parser(
    monkeypatch: pytest.MonkeyPatch, command: click.Command, parser: object, args: list[str]
) -> None:
    seen: list[list[str]] = []
    real = options.parse

    def spy(given: list[str], *rest: object, **kwargs: object) -> dict[str, object]:
        seen.append(list(given))
        return real(given, *rest, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(options, "parse", spy)
    ctx = command.make_context(command.name or "", list(args))
    assert seen == [args]
    assert ctx.params == parser(args)  # type: ignore[operator]
    with pytest.raises(click.UsageError, match=r"^No such option '--nope'\.$"):
        command.make_context(command.name or "", ["--nope"])


def test_the_help_lists_every_option_of_the_table_with_its_help_and_default() -> None:
    result = CliRunner().invoke(main, ["run", "--help"], terminal_width=200)
    assert result.exit_code == 0
    lines = result.output.splitlines()
    for option in RUN_OPTIONS:
        (line,) = [line for line in lines if line.strip().startswith(option.flag + " ")]
        assert option.help in line
        if option.default is not None:
            assert f"[default: {option.default}]" in line
    preflight = CliRunner().invoke(main, ["preflight", "--help"], terminal_width=200).output
    assert all(option.flag in preflight for option in PREFLIGHT_OPTIONS)


def test_a_mistake_is_the_same_on_the_click_free_path_and_through_click(tmp_path: Path) -> None:
    fast = _fast_run(["--imag", "a:1", "true"], tmp_path)
    fast_errors = [line for line in fast.stderr.splitlines() if not line.startswith("import time:")]
    assert fast.returncode == 2
    assert fast_errors == [
        "error: No such option '--imag'. Did you mean '--image'?",
        "  hint: see 'terminai-sandbox run --help'",
    ]
    # Through click (preflight has no click-free path): the same wording, exit and hint.
    via_click = subprocess.run([CLI, "preflight", "--imag", "a:1"], capture_output=True, text=True, check=False)
    assert via_click.returncode == 2
    assert via_click.stderr.splitlines() == [
        "error: No such option '--imag'. Did you mean '--image'?",
        "  hint: see 'terminai-sandbox preflight --help'",
    ]
    imported = {line.rsplit("|", 1)[-1].strip() for line in fast.stderr.splitlines() if line.startswith("import time:")}
    assert "terminai_sandbox.launch.options" in imported and "click" not in imported  # the kernel said it, alone


def test_options_after_the_command_belong_to_the_command() -> None:
    params = parse_run(["--memory", "1g", "python3", "--memory", "4g", "--", "--json"])
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
    assert _untimed(fast_errors) == _untimed(via_click.stderr.splitlines())


def _untimed(lines: list[str]) -> list[str]:
    """The lines without a step's elapsed time ("(1 ms)"), which differs from run to run."""
    return [re.sub(r" \(\d+ ms\)$", "", line) for line in lines]


def test_an_interrupt_is_exit_130_with_a_message(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(*_args: object, **_kwargs: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(session, "run", interrupted)
    assert entry.launch(["true"]) == 130
    assert (
        capsys.readouterr().err == "error: interrupted\n  hint: nothing was left half-written; run the command again\n"
    )


def test_other_command_lines_go_to_click(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["terminai-sandbox", "run", "--help"])
    with pytest.raises(SystemExit) as exit_info:
        console.main()
    assert exit_info.value.code == 0
    assert gc.isenabled()  # switched off for the kernel's path only


def test_the_launch_path_runs_without_the_cyclic_collector_and_restores_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    seen: list[bool] = []
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/absent.sock")  # nothing to ask early

    def launched(*_args: object, **_kwargs: object) -> int:
        seen.append(gc.isenabled())
        return 0

    def exited(code: int) -> None:
        raise SystemExit(code)

    monkeypatch.setattr(session, "run", launched)
    monkeypatch.setattr(os, "_exit", exited)
    monkeypatch.setattr(sys, "argv", ["terminai-sandbox", "run", "--image", "r.example/x:1.0.0", "--", "true"])
    with pytest.raises(SystemExit) as exit_info:
        console.main()
    assert exit_info.value.code == 0 and seen == [False]
    assert gc.isenabled()


def _boom(*_args: object, **_kwargs: object) -> object:
    raise RuntimeError("the unforeseen\nsecond line")


UNEXPECTED = [
    "error: unexpected failure: RuntimeError: the unforeseen",
    "  hint: rerun with 'terminai-sandbox --debug ...' to see the traceback, and report it if it is a bug",
]


def test_an_unforeseen_failure_on_the_click_path_is_one_line_and_a_hint(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from terminai_sandbox.engine import client as engine

    monkeypatch.setattr(engine, "connect", _boom)
    monkeypatch.setattr(sys, "argv", ["terminai-sandbox", "engine", "status"])
    with pytest.raises(SystemExit) as exit_info:
        console.main()
    assert exit_info.value.code == 1
    assert capsys.readouterr().err.splitlines() == UNEXPECTED


def test_debug_adds_the_traceback_before_the_message(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from terminai_sandbox.engine import client as engine

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
    from terminai_sandbox.engine import client as engine
    from terminai_sandbox.errors import EngineError

    def refuse(*_args: object, **_kwargs: object) -> object:
        raise EngineError("no engine here", hint="start one")

    monkeypatch.setattr(engine, "connect", refuse)
    monkeypatch.setattr(sys, "argv", ["terminai-sandbox", "--debug", "engine", "status"])
    with pytest.raises(SystemExit) as exit_info:
        console.main()
    assert exit_info.value.code == 4
    assert capsys.readouterr().err == "error: no engine here\n  hint: start one\n"
