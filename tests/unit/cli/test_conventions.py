"""The command-line conventions both tools keep: help on every option, help/version/completion
sub-commands, quiet ``--help`` (no heavy imports), one error line for a bad command line."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from terminai_apts import cli as apts_cli
from terminai_sandbox.cli import main as sandbox_main

BIN = Path(sys.executable).parent


def _click_commands(group: click.Group, path: str) -> Iterator[tuple[str, click.Command]]:
    ctx = click.Context(group, info_name=path)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        yield f"{path} {name}", command
        if isinstance(command, click.Group):
            yield from _click_commands(command, f"{path} {name}")


def test_every_option_of_terminai_sandbox_has_help_text() -> None:
    missing = [
        f"{where} {'/'.join(param.opts)}"
        for where, command in [("terminai-sandbox", sandbox_main), *_click_commands(sandbox_main, "terminai-sandbox")]
        for param in command.params
        if isinstance(param, click.Option) and not param.hidden and not (param.help or "").strip()
    ]
    assert not missing, missing


def test_every_option_of_terminai_apts_has_help_text() -> None:
    parser = apts_cli.build_parser()
    missing = [
        f"terminai-apts {' '.join(path)} {'/'.join(action.option_strings) or action.dest}"
        for path, current in apts_cli._parsers(parser)
        for action in current._actions
        if not isinstance(action, argparse._SubParsersAction)
        and action.help != argparse.SUPPRESS
        and not (action.help or "").strip()
    ]
    assert not missing, missing


def _modules_after(argv: list[str], roots: set[str]) -> set[str]:
    """The modules of ``roots`` that ``terminai-sandbox ARGV`` imported (it is run in a fresh interpreter)."""
    program = (
        "import sys, atexit\n"
        f"roots = {sorted(roots)!r}\n"
        "atexit.register(lambda: print('MODULES', *sorted({m.split('.')[0] for m in sys.modules} & set(roots))))\n"
        f"sys.argv = ['terminai-sandbox', *{argv!r}]\n"
        "from terminai_sandbox.console import main\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith("MODULES"))
    return set(line.split()[1:])


# What makes `sbom --help` take seconds: the CycloneDX library and its JSON-schema validator.
HEAVY = {"cyclonedx", "jsonschema", "rfc3987_syntax", "sigstore", "docker"}


@pytest.mark.parametrize(
    "argv",
    [[name, "--help"] for name in ("sbom", "provenance", "kube", "build", "keygen", "push", "sign", "verify", "attest")]
    + [["version"], ["--help"]],
)
def test_help_loads_no_heavy_library(argv: list[str]) -> None:
    assert _modules_after(argv, HEAVY) == set()


@pytest.mark.parametrize("tool", ["terminai-sandbox", "terminai-apts"])
def test_help_version_and_completion_subcommands(tool: str) -> None:
    exe = str(BIN / tool)
    version = subprocess.run([exe, "version"], capture_output=True, text=True, check=False)
    assert version.returncode == 0 and version.stdout.startswith(tool)
    helped = subprocess.run([exe, "help", "version"], capture_output=True, text=True, check=False)
    assert helped.returncode == 0 and "version" in helped.stdout.lower()
    for shell in ("bash", "zsh", "fish"):
        script = subprocess.run([exe, "completion", shell], capture_output=True, text=True, check=False)
        assert script.returncode == 0 and tool in script.stdout and "\x1b[" not in script.stdout
    bash = subprocess.run([exe, "completion", "bash"], capture_output=True, text=True, check=True).stdout
    # The script is valid bash (bash -n parses without running).
    assert subprocess.run(["bash", "-n"], input=bash, text=True, check=False).returncode == 0


def test_apts_bash_completion_completes_commands_and_options(tmp_path: Path) -> None:
    script = subprocess.run(
        [str(BIN / "terminai-apts"), "completion", "bash"], capture_output=True, text=True, check=True
    ).stdout
    (tmp_path / "c.sh").write_text(script)
    probe = (
        f"source {tmp_path / 'c.sh'}\n"
        "COMP_WORDS=(terminai-apts mem); COMP_CWORD=1; _terminai_apts; echo ${COMPREPLY[@]}\n"
        "COMP_WORDS=(terminai-apts memory search --li); COMP_CWORD=3; _terminai_apts; echo ${COMPREPLY[@]}\n"
    )
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out == ["memory", "--limit"]


@pytest.mark.parametrize(
    ("tool", "argv"),
    [("terminai-sandbox", ["sbom"]), ("terminai-sandbox", ["nope"]), ("terminai-apts", ["exec", "--timeout", "x"])],
)
def test_a_bad_command_line_is_exit_2_with_one_error_line(tool: str, argv: list[str]) -> None:
    done = subprocess.run(
        [str(BIN / tool), *argv], capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False
    )
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if line.startswith("error") or ": error:" in line]
    assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr


def test_json_errors_are_one_json_object_on_stdout(tmp_path: Path) -> None:
    import json

    done = subprocess.run(
        [str(BIN / "terminai-apts"), "memory", "count", str(tmp_path / "absent.sqlite"), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    body = json.loads(done.stdout)
    assert body["ok"] is False and body["error"]["exit_code"] == done.returncode == 24
    sandbox = subprocess.run(
        [str(BIN / "terminai-sandbox"), "verify", "127.0.0.1:1/x", "--key", str(tmp_path / "k.pub"), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert json.loads(sandbox.stdout)["error"]["exit_code"] == sandbox.returncode == 3


def test_the_static_command_list_matches_the_commands() -> None:
    from terminai_sandbox.cli import SUMMARIES

    ctx = click.Context(sandbox_main)
    real = {
        name: command.get_short_help_str(200)
        for name in sandbox_main.list_commands(ctx)
        if (command := sandbox_main.get_command(ctx, name)) is not None
        and name not in ("completion", "help", "version")
    }
    assert real == SUMMARIES


def test_group_help_loads_no_command_module() -> None:
    assert _modules_after(["--help"], HEAVY | {"yaml", "cryptography", "requests"}) == set()


def test_quiet_drops_chatter_but_keeps_errors() -> None:
    apts = str(BIN / "terminai-apts")
    loud = subprocess.run([apts, "repl"], input="print(1)\n\n", capture_output=True, text=True, check=False)
    quiet = subprocess.run([apts, "-q", "repl"], input="print(1)\n\n", capture_output=True, text=True, check=False)
    assert "end a cell" in loud.stderr and "end a cell" not in quiet.stderr
    assert "1" in quiet.stdout
    failed = subprocess.run(
        [apts, "-q", "memory", "count", "/nonexistent.db"], capture_output=True, text=True, check=False
    )
    assert failed.returncode == 24 and failed.stderr.startswith("error:") and "hint:" in failed.stderr


def test_progress_is_silent_off_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    from terminai_sandbox.cli import progress

    with progress.step("a step"):
        progress.line("a stage")
    assert capsys.readouterr().err == ""


def test_progress_on_a_terminal_stamps_elapsed_time(tmp_path: Path) -> None:
    """A push to a registry that never answers: on a terminal the step says it is still running."""
    import os
    import pty
    import socket
    import time

    from tests.fixtures.oci import write_layout

    write_layout(tmp_path / "layout", config=b"{}", layers=[b"layer"])
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(4)
    main_fd, child_fd = pty.openpty()
    proc = subprocess.Popen(
        [str(BIN / "terminai-sandbox"), "push", "layout", f"127.0.0.1:{silent.getsockname()[1]}/t/s:1"],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=child_fd,
    )
    os.close(child_fd)
    time.sleep(4.5)
    proc.kill()
    proc.wait()
    seen = b""
    while True:
        try:
            chunk = os.read(main_fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(main_fd)
    silent.close()
    text = seen.decode(errors="replace")
    assert "pushing 2 blobs" in text and "push to 127.0.0.1" in text, text
    assert "[" in text and " s] " in text  # every line carries the time since the command started


def test_exec_json_error_keeps_the_result_shape() -> None:
    """An exec that never ran still answers with exec's result object (DESIGN §4), plus the error's code."""
    import json

    done = subprocess.run(
        [str(BIN / "terminai-apts"), "exec", "--json", "--db", "/nonexistent.db"],
        input="print(1)\n",
        capture_output=True,
        text=True,
        check=False,
    )
    body = json.loads(done.stdout)
    assert body["success"] is False and body["error_type"] == "UsageError" and body["violations"] == []
    assert body["exit_code"] == done.returncode == 2 and "not found" in body["error"]
