"""One parser for whom to trust: ``common.trust_options.choose_trust``.

Each rule is checked on the parser, then the real console script shows that ``run`` (the
kernel's click-free path), ``preflight``, ``verify`` and ``kube`` print the same error for
the same bad command line.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from terminai_sandbox.common.trust_options import (
    EMPTY,
    NONE_GIVEN,
    TOO_MANY,
    UNPAIRED,
    TrustChoice,
    choose_trust,
)
from terminai_sandbox.errors import ConfigError
from terminai_sandbox.launch import trust
from terminai_sandbox.launch.session import LaunchRequest, trust_source
from terminai_sandbox.signing.verify.trust import policy_from_options

KEY = Path("cosign.pub")
POLICY = Path("policy.json")
WHO = "https://github.com/acme/sandbox/.github/workflows/release.yml@refs/tags/v1.0.0"
ISSUER = "https://token.actions.githubusercontent.com"


def _choose(
    key: Path | None = None, identity: str | None = None, issuer: str | None = None, policy: Path | None = None
) -> TrustChoice | None:
    return choose_trust(key=key, identity=identity, issuer=issuer, policy=policy)


def test_each_option_alone_names_its_policy() -> None:
    assert _choose(key=KEY) == TrustChoice(key=KEY)
    assert _choose(identity=WHO, issuer=ISSUER) == TrustChoice(identity=WHO, issuer=ISSUER)
    assert _choose(policy=POLICY) == TrustChoice(policy=POLICY)


def test_no_option_names_no_policy_and_empty_keyless_options_alone_are_refused() -> None:
    assert _choose() is None
    for given in ({"identity": "", "issuer": ""}, {"identity": ""}, {"issuer": ""}):
        with pytest.raises(ConfigError) as caught:
            _choose(**given)  # type: ignore[arg-type]
        assert caught.value.message == EMPTY
    assert _choose(key=KEY, identity="", issuer="") == TrustChoice(key=KEY)  # beside another option: absent


@pytest.mark.parametrize(
    "given",
    [
        {"key": KEY, "policy": POLICY},
        {"key": KEY, "identity": WHO, "issuer": ISSUER},
        {"policy": POLICY, "identity": WHO, "issuer": ISSUER},
        # Half an identity still counts as naming one: the first complaint is "more than one".
        {"key": KEY, "issuer": ISSUER},
        {"policy": POLICY, "identity": WHO},
    ],
)
def test_more_than_one_policy_is_refused(given: dict[str, object]) -> None:
    with pytest.raises(ConfigError) as caught:
        _choose(**given)  # type: ignore[arg-type]
    assert caught.value.message == TOO_MANY and caught.value.exit_code == 3


@pytest.mark.parametrize("given", [{"identity": WHO}, {"issuer": ISSUER}, {"identity": WHO, "issuer": ""}])
def test_half_a_keyless_identity_is_refused(given: dict[str, str]) -> None:
    with pytest.raises(ConfigError) as caught:
        _choose(**given)  # type: ignore[arg-type]
    assert caught.value.message == UNPAIRED


def test_the_launch_and_the_verifier_build_the_policy_that_was_named(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    launched = trust_source(LaunchRequest(certificate_identity=WHO, certificate_oidc_issuer=ISSUER), env)
    assert launched is not None and launched.describe == trust.keyless_identity(WHO, ISSUER).describe
    (identity,) = policy_from_options(key=None, identity=WHO, issuer=ISSUER, policy_file=None).identities
    assert (identity.identity, identity.issuer) == (WHO, ISSUER)


def test_no_policy_is_refused_by_verify_and_by_a_launch_without_a_default_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as by_verify:
        policy_from_options(key=None, identity=None, issuer=None, policy_file=None)
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    with pytest.raises(ConfigError) as by_launch:
        trust_source(LaunchRequest(), env)
    assert by_verify.value.message == by_launch.value.message == NONE_GIVEN
    assert str(tmp_path / "config" / "terminai-sandbox" / "policy.json") in (by_launch.value.hint or "")
    assert trust_source(LaunchRequest(unsafe_skip_verify=True), env) is None


CLI = str(Path(sys.executable).with_name("terminai-sandbox"))
IMAGE = "registry.example/acme/sandbox@sha256:" + "0" * 64


def _error_lines(argv: list[str], home: Path) -> tuple[int, list[str]]:
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / "config"), "XDG_STATE_HOME": str(home)}
    env.pop("TERMINAI_SANDBOX_IMAGE", None)
    proc = subprocess.run([CLI, *argv], capture_output=True, text=True, env=env, timeout=60, check=False)
    return proc.returncode, [line for line in proc.stderr.splitlines() if line.startswith(("error:", "  hint:"))]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (["--key", "cosign.pub", "--policy", "policy.json"], TOO_MANY),
        (["--certificate-identity", WHO], UNPAIRED),
        (["--key", "cosign.pub", "--certificate-oidc-issuer", ISSUER], TOO_MANY),
    ],
)
def test_every_command_gives_the_same_error_for_the_same_bad_options(
    tmp_path: Path, bad: list[str], message: str
) -> None:
    commands = {
        "run": ["run", "--image", IMAGE, *bad, "--", "true"],
        "preflight": ["preflight", "--image", IMAGE, *bad],
        "verify": ["verify", IMAGE, *bad],
        "kube": ["kube", IMAGE, *bad],
    }
    seen = {name: _error_lines(argv, tmp_path) for name, argv in commands.items()}
    assert seen["run"][1][:1] == [f"error: {message}"], seen
    assert all(result == seen["run"] for result in seen.values()), seen
    assert seen["run"][0] == 3


def test_every_command_that_takes_the_trust_options_declares_them_from_the_one_table() -> None:
    # The help click prints is generated from each command's declared parameters: the same
    # flag, parameter name and help text everywhere means one declaration, not copies that agree.
    import click
    from terminai_sandbox.cli import main
    from terminai_sandbox.launch.options import PREFLIGHT_OPTIONS, RUN_OPTIONS, TRUST_OPTIONS

    assert [o.flag for o in TRUST_OPTIONS] == [
        "--key",
        "--certificate-identity",
        "--certificate-oidc-issuer",
        "--policy",
    ]
    assert all(o in RUN_OPTIONS and o in PREFLIGHT_OPTIONS for o in TRUST_OPTIONS)
    assert isinstance(main, click.Group)
    ctx = click.Context(main)

    def command(name: str) -> click.Command:
        found = main.get_command(ctx, name)  # the group loads its command modules lazily
        assert found is not None, name
        return found

    release = command("release")
    assert isinstance(release, click.Group)
    commands = {name: command(name) for name in ("verify", "kube", "run", "preflight")}
    commands["release verify"] = release.commands["verify"]
    for name, command in commands.items():
        declared = {p.opts[0]: p for p in command.params if isinstance(p, click.Option)}
        for option in TRUST_OPTIONS:
            param = declared.get(option.flag)
            assert param is not None, f"{name} lacks {option.flag}"
            assert (param.name, param.help) == (option.dest, option.help), name
