"""The container runtime knob (runc or gVisor's runsc): parsing, precedence, command line, preflight refusal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from terminai_sandbox.engine.podman import PodmanEngine
from terminai_sandbox.engine.runtime import engine_flags, missing_on_docker, missing_on_podman, parse_runtime
from terminai_sandbox.errors import ConfigError, EngineError
from terminai_sandbox.launch import audit, preflight
from terminai_sandbox.launch.config import LaunchConfig, load_launch_config
from terminai_sandbox.launch.options import parse_run, request_from
from terminai_sandbox.launch.run import build_argv
from terminai_sandbox.launch.settings import SettingsFile

from tests.unit.launch.test_engines_and_trust import _FakeEngine, _verified

BASE = {"available": ["docker", "podman"], "default_image": lambda: None}


def _settings(home: Path, document: object) -> dict[str, str]:
    (home / ".terminai").mkdir(exist_ok=True)
    (home / ".terminai" / "settings.json").write_text(json.dumps(document), encoding="utf-8")
    return {"HOME": str(home)}


@pytest.mark.parametrize(
    ("value", "expected"),
    [("runc", "runc"), ("runsc", "runsc"), ("gvisor", "runsc"), (" GVisor ", "runsc"), ("RUNC", "runc")],
)
def test_runtime_names_and_the_gvisor_alias(value: str, expected: str) -> None:
    assert parse_runtime(value, "TERMINAI_SANDBOX_RUNTIME") == expected


@pytest.mark.parametrize("value", ["", "crun", "kata", "true", "runsc --platform=kvm", "io.containerd.runc.v2"])
def test_anything_else_is_refused_naming_the_source(value: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_runtime(value, "TERMINAI_SANDBOX_RUNTIME")
    assert refused.value.exit_code == 3
    assert refused.value.message == f"TERMINAI_SANDBOX_RUNTIME={value!r} is not a container runtime"
    assert "runc" in refused.value.hint and "runsc" in refused.value.hint and "gvisor" in refused.value.hint


def test_env_or_flag_beats_settings_beats_the_default(tmp_path: Path) -> None:
    env = _settings(tmp_path, {"tools": {"sandbox": "docker", "sandboxRuntime": "gvisor"}})
    read = lambda: SettingsFile(env).runtime()  # noqa: E731
    cfg = load_launch_config(env, **BASE)  # type: ignore[arg-type]
    assert (cfg.runtime, cfg.runtime_from) == ("runc", "the default")
    cfg = load_launch_config(env, settings_runtime=read, **BASE)  # type: ignore[arg-type]
    assert (cfg.runtime, cfg.runtime_from) == ("runsc", "settings tools.sandboxRuntime")
    cfg = load_launch_config(env, runtime_flag="runc", settings_runtime=read, **BASE)  # type: ignore[arg-type]
    assert (cfg.runtime, cfg.runtime_from) == ("runc", "--runtime")
    with_env = {**env, "TERMINAI_SANDBOX_RUNTIME": "runsc"}
    cfg = load_launch_config(with_env, settings_runtime=read, **BASE)  # type: ignore[arg-type]
    assert (cfg.runtime, cfg.runtime_from) == ("runsc", "TERMINAI_SANDBOX_RUNTIME")
    cfg = load_launch_config(with_env, runtime_flag="gvisor", settings_runtime=read, **BASE)  # type: ignore[arg-type]
    assert (cfg.runtime, cfg.runtime_from) == ("runsc", "TERMINAI_SANDBOX_RUNTIME")


@pytest.mark.parametrize(("variable", "flag"), [("runc", "runsc"), ("runsc", "runc"), ("gvisor", "runc")])
def test_the_environment_and_the_command_line_must_agree(variable: str, flag: str) -> None:
    """A project's environment quietly undid `--runtime runsc` (the session then shared the
    host's kernel); either way round, a disagreement is refused naming both."""
    with pytest.raises(ConfigError, match=f"--runtime {flag} and TERMINAI_SANDBOX_RUNTIME={variable} disagree"):
        load_launch_config({"TERMINAI_SANDBOX_RUNTIME": variable}, runtime_flag=flag, **BASE)  # type: ignore[arg-type]


def test_a_bad_value_from_each_source_names_that_source(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="TERMINAI_SANDBOX_RUNTIME='kata' is not a container runtime"):
        load_launch_config({"TERMINAI_SANDBOX_RUNTIME": "kata"}, **BASE)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="--runtime='crun' is not a container runtime"):
        load_launch_config({}, runtime_flag="crun", **BASE)  # type: ignore[arg-type]
    env = _settings(tmp_path, {"tools": {"sandboxRuntime": "lxc"}})
    with pytest.raises(ConfigError, match=r"settings tools\.sandboxRuntime='lxc' is not a container runtime"):
        load_launch_config(env, settings_runtime=lambda: SettingsFile(env).runtime(), **BASE)  # type: ignore[arg-type]


def test_the_settings_file_is_not_read_when_env_or_flag_chose(tmp_path: Path) -> None:
    def broken() -> str:
        raise AssertionError("the settings file was read although the environment chose")

    cfg = load_launch_config({"TERMINAI_SANDBOX_RUNTIME": "gvisor"}, settings_runtime=broken, **BASE)  # type: ignore[arg-type]
    assert cfg.runtime == "runsc"
    assert load_launch_config({}, runtime_flag="runsc", settings_runtime=broken, **BASE).runtime == "runsc"  # type: ignore[arg-type]


def test_one_launch_reads_the_settings_file_once(tmp_path: Path) -> None:
    env = _settings(tmp_path, {"tools": {"sandbox": "podman", "sandboxRuntime": "gvisor"}})
    settings = SettingsFile(env)
    assert settings.engine() == "podman"
    (tmp_path / ".terminai" / "settings.json").unlink()  # a second read would find nothing
    assert settings.runtime() == "gvisor"
    assert SettingsFile(env).runtime() is None


@pytest.mark.parametrize(
    ("document", "expected"),
    [({}, None), ({"tools": {}}, None), ({"tools": {"sandboxRuntime": "runsc"}}, "runsc"), ({"sandbox": "x"}, None)],
)
def test_the_setting_is_tools_sandbox_runtime(tmp_path: Path, document: object, expected: str | None) -> None:
    assert SettingsFile(_settings(tmp_path, document)).runtime() == expected
    assert SettingsFile({"HOME": str(tmp_path / "nowhere")}).runtime() is None


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ({"tools": {"sandboxRuntime": True}}, "tools.sandboxRuntime is the boolean true; it must be a runtime name"),
        ({"tools": {"sandboxRuntime": None}}, "tools.sandboxRuntime is null"),
        ({"tools": "runsc"}, "tools is a string; it must be an object holding 'sandboxRuntime'"),
        ([1], "holds an array, not a JSON object"),
    ],
)
def test_a_setting_of_the_wrong_type_is_refused(tmp_path: Path, document: object, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem.replace("(", r"\(")):
        SettingsFile(_settings(tmp_path, document)).runtime()


def test_the_run_option_reaches_the_request() -> None:
    params = parse_run(["--runtime", "gvisor", "--", "true"])
    assert params is not None and request_from(params).runtime == "gvisor"
    default = parse_run(["true"])
    assert default is not None and request_from(default).runtime is None


def test_each_engine_is_told_its_way_and_runc_adds_nothing() -> None:
    assert engine_flags("docker", "runc", runsc="/usr/bin/runsc") == ()
    assert engine_flags("podman", "runc", runsc="/usr/bin/runsc") == ()
    assert engine_flags("docker", "runsc", runsc=None) == ("--runtime", "runsc")
    assert engine_flags("podman", "runsc", runsc="/opt/bin/runsc") == (
        "--runtime",
        "/opt/bin/runsc",
        "--runtime-flag",
        "network=none",
    )


@pytest.mark.parametrize("engine", ["docker", "podman"])
def test_the_session_argv_under_runsc_keeps_every_hardening_flag(engine: str) -> None:
    def argv(runtime: str) -> list[str]:
        config = LaunchConfig(engine=engine, engine_from="t", image=None, image_from="t", runtime=runtime)
        return build_argv(
            engine,
            _verified(),
            config,
            ["true"],
            cwd="/w",
            tty=False,
            uid=1000,
            gid=1000,
            binary=engine,
            rlimits={"nofile": (1024, 4096), "nproc": (100, 100)},
            runsc="/usr/bin/runsc",
            name="terminai-fixed",
        )

    runc, runsc = argv("runc"), argv("runsc")
    extra = list(engine_flags(engine, "runsc", runsc="/usr/bin/runsc"))
    assert "--runtime" not in runc
    # The same command line with the runtime flags added before the image, nothing removed.
    at = runsc.index("--runtime")
    assert runsc[at : at + len(extra)] == extra
    assert runsc[:at] + runsc[at + len(extra) :] == runc
    assert runsc[-2:] == ["r.example/x@sha256:" + "b" * 64, "true"]


def test_a_missing_runtime_is_an_engine_error_with_the_script_that_fixes_it() -> None:
    assert missing_on_docker("runc", []) is None
    assert missing_on_docker("runsc", ["runc", "runsc"]) is None
    refused = missing_on_docker("runsc", ["runc", "io.containerd.runc.v2"])
    assert isinstance(refused, EngineError) and refused.exit_code == 4
    assert "dockerd has no runtime of that name (it has: io.containerd.runc.v2, runc)" in refused.message
    assert "scripts/ensure-engine" in refused.hint and "scripts/ensure-host-tools" in refused.hint
    assert missing_on_podman("runc", None) is None and missing_on_podman("runsc", "/usr/bin/runsc") is None
    podman = missing_on_podman("runsc", None)
    assert podman is not None and "runsc is not on PATH" in podman.message
    assert "scripts/ensure-host-tools" in podman.hint
    # Podman looks runsc up on the PATH the launcher was given.
    assert PodmanEngine("/usr/bin/podman", "4", rootless=False, env={"PATH": "/nonexistent"}).runtime_problem("runsc")
    assert (
        PodmanEngine("/usr/bin/podman", "4", rootless=False, env={"PATH": "/nonexistent"}).runtime_problem("runc")
        is None
    )


def _docker_answers(answers: dict[str, bytes], runtimes: dict[str, object]) -> None:
    answers["/_ping"] = b"HTTP/1.0 200 OK\r\nApi-Version: 1.41\r\nServer: Docker/20.10.24 (linux)\r\n\r\nOK"
    answers["/v1.41/info"] = b"HTTP/1.0 200 OK\r\n\r\n" + json.dumps({"Runtimes": runtimes}).encode()
    ref = "127.0.0.1:5000/terminai/sandbox@sha256:" + "a" * 64
    image = {"Id": "sha256:1", "Config": {"Labels": {preflight.CONTRACT_LABEL: "1.0.0"}}}
    answers[f"/v1.41/images/{ref}/json"] = b"HTTP/1.0 200 OK\r\n\r\n" + json.dumps(image).encode()


def test_preflight_step_1_refuses_runsc_on_a_dockerd_without_it_and_reports_it_when_present(tmp_path: Path) -> None:
    answers: dict[str, bytes] = {}
    server = _FakeEngine(tmp_path / "e.sock", answers)
    try:
        env = {"DOCKER_HOST": f"unix://{tmp_path / 'e.sock'}", "TERMINAI_SANDBOX": "docker"}
        ref = "127.0.0.1:5000/terminai/sandbox@sha256:" + "a" * 64
        options = preflight.PreflightOptions(trust=None, unsafe_skip_verify=True, supported_contract="1.0.0", env=env)
        ledger = audit.Ledger(tmp_path / "audit.jsonl")
        gvisor = load_launch_config({**env, "TERMINAI_SANDBOX_RUNTIME": "gvisor"}, image_flag=ref, available=["docker"])
        _docker_answers(answers, {"runc": {"path": "runc"}})
        with pytest.raises(EngineError, match=r"preflight step 1 \(engine\) refused: .*runsc \(gVisor\)") as refused:
            preflight.preflight(gvisor, options, ledger=ledger)
        assert "scripts/ensure-engine" in refused.value.hint
        steps = [json.loads(line) for line in ledger.path.read_text().splitlines()]
        assert [(s["step"], s["ok"]) for s in steps] == [(0, True), (1, False)]
        assert "runtime runsc (TERMINAI_SANDBOX_RUNTIME)" in steps[0]["detail"]
        _docker_answers(answers, {"runc": {"path": "runc"}, "runsc": {"path": "/usr/bin/runsc"}})
        _, results = preflight.preflight(gvisor, options, ledger=ledger)
        assert results[1].detail.endswith("; runtime runsc (gVisor)")
        # runc never asks the engine for its runtimes.
        answers.pop("/v1.41/info")
        runc = load_launch_config(env, image_flag=ref, available=["docker"])
        _, results = preflight.preflight(runc, options, ledger=ledger)
        assert "runtime runc (the engine's default" in results[1].detail
    finally:
        server.server.close()
