"""Attacks on ``run``/``preflight``'s one option parser and on what a launch runs.

* Every command line made of risky spellings (``=`` and spaced values, empty values,
  values that look like options, ``--``, ``-h`` clusters, abbreviations, case, non-UTF-8
  bytes as Python decodes them, flags given values) is read by the kernel's parser exactly
  as click's own parser reads it (click is the independent oracle, declared in
  ``test_console``): no spelling sets ``--unsafe-skip-verify`` that click would not, and
  none reaches a different container command.
* What the engine says about an image never changes what runs: the session's command line
  names the verified ``repo@sha256:`` reference whatever id the engine's inspect answer claims.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
from pathlib import Path

import click
import pytest
from terminai_sandbox.launch.options import CommandLineError, HelpWanted, parse_run

from tests.unit.launch.test_console import CLI, PINNED, _oracle, _parse_preflight, _untimed
from tests.unit.launch.test_engines_and_trust import _FakeEngine, _session_site, launch_true

TOKENS = [
    "--image", "--image=a:1", "--image=", "--key", "--key=", "--key=--unsafe-skip-verify", "--unsafe-skip-verify",
    "--unsafe-skip-verify=false", "--unsafe-skip-verif", "--unsafe", "--Unsafe-skip-verify", "---unsafe-skip-verify",
    "--", "-", "", "-h", "-hh", "-h=1", "--help", "--help=", "--json", "--deep", "--deep=false", "x", "bash", "-c",
    "--network", "--network=host", "--memory", "--cpus=0", "--unsafe-allow-flag", "--unsafe-allow-flag=--privileged",
    "--unsafe-allow-env", "--unsafe-allow-env=PYTHONPATH",
    "--policy", "p.json", "--certificate-identity", "--certificate-oidc-issuer=", "id", "\udcff", "--image=\udcff",
    "--\u0131mage", "--=x", "-=", "--image =a", " --image", "--image==a", "\u2014image", "-u", "-hu",
    "--allow-floating-tag", "--insecure-registry=1", "--engine", "podman", "--runtime=runsc", "--cpu", "--key\t",
    "--key=\udcff", "--unsafe-skip-verify ", "--unsafe_skip_verify", "-\u2010unsafe-skip-verify",
]  # fmt: skip


def _outcome(read: object) -> tuple[object, ...]:
    try:
        return ("parsed", read())  # type: ignore[operator]
    except (HelpWanted, click.exceptions.Exit):
        return ("help",)
    except CommandLineError as exc:
        return ("mistake", str(exc))
    except click.UsageError as exc:
        return ("mistake", exc.format_message())


@pytest.mark.parametrize("seed", range(2))
def test_generated_command_lines_read_as_click_reads_them(seed: int, capsys: pytest.CaptureFixture[str]) -> None:
    rng = random.Random(seed)
    for _ in range(600):
        args = [rng.choice(TOKENS) for _ in range(rng.randint(0, 7))]
        for command, parse, name in ((True, parse_run, "run"), (False, _parse_preflight, "preflight")):
            kernel = _outcome(lambda: parse(list(args)))  # noqa: B023
            oracle = _outcome(lambda: _oracle(command=command).make_context(name, list(args)).params)  # noqa: B023
            assert kernel == oracle, args
    capsys.readouterr()  # click printed the help for the -h cases


@pytest.mark.parametrize(
    "args",
    [
        ["--unsafe-skip-verify=false", "true"],
        ["--unsafe-skip-verify=", "true"],
        ["--unsafe", "true"],
        ["--unsafe-skip-verif", "true"],
        ["--Unsafe-Skip-Verify", "true"],
        ["--unsafe_skip_verify", "true"],
        ["-\u2010unsafe-skip-verify", "true"],
    ],
)
def test_no_other_spelling_of_the_skip_flag_is_accepted(args: list[str]) -> None:
    # Refused by the parser (an unknown option, or the flag given a value), never taken for the flag or the command.
    refused = r"^(No such option '-|Option '--unsafe-skip-verify' does not take a value)"
    with pytest.raises(CommandLineError, match=refused):
        parse_run(args)


@pytest.mark.parametrize(
    "args",
    [
        ["--key", "--unsafe-skip-verify", "true"],
        ["--image=x", "true", "--unsafe-skip-verify"],
        ["--", "--unsafe-skip-verify"],
        ["bash", "-c", "--unsafe-skip-verify"],
        ["--unsafe-allow-flag", "--unsafe-skip-verify", "true"],
    ],
)
def test_the_skip_flag_as_a_value_or_in_the_command_is_not_the_skip_flag(args: list[str]) -> None:
    assert parse_run(args)["unsafe_skip_verify"] is False


def test_the_session_runs_the_verified_reference_whatever_the_engine_says_the_image_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers: dict[str, bytes] = {}
    server = _FakeEngine(tmp_path / "e.sock", answers)
    try:
        env, ref = _session_site(tmp_path, answers)
        pinned = "127.0.0.1:5000/terminai/sandbox@sha256:" + "a" * 64
        claimed = json.loads(answers[f"/v1.41/images/{pinned}/json"].partition(b"\r\n\r\n")[2])
        # The engine claims the digest is another image, from another repository.
        claimed.update(Id="sha256:" + "c" * 64, RepoDigests=["evil.example/other@sha256:" + "d" * 64])
        answers[f"/v1.41/images/{pinned}/json"] = b"HTTP/1.0 200 OK\r\n\r\n" + json.dumps(claimed).encode()
        argv_file = tmp_path / "argv"
        (tmp_path / "bin" / "docker").write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {argv_file}\nexit 0\n')
        assert launch_true(tmp_path, monkeypatch, ref, env) == 0
    finally:
        server.server.close()
    argv = argv_file.read_text().splitlines()
    assert argv[-2:] == [pinned, "true"]
    assert not any("c" * 64 in a or "evil.example" in a for a in argv)


def _console(args: list[str], home: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {"PATH": os.environ["PATH"], "HOME": str(home), **env}
    return subprocess.run([CLI, *args], env=base, capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize(
    ("extra", "command"),
    [([], ["true"]), (["--json"], ["true"]), ([], ["bash", "--json"]), ([], ["python3", "-m", "x", "--json"])],
)
def test_the_kernel_path_and_the_click_path_fail_alike_with_and_without_json(
    tmp_path: Path, extra: list[str], command: list[str]
) -> None:
    """``terminai-sandbox run`` (kernel) and ``terminai-sandbox -q run`` (click): same stdout, stderr, exit.

    A ``--json`` in the container's command is the command's, not the launcher's.
    """
    env = {"TERMINAI_SANDBOX": "docker", "SANDBOX_MOUNTS": "relative/path"}
    args = ["run", *extra, "--image", PINNED, "--unsafe-skip-verify", *command]
    kernel = _console(args, tmp_path, env)
    via_click = _console(["-q", *args], tmp_path, env)
    assert kernel.returncode == via_click.returncode == 3
    assert _untimed(kernel.stderr.splitlines()) == _untimed(via_click.stderr.splitlines())
    assert kernel.stdout == via_click.stdout
    if extra:
        error = json.loads(kernel.stdout)["error"]
        assert error["exit_code"] == 3 and "SANDBOX_MOUNTS" in error["message"]
    else:
        assert kernel.stdout == ""


@pytest.mark.parametrize("guarded", [True, False], ids=["pointed", "companion-unpointed"])
def test_the_session_runs_on_the_engine_preflight_checked_not_the_cli_context(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, guarded: bool
) -> None:
    """DOCKER_HOST unset: the engine client finds an engine, the docker CLI would follow DOCKER_CONTEXT."""
    from terminai_sandbox.engine import client as dockerapi
    from terminai_sandbox.engine.docker import DockerEngine

    answers: dict[str, bytes] = {}
    server = _FakeEngine(tmp_path / "e.sock", answers)
    try:
        env, ref = _session_site(tmp_path, answers)
        checked = env.pop("DOCKER_HOST")
        monkeypatch.setattr(dockerapi, "candidate_hosts", lambda _env: [checked])
        if not guarded:
            monkeypatch.setattr(DockerEngine, "host", property(lambda _self: None))
        env["DOCKER_CONTEXT"] = "some-other-engine"
        seen = tmp_path / "seen"
        (tmp_path / "bin" / "docker").write_text(f'#!/bin/sh\necho "$DOCKER_HOST" > {seen}\nexit 0\n')
        assert launch_true(tmp_path, monkeypatch, ref, env) == 0
    finally:
        server.server.close()
    assert (seen.read_text().strip() == checked) is guarded
