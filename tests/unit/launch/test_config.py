from __future__ import annotations

from pathlib import Path

import pytest
from terminai_sandbox.errors import AuditError, ConfigError
from terminai_sandbox.launch import audit
from terminai_sandbox.launch.config import (
    load_launch_config,
    parse_engine,
    parse_env,
    parse_flags,
    parse_mounts,
    parse_ports,
)
from terminai_sandbox.launch.preflight import VerifiedImage, contract_compatible

ALL = ("docker", "podman")


def test_engine_values() -> None:
    assert parse_engine("true", "TERMINAI_SANDBOX", available=ALL) == "docker"
    assert parse_engine("1", "X", available=("podman",)) == "podman"
    assert parse_engine("FALSE", "X", available=ALL) is None
    assert parse_engine(" Podman ", "X", available=ALL) == "podman"
    for bad, message in (
        ("yes-please", "not a sandbox engine"),
        ("sandbox-exec", "not supported"),
        ("runsc", "not a sandbox engine"),
    ):
        with pytest.raises(ConfigError, match=message):
            parse_engine(bad, "TERMINAI_SANDBOX", available=ALL)
    with pytest.raises(ConfigError, match="not supported"):  # not on macOS either
        parse_engine("sandbox-exec", "TERMINAI_SANDBOX", available=(*ALL, "sandbox-exec"))
    with pytest.raises(ConfigError, match="not installed"):
        parse_engine("podman", "X", available=("docker",))
    with pytest.raises(ConfigError, match="neither docker nor podman"):
        parse_engine("true", "X", available=())


@pytest.mark.parametrize(
    "flags",
    [
        "--privileged",
        "--cap-add SYS_ADMIN",
        "--cap-add=NET_ADMIN",
        "--security-opt seccomp=unconfined",
        "--security-opt=apparmor=unconfined",
        "--pid host",
        "--ipc=host",
        "--network host",
        "--net=host",
        "--user 0",
        "-u root",
        "-v /var/run/docker.sock:/var/run/docker.sock",
        "--device /dev/kvm",
    ],
)
def test_dangerous_flags_are_refused_unless_allowed(flags: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_flags(flags)
    assert "SANDBOX_FLAGS item" in caught.value.message and "--unsafe-allow-flag" in caught.value.hint
    name = flags.split(maxsplit=1)[0].split("=", maxsplit=1)[0]
    assert parse_flags(flags, allowed=[name])


def test_shell_operators_are_refused_and_only_harmless_flags_pass() -> None:
    # What used to pass as "harmless values" of dangerous flags is refused now: the allowlist
    # has no --security-opt, --network, --env-file or --user, whatever their value.
    for once_accepted in ("--security-opt label=type:container_t", "--network none", "--env-file x", "--user 1000"):
        with pytest.raises(ConfigError, match="is refused"):
            parse_flags(once_accepted)
    assert parse_flags("-e A=1 --workdir /w") == ("-e", "A=1", "--workdir", "/w")
    for bad in ("--a ; rm -rf /", "--a | cat", "'unbalanced"):
        with pytest.raises(ConfigError, match="SANDBOX_FLAGS"):
            parse_flags(bad)


def test_mounts(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    got = parse_mounts(f"{tmp_path}/data, {tmp_path}/data:/data/in:rw ,{tmp_path}/data:rw", home="/home/u")
    assert [(m.source, m.target, m.read_only) for m in got] == [
        (f"{tmp_path}/data", f"{tmp_path}/data", True),
        (f"{tmp_path}/data", "/data/in", False),
        (f"{tmp_path}/data", f"{tmp_path}/data", False),
    ]
    win = parse_mounts(r"C:\Users\me\proj:/workspace/proj:ro", home="/home/u")
    assert (win[0].source, win[0].target) == ("/c/Users/me/proj", "/workspace/proj")
    for bad, message in (
        ("relative/path", "not absolute"),
        ("/", "host root"),
        ("/var/run/docker.sock", "socket"),
        ("/home/u", "whole home"),
        (f"{tmp_path}/missing", "does not exist"),
        (f"{tmp_path}/data:/data/in:rx", "not ro or rw"),
        (f"{tmp_path}/data:/a:b:c", "too many"),
        (f"{tmp_path}/data/../data", "'..'"),
    ):
        with pytest.raises(ConfigError, match=message):
            parse_mounts(bad, home="/home/u")


def test_ports_and_env() -> None:
    assert [(p.host, p.container) for p in parse_ports("8080, 9000:80")] == [(8080, 8080), (9000, 80)]
    for bad in ("http", "0", "70000", "1:2:3"):
        with pytest.raises(ConfigError, match="SANDBOX_PORTS item"):
            parse_ports(bad)
    items = parse_env(r"A=1,B=x\,y,LANG", inherited={"LANG": "C.UTF-8"})
    assert [(i.name, i.value) for i in items] == [("A", "1"), ("B", "x,y"), ("LANG", None)]
    with pytest.raises(ConfigError, match="secret on the command line"):
        parse_env("GITHUB_TOKEN=abc", inherited={})
    with pytest.raises(ConfigError, match="not a variable name"):
        parse_env("1BAD=x", inherited={})
    with pytest.raises(ConfigError, match="not set in your environment"):
        parse_env("MISSING", inherited={})


def test_image_precedence_and_empty_values() -> None:
    base = dict(default_image=lambda: "reg.example/terminai/sandbox:0.1.0", available=ALL)
    cfg = load_launch_config(
        {"TERMINAI_SANDBOX_IMAGE": "a.example/x:1", "GEMINI_SANDBOX_IMAGE": "b.example/y:1"},
        image_flag="c.example/z:1",
        **base,
    )  # type: ignore[arg-type]
    assert str(cfg.image) == "a.example/x:1" and cfg.image_from == "TERMINAI_SANDBOX_IMAGE"
    cfg = load_launch_config({"GEMINI_SANDBOX": "podman"}, image_flag="c.example/z@sha256:" + "a" * 64, **base)  # type: ignore[arg-type]
    assert cfg.engine == "podman" and cfg.image is not None and cfg.image.digest == "sha256:" + "a" * 64
    with pytest.raises(ConfigError, match="set but empty"):
        load_launch_config({"TERMINAI_SANDBOX_IMAGE": ""}, **base)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="SANDBOX_SET_UID_GID"):
        load_launch_config({"SANDBOX_SET_UID_GID": "maybe"}, **base)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="malformed digest"):
        load_launch_config({"TERMINAI_SANDBOX_IMAGE": "r.example/x@sha256:12"}, **base)  # type: ignore[arg-type]


def test_contract_compatibility() -> None:
    assert contract_compatible("1.0.0", "1.0.0") is None
    assert contract_compatible("1.3.0", "1.2.0") is None
    assert "major differs" in (contract_compatible("2.0.0", "1.0.0") or "")
    assert "older" in (contract_compatible("1.1.0", "1.2.0") or "")
    assert "no dev.terminai.contract.version" in (contract_compatible(None, "1.0.0") or "")


def test_only_preflight_makes_a_verified_image() -> None:
    with pytest.raises(TypeError, match="only created by preflight"):
        VerifiedImage(
            pinned="r/x@sha256:" + "a" * 64,
            digest="sha256:" + "a" * 64,
            image_id="id",
            verified_by=(),
            skipped_verification=False,
            run_ref="r/x",
        )


def test_ledger_chain_detects_edits_removals_and_reordering(tmp_path: Path) -> None:
    ledger = audit.Ledger(tmp_path / "audit.jsonl")
    for index in range(4):
        ledger.append("event", n=index)
    assert audit.verify(ledger.path) == 4
    lines = ledger.path.read_bytes().splitlines(keepends=True)
    for broken, message in (
        (lines[:1] + lines[2:], "does not follow"),
        ([lines[1], lines[0], *lines[2:]], "does not follow"),
        ([lines[0], lines[1].replace(b'"n": 1', b'"n": 9'), *lines[2:]], "was edited"),
        ([lines[0], b"{not json\n", *lines[2:]], "not valid JSON"),
    ):
        ledger.path.write_bytes(b"".join(broken))
        with pytest.raises(AuditError, match=message):
            audit.verify(ledger.path)
