"""``kube`` and the network policy: off renders today's default deny; any other policy is refused.

A cluster session cannot have the launcher's proxy yet, so a policy asking for egress must
not be rendered as a session that silently has none.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from terminai_sandbox.cli import main
from terminai_sandbox.errors import ConfigError
from terminai_sandbox.kube.network import require_off

REFERENCE = "127.0.0.1:5000/terminai/sandbox:0.1.0@sha256:" + "a" * 64


def test_off_from_every_source_is_accepted() -> None:
    require_off({}, None)
    require_off({"SANDBOX_NETWORK": "off"}, "off")


@pytest.mark.parametrize(
    ("env", "option", "source"),
    [
        ({"SANDBOX_NETWORK": "allow:pypi.org"}, None, "SANDBOX_NETWORK"),
        ({"TERMINAI_SANDBOX_PROXY_COMMAND": "tinyproxy -d"}, None, "TERMINAI_SANDBOX_PROXY_COMMAND"),
        ({"GEMINI_SANDBOX_PROXY_COMMAND": "tinyproxy -d"}, None, "GEMINI_SANDBOX_PROXY_COMMAND"),
        ({}, "allow:pypi.org", "--network-policy"),
    ],
)
def test_a_policy_asking_for_egress_is_refused_naming_its_source(
    env: dict[str, str], option: str | None, source: str
) -> None:
    with pytest.raises(ConfigError, match=f"{source} asks for the network policy") as caught:
        require_off(env, option)
    assert caught.value.exit_code == 3 and "default-deny" in caught.value.message


def test_the_command_refuses_before_any_registry_request(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    key = tmp_path / "cosign.pub"
    key.write_text("not read: the policy is refused first\n")
    monkeypatch.setenv("SANDBOX_NETWORK", "allow:pypi.org")
    done = CliRunner().invoke(main, ["kube", REFERENCE, "--key", str(key)])
    assert done.exit_code == 3, done.output
    assert "cannot render yet" in done.output
