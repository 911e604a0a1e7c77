"""``kube`` and the network policy: off renders the default deny, allow renders the proxy, the rest is refused.

The legacy proxy command is an argv run beside a host session; a cluster has no place for
it, so asking for it must not be rendered as a session that silently has no network.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from terminai_apts.egress.policy import parse_network_policy
from terminai_sandbox.cli import main
from terminai_sandbox.errors import ConfigError
from terminai_sandbox.kube.hardening import SessionShape
from terminai_sandbox.kube.manifests import check_names
from terminai_sandbox.kube.network import cluster_policy

REFERENCE = "127.0.0.1:5000/terminai/sandbox:0.1.0@sha256:" + "a" * 64


def test_off_from_every_source_is_no_policy() -> None:
    assert cluster_policy({}, None) is None
    assert cluster_policy({"SANDBOX_NETWORK": "off"}, "off") is None


@pytest.mark.parametrize(
    ("env", "option"),
    [
        ({"SANDBOX_NETWORK": "allow:pypi.org"}, None),
        ({}, "allow:pypi.org"),
        ({"SANDBOX_NETWORK": "allow:pypi.org"}, "allow:pypi.org"),
    ],
)
def test_allow_from_the_environment_or_the_option_is_the_policy(env: dict[str, str], option: str | None) -> None:
    assert cluster_policy(env, option) == parse_network_policy("allow:pypi.org", source="test")


@pytest.mark.parametrize(
    ("env", "option", "source"),
    [
        ({"TERMINAI_SANDBOX_PROXY_COMMAND": "tinyproxy -d"}, None, "TERMINAI_SANDBOX_PROXY_COMMAND"),
        ({"GEMINI_SANDBOX_PROXY_COMMAND": "tinyproxy -d"}, None, "GEMINI_SANDBOX_PROXY_COMMAND"),
        ({"SANDBOX_NETWORK": "proxy-command:tinyproxy -d"}, None, "SANDBOX_NETWORK"),
        ({}, "proxy-command:tinyproxy", "--network-policy"),
    ],
)
def test_a_proxy_command_is_refused_naming_its_source(env: dict[str, str], option: str | None, source: str) -> None:
    with pytest.raises(ConfigError, match=f"{source} asks for the proxy command") as caught:
        cluster_policy(env, option)
    assert caught.value.exit_code == 3 and "allow:" in caught.value.hint


def test_two_sources_naming_different_policies_are_refused() -> None:
    with pytest.raises(ConfigError, match="name different network policies"):
        cluster_policy({"SANDBOX_NETWORK": "allow:pypi.org"}, "allow:github.com")
    with pytest.raises(ConfigError, match="name different network policies"):
        cluster_policy({"SANDBOX_NETWORK": "allow:pypi.org"}, "off")


def test_a_malformed_policy_is_the_hosts_config_error() -> None:
    with pytest.raises(ConfigError, match="SANDBOX_NETWORK") as caught:
        cluster_policy({"SANDBOX_NETWORK": "allow:pypi.org:0"}, None)
    assert type(caught.value) is ConfigError and caught.value.exit_code == 3


def test_a_name_too_long_or_not_starting_with_a_letter_is_refused_with_a_policy() -> None:
    policy = parse_network_policy("allow:pypi.org", source="test")
    check_names(SessionShape(name="a" * 54), "ns")  # fits "-deny-all"
    with pytest.raises(ConfigError, match="--name"):
        check_names(SessionShape(name="a" * 54, network=policy), "ns")  # not "-egress-session"
    check_names(SessionShape(name="7agents"), "ns")
    with pytest.raises(ConfigError, match="start with a letter"):
        check_names(SessionShape(name="7agents", network=policy), "ns")


@pytest.mark.parametrize(
    "env",
    [
        {"TERMINAI_SANDBOX_PROXY_COMMAND": "tinyproxy -d"},
        {"SANDBOX_NETWORK": "allow:bad..name"},
        {"TERMINAI_JOURNAL_CHECKPOINT": "/var/lib/terminai/checkpoints/journal.json"},
        {"TERMINAI_JOURNAL_WITNESS": "/var/lib/terminai/witness"},
    ],
)
def test_the_command_refuses_before_any_registry_request(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, env: dict[str, str]
) -> None:
    key = tmp_path / "cosign.pub"
    key.write_text("not read: the policy is refused first\n")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    done = CliRunner().invoke(main, ["kube", REFERENCE, "--key", str(key)])
    assert done.exit_code == 3, done.output
    assert "error:" in done.output and "hint:" in done.output and "Traceback" not in done.output
    assert any(name in done.output for name in env), done.output  # names the knob
