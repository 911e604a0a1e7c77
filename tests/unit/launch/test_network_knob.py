"""The network policy knob: its four sources, their order, their conflicts, and what a session gets.

``off`` must leave the session's command line exactly as it was before the knob existed;
every other mode keeps ``--network none`` and adds only the proxy's socket and the proxy
variables.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest
from terminai_sandbox.errors import ConfigError
from terminai_sandbox.launch import network
from terminai_sandbox.launch.config import LaunchConfig, load_launch_config
from terminai_sandbox.launch.egress_session import proxy_command_argv
from terminai_sandbox.launch.options import parse_run, request_from
from terminai_sandbox.launch.run import build_argv
from terminai_sandbox.launch.settings import SettingsFile

from tests.unit.launch.test_kernel_seal import PINNED

TYPE_CHECKING = False
if TYPE_CHECKING:
    from terminai_sandbox.launch.preflight import VerifiedImage


def _image() -> VerifiedImage:
    from tests.unit.launch.test_engines_and_trust import _verified

    return _verified()


def _config(env: dict[str, str], **kwargs: object) -> LaunchConfig:
    return load_launch_config(
        {"TERMINAI_SANDBOX": "docker", "TERMINAI_SANDBOX_IMAGE": PINNED, **env}, available=["docker"], **kwargs
    )  # type: ignore[arg-type]


def test_off_is_the_default_and_loads_no_egress_code() -> None:
    code = (
        "import sys\nfrom terminai_sandbox.launch import network\n"
        "c = network.resolve({})\nassert c.policy is None and c.mode == 'off', c\n"
        "assert network.resolve({'SANDBOX_NETWORK': 'off'}).policy is None\n"
        "print(sorted(m for m in sys.modules if m.startswith('terminai_apts.egress')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]"


def test_off_leaves_the_session_command_line_as_it_was(tmp_path: Path) -> None:
    before = build_argv(
        "docker",
        _image(),
        _config({}),
        ["true"],
        cwd=str(tmp_path),
        tty=False,
        uid=1000,
        gid=1000,
        name="terminai-x",
        binary="docker",
    )
    explicit = build_argv(
        "docker",
        _image(),
        _config({"SANDBOX_NETWORK": "off"}),
        ["true"],
        cwd=str(tmp_path),
        tty=False,
        uid=1000,
        gid=1000,
        name="terminai-x",
        binary="docker",
    )
    assert before == explicit
    assert before[before.index("--network") + 1] == "none"
    assert not any("PROXY" in word or network.SOCKET_DIR in word for word in before)


@pytest.mark.parametrize(
    "env",
    [
        {"SANDBOX_NETWORK": "allow:allowed.test"},
        {"TERMINAI_SANDBOX_PROXY_COMMAND": "python3 -m http.server 8877"},
        {"GEMINI_SANDBOX_PROXY_COMMAND": "python3 -m http.server 8877"},
    ],
)
def test_a_policy_keeps_network_none_and_adds_only_the_socket_and_the_proxy_variables(
    env: dict[str, str], tmp_path: Path
) -> None:
    off = build_argv(
        "docker",
        _image(),
        _config({}),
        ["true"],
        cwd=str(tmp_path),
        tty=False,
        uid=1000,
        gid=1000,
        name="terminai-x",
        binary="docker",
    )
    on = build_argv(
        "docker",
        _image(),
        _config(env),
        ["true"],
        cwd=str(tmp_path),
        tty=False,
        uid=1000,
        gid=1000,
        name="terminai-x",
        binary="docker",
        egress="/tmp/terminai-egress-x/sock",
    )
    assert on[on.index("--network") + 1] == "none"
    assert on.count("--network") == 1
    added = on[len(off) - 2 : -2]  # before the image and the command
    assert added == [
        "--mount",
        "type=bind,src=/tmp/terminai-egress-x/sock,dst=/run/terminai/egress,readonly",
        "--env",
        "HTTPS_PROXY=http://127.0.0.1:3128",
        "--env",
        "https_proxy=http://127.0.0.1:3128",
        "--env",
        "HTTP_PROXY=http://127.0.0.1:3128",
        "--env",
        "http_proxy=http://127.0.0.1:3128",
        "--env",
        "NO_PROXY=localhost,127.0.0.1",
        "--env",
        "no_proxy=localhost,127.0.0.1",
    ]
    assert on[: len(off) - 2] == off[:-2] and on[-2:] == off[-2:]


def test_a_policy_refuses_an_engine_network_beside_it(tmp_path: Path) -> None:
    from terminai_sandbox.common.hardening import Limits

    with pytest.raises(ConfigError, match="--network bridge cannot be combined"):
        build_argv(
            "docker",
            _image(),
            _config({"SANDBOX_NETWORK": "allow:allowed.test"}),
            ["true"],
            cwd=str(tmp_path),
            tty=False,
            uid=1000,
            gid=1000,
            binary="docker",
            egress="/tmp/x",
            limits=Limits(network="bridge", memory="2g", cpus="2"),
        )
    # off with --network bridge is as before the knob: the user's explicit choice.
    argv = build_argv(
        "docker",
        _image(),
        _config({}),
        ["true"],
        cwd=str(tmp_path),
        tty=False,
        uid=1000,
        gid=1000,
        binary="docker",
        limits=Limits(network="bridge", memory="2g", cpus="2"),
    )
    assert argv[argv.index("--network") + 1] == "bridge"


def test_the_legacy_variables_mean_proxy_command_and_terminai_wins_over_gemini() -> None:
    choice = network.resolve({"GEMINI_SANDBOX_PROXY_COMMAND": "a b", "TERMINAI_SANDBOX_PROXY_COMMAND": "c 'd e'"})
    assert choice.mode == "proxy-command" and choice.source == "TERMINAI_SANDBOX_PROXY_COMMAND"
    assert choice.policy is not None and choice.policy.proxy_command == ("c", "d e")  # argv, never a shell


def test_the_environment_wins_over_the_settings_file_and_the_option_over_the_settings() -> None:
    settings = lambda: "allow:settings.test"  # noqa: E731
    assert network.resolve({}, settings=settings).source == "settings network"
    assert network.resolve({}, option="allow:option.test", settings=settings).source == "--network-policy"
    chosen = network.resolve({"SANDBOX_NETWORK": "allow:env.test"}, settings=settings)
    assert chosen.source == "SANDBOX_NETWORK"
    assert chosen.policy is not None and [str(p) for p in chosen.policy.allow] == ["env.test"]


@pytest.mark.parametrize(
    ("env", "option", "message"),
    [
        ({"SANDBOX_NETWORK": "allow:a.test", "TERMINAI_SANDBOX_PROXY_COMMAND": "p"}, None, "name different"),
        ({"SANDBOX_NETWORK": "off", "GEMINI_SANDBOX_PROXY_COMMAND": "p"}, None, "name different"),
        ({"SANDBOX_NETWORK": "allow:a.test"}, "allow:b.test", "disagree"),
        ({"SANDBOX_NETWORK": "off"}, "allow:b.test", "disagree"),
        ({"TERMINAI_SANDBOX_PROXY_COMMAND": "p"}, "off", "disagree"),
    ],
)
def test_conflicting_sources_are_refused(env: dict[str, str], option: str | None, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        network.resolve(env, option=option)
    assert caught.value.exit_code == 3 and caught.value.hint


def test_agreeing_sources_are_accepted() -> None:
    both = {"SANDBOX_NETWORK": "proxy-command:p q", "TERMINAI_SANDBOX_PROXY_COMMAND": "p q"}
    assert network.resolve(both).mode == "proxy-command"
    assert network.resolve({"SANDBOX_NETWORK": "allow:a.test"}, option="allow:a.test").mode == "allow"


@pytest.mark.parametrize("text", ["allow:", "allow", "on", "allow:a.test, b.test", "proxy-command:"])
def test_a_malformed_policy_is_a_configuration_error_naming_its_source(text: str) -> None:
    with pytest.raises(ConfigError, match="SANDBOX_NETWORK"):
        network.resolve({"SANDBOX_NETWORK": text})


def test_the_settings_file_names_a_policy_as_a_string_or_an_object(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".terminai").mkdir(parents=True)
    path = home / ".terminai" / "settings.json"
    path.write_text('{"network": "allow:pypi.org" /* a comment */}')
    config = _config({"HOME": str(home)}, settings_network=SettingsFile({"HOME": str(home)}).network)
    assert config.network.mode == "allow" and config.network.source == "settings network"
    path.write_text(json.dumps({"network": {"mode": "allow", "allow": ["pypi.org"], "deny": ["x.pypi.org"]}}))
    config = _config({"HOME": str(home)}, settings_network=SettingsFile({"HOME": str(home)}).network)
    assert config.network.policy is not None and [str(p) for p in config.network.policy.deny] == ["x.pypi.org"]
    path.write_text(json.dumps({"network": ["pypi.org"]}))
    with pytest.raises(ConfigError, match="settings network"):
        _config({"HOME": str(home)}, settings_network=SettingsFile({"HOME": str(home)}).network)


def test_the_run_option_is_parsed_by_the_one_parser() -> None:
    params = parse_run(["--network-policy", "allow:pypi.org", "--", "pip", "download", "x"])
    assert request_from(params).network_policy == "allow:pypi.org"
    assert params["network"] == "none" and params["command"] == ("pip", "download", "x")


def test_the_policy_is_described_in_one_line_and_recorded_whole() -> None:
    choice = network.resolve({"SANDBOX_NETWORK": "allow:allowed.test,!bad.allowed.test"})
    assert "\n" not in choice.describe() and choice.describe().endswith("(SANDBOX_NETWORK)")
    record = choice.record()
    assert record["mode"] == "allow" and json.loads(json.dumps(record))["policy"]["deny"] == ["bad.allowed.test"]
    assert network.OFF.record() == {"mode": "off", "source": "the default"}


def test_the_test_hosts_file_is_refused_inside_the_project_folder(tmp_path: Path) -> None:
    inside = tmp_path / "project" / "hosts"
    inside.parent.mkdir()
    inside.write_text("127.0.0.1 allowed.test\n")
    outside = tmp_path / "hosts"
    outside.write_text("127.0.0.1 allowed.test\n")
    with pytest.raises(ConfigError, match="lies in the project folder"):
        network.test_hosts_file({network.TEST_HOSTS_ENV: str(inside)}, cwd=str(inside.parent))
    link = inside.parent / "link"
    link.symlink_to(outside)
    assert network.test_hosts_file({network.TEST_HOSTS_ENV: str(link)}, cwd=str(inside.parent)) == str(outside)
    assert network.test_hosts_file({}, cwd=str(inside.parent)) is None


def test_the_proxy_commands_container_is_hardened_and_runs_the_verified_digest() -> None:
    argv = proxy_command_argv("docker", "terminai-x-proxy", PINNED, ["python3", "-m", "http.server", "8877"])
    assert argv[-5:] == [PINNED, "python3", "-m", "http.server", "8877"]
    pairs = list(itertools.pairwise(argv))
    for pair in [
        ("--cap-drop", "ALL"),
        ("--security-opt", "no-new-privileges"),
        ("--network", "host"),
        ("--user", "10001:10001"),
    ]:
        assert pair in pairs
    assert "--read-only" in argv and "--pids-limit" in argv and "--memory" in argv
    assert "--privileged" not in argv and "--volume" not in argv  # not even the working directory


def test_under_gvisor_a_policy_selects_the_runtime_that_may_reach_the_proxys_socket() -> None:
    from terminai_sandbox.engine.runtime import engine_flags, session_runtime

    assert engine_flags("docker", "runsc", runsc=None) == ("--runtime", "runsc")
    assert engine_flags("docker", "runsc", runsc=None, egress=True) == ("--runtime", "runsc-egress")
    assert engine_flags("docker", "runc", runsc=None, egress=True) == ()
    podman = engine_flags("podman", "runsc", runsc="/usr/bin/runsc", egress=True)
    assert podman == (
        "--runtime",
        "/usr/bin/runsc",
        "--runtime-flag",
        "network=none",
        "--runtime-flag",
        "host-uds=open",
    )
    assert "host-uds=open" not in engine_flags("podman", "runsc", runsc="/usr/bin/runsc")
    assert session_runtime("runsc", egress=True) == "runsc-egress" and session_runtime("runc", egress=True) == "runc"
