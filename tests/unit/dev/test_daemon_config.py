"""Registering runsc in dockerd's daemon.json: a merge that keeps everything else, and the reload."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from terminai_sandbox.errors import EngineError
from terminai_sandbox_dev.daemon_config import (
    ensure_runsc,
    newer_runsc,
    register_runsc,
    reload_dockerd,
    runsc_entry,
    with_runsc,
)

ADMIN = {
    "registry-mirrors": ["https://mirror.example"],
    "log-driver": "journald",
    "default-runtime": "runc",
    "runtimes": {"kata": {"path": "/opt/kata/bin/kata-runtime"}},
}


def test_the_merge_adds_runsc_and_keeps_every_other_setting() -> None:
    merged, action = with_runsc(ADMIN, "/usr/bin/runsc")
    assert merged["runtimes"] == {
        "kata": {"path": "/opt/kata/bin/kata-runtime"},
        "runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none"]},
    }
    assert {k: v for k, v in merged.items() if k != "runtimes"} == {k: v for k, v in ADMIN.items() if k != "runtimes"}
    assert list(merged) == list(ADMIN)  # key order kept: the file reads as its owner wrote it
    assert ADMIN["runtimes"] == {"kata": {"path": "/opt/kata/bin/kata-runtime"}}  # the input is not changed
    assert action == "registered runsc (/usr/bin/runsc, --network=none) in daemon.json"
    assert with_runsc({}, "/usr/bin/runsc")[0] == {"runtimes": {"runsc": runsc_entry("/usr/bin/runsc")}}


def test_the_merge_is_idempotent_and_keeps_an_existing_runsc_entry() -> None:
    once, _ = with_runsc(ADMIN, "/usr/bin/runsc")
    twice, action = with_runsc(once, "/usr/bin/runsc")
    assert twice == once and action == "runsc already registered in daemon.json"
    theirs = {"runtimes": {"runsc": {"path": "/usr/local/bin/runsc", "runtimeArgs": ["--platform=kvm"]}}}
    kept, action = with_runsc(theirs, "/usr/bin/runsc")
    assert kept == theirs and action.startswith("kept the existing runsc entry in daemon.json")


@pytest.mark.parametrize("runtimes", [[], "runsc", None, 3])
def test_runtimes_that_is_not_an_object_is_refused(runtimes: object) -> None:
    with pytest.raises(EngineError, match="'runtimes' is not a JSON object") as refused:
        with_runsc({"runtimes": runtimes}, "/usr/bin/runsc")
    assert "scripts/ensure-engine" in refused.value.hint


def test_the_file_is_created_merged_in_place_and_written_only_when_it_changes(tmp_path: Path) -> None:
    created = tmp_path / "etc" / "docker" / "daemon.json"
    assert register_runsc("/usr/bin/runsc", created) == (
        True,
        f"registered runsc (/usr/bin/runsc, --network=none) in {created}",
    )
    assert json.loads(created.read_text()) == {"runtimes": {"runsc": runsc_entry("/usr/bin/runsc")}}
    assert oct(created.stat().st_mode & 0o777) == "0o644"

    existing = tmp_path / "daemon.json"
    existing.write_text(json.dumps(ADMIN))
    existing.chmod(0o600)
    changed, _ = register_runsc("/usr/bin/runsc", existing)
    assert changed and json.loads(existing.read_text()) == with_runsc(ADMIN, "/usr/bin/runsc")[0]
    assert oct(existing.stat().st_mode & 0o777) == "0o600"
    before = existing.stat().st_mtime_ns, existing.stat().st_ino
    assert register_runsc("/usr/bin/runsc", existing) == (False, f"runsc already registered in {existing}")
    assert (existing.stat().st_mtime_ns, existing.stat().st_ino) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["daemon.json", "etc"]  # no staging file left behind


@pytest.mark.parametrize(
    ("content", "problem"),
    [("{not json", "is not valid JSON (line 1, column 2"), ("[1, 2]", "holds no JSON object"), ("\xff", "cannot read")],
)
def test_a_file_that_is_not_a_json_object_is_left_untouched(tmp_path: Path, content: str, problem: str) -> None:
    path = tmp_path / "daemon.json"
    if content == "\xff":
        path.write_bytes(b"\xff\xfe")
    else:
        path.write_text(content)
    before = path.read_bytes()
    with pytest.raises(EngineError, match=problem.replace("(", r"\(")):
        register_runsc("/usr/bin/runsc", path)
    assert path.read_bytes() == before


def test_reload_sends_sighup_and_waits_until_the_runtime_is_listed(tmp_path: Path) -> None:
    # A stand-in daemon: a real process that "reloads" (writes its runtimes) when it gets SIGHUP.
    listed = tmp_path / "runtimes"
    script = (
        "import signal, sys, time, pathlib\n"
        "p = pathlib.Path(sys.argv[1])\n"
        "signal.signal(signal.SIGHUP, lambda *_: p.write_text('runc runsc'))\n"
        "p.write_text('runc')\n"
        "time.sleep(60)\n"
    )
    daemon = subprocess.Popen([sys.executable, "-c", script, str(listed)])
    try:
        deadline = time.monotonic() + 10
        while not listed.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert listed.read_text() == "runc"
        said = reload_dockerd(daemon.pid, lambda: listed.read_text().split(), wait_seconds=10)
        assert said == f"reloaded dockerd (pid {daemon.pid}, SIGHUP): runsc available"
        assert listed.read_text() == "runc runsc" and daemon.poll() is None
    finally:
        daemon.kill()
        daemon.wait()


def test_a_reload_that_never_lists_runsc_is_an_error(tmp_path: Path) -> None:
    sleeper = subprocess.Popen(
        [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGHUP, signal.SIG_IGN); time.sleep(60)"]
    )
    try:
        time.sleep(0.3)  # let it install its SIGHUP handler
        with pytest.raises(EngineError, match="does not list runsc after 0 s"):
            reload_dockerd(sleeper.pid, lambda: ["runc"], wait_seconds=0.3)
        # With two runtimes to wait for, the one still missing is named.
        with pytest.raises(EngineError, match="does not list runsc-trixie after 0 s"):
            reload_dockerd(sleeper.pid, lambda: ["runc", "runsc"], names=("runsc", "runsc-trixie"), wait_seconds=0.3)
        assert sleeper.poll() is None
    finally:
        os.kill(sleeper.pid, signal.SIGKILL)
        sleeper.wait()


def _fake_runsc(tmp_path: Path, *, trixie: bool = False) -> dict[str, str]:
    """A PATH holding a runsc, and a host-tools prefix holding trixie's runsc only when asked."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "runsc").write_text("#!/bin/sh\n")
    (bin_dir / "runsc").chmod(0o755)
    tools = tmp_path / "host-tools"
    if trixie:
        placed = tools / "runsc-trixie" / "bin" / "runsc"
        placed.parent.mkdir(parents=True)
        placed.write_text("#!/bin/sh\n")
        placed.chmod(0o755)
    return {"PATH": str(bin_dir), "TERMINAI_HOST_TOOLS": str(tools)}


def test_the_newer_runsc_is_found_only_where_the_host_tools_script_places_it(tmp_path: Path) -> None:
    env = _fake_runsc(tmp_path)
    assert newer_runsc(env) is None  # Debian 12's runsc on PATH does not count
    placed = Path(env["TERMINAI_HOST_TOOLS"]) / "runsc-trixie" / "bin" / "runsc"
    placed.parent.mkdir(parents=True)
    placed.write_text("#!/bin/sh\n")
    assert newer_runsc(env) is None  # not executable
    placed.chmod(0o755)
    assert newer_runsc(env) == str(placed)
    assert newer_runsc({"TERMINAI_HOST_TOOLS": str(tmp_path / "elsewhere")}) is None


def test_the_newer_runsc_gets_an_entry_of_its_own_and_runsc_is_left_alone() -> None:
    newer = "/opt/terminai-host-tools/runsc-trixie/bin/runsc"
    once, _ = with_runsc(ADMIN, "/usr/bin/runsc")
    merged, action = with_runsc(once, newer, name="runsc-trixie")
    assert merged["runtimes"] == {
        "kata": {"path": "/opt/kata/bin/kata-runtime"},
        "runsc": runsc_entry("/usr/bin/runsc"),
        "runsc-trixie": runsc_entry(newer),
    }
    assert action == f"registered runsc-trixie ({newer}, --network=none) in daemon.json"
    assert with_runsc(merged, newer, name="runsc-trixie") == (merged, "runsc-trixie already registered in daemon.json")


@pytest.mark.skipif(os.geteuid() != 0, reason="registering needs root, as on the CI machine")
def test_the_bootstrap_registers_trixies_runsc_beside_runsc_and_reloads_until_both_are_listed(tmp_path: Path) -> None:
    env, daemon_json = _fake_runsc(tmp_path, trixie=True), tmp_path / "daemon.json"
    # The daemon lists runsc already (an earlier bootstrap) but not the newer runtime until it reloads.
    listed = [
        ["runc", "runsc"],
        ["runc", "runsc"],
        ["runc", "runsc"],
        ["runc", "runsc", "runsc-egress", "runsc-trixie"],
    ]
    sleeper = subprocess.Popen(
        [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGHUP, signal.SIG_IGN); time.sleep(60)"]
    )
    try:
        time.sleep(0.3)  # let it install its SIGHUP handler
        done = ensure_runsc(
            env, lambda: ["answering"], lambda: listed.pop(0) if len(listed) > 1 else listed[0],
            dockerd_pid=lambda: sleeper.pid, path=daemon_json,
        )  # fmt: skip
        assert sleeper.poll() is None
    finally:
        sleeper.kill()
        sleeper.wait()
    runsc, newer = str(tmp_path / "bin" / "runsc"), str(tmp_path / "host-tools" / "runsc-trixie" / "bin" / "runsc")
    assert json.loads(daemon_json.read_text()) == {
        "runtimes": {
            "runsc": runsc_entry(runsc),
            "runsc-egress": runsc_entry(runsc, ("--network=none", "--host-uds=open")),
            "runsc-trixie": runsc_entry(newer),
        }
    }
    assert done == [
        f"registered runsc ({runsc}, --network=none) in {daemon_json}",
        f"registered runsc-egress ({runsc}, --network=none --host-uds=open) in {daemon_json}",
        f"registered runsc-trixie ({newer}, --network=none) in {daemon_json}",
        "answering",
        f"reloaded dockerd (pid {sleeper.pid}, SIGHUP): runsc, runsc-egress, runsc-trixie available",
    ]


@pytest.mark.skipif(os.geteuid() != 0, reason="registering needs root, as on the CI machine")
def test_the_bootstrap_registers_before_starting_and_reloads_a_daemon_that_does_not_list_runsc(tmp_path: Path) -> None:
    env, daemon_json = _fake_runsc(tmp_path), tmp_path / "daemon.json"
    listed = [["runc"], ["runc"], ["runc", "runsc", "runsc-egress"]]
    seen: list[str] = []

    def start() -> list[str]:
        seen.append(daemon_json.read_text())  # the file is merged before dockerd is (re)started
        return ["docker 20.10 already answering at unix:///var/run/docker.sock"]

    sleeper = subprocess.Popen(
        [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGHUP, signal.SIG_IGN); time.sleep(60)"]
    )
    try:
        time.sleep(0.3)  # let it install its SIGHUP handler
        done = ensure_runsc(
            env, start, lambda: listed.pop(0) if len(listed) > 1 else listed[0], dockerd_pid=lambda: sleeper.pid,
            path=daemon_json,
        )  # fmt: skip
        assert sleeper.poll() is None
    finally:
        sleeper.kill()
        sleeper.wait()
    runsc = str(tmp_path / "bin" / "runsc")
    egress = runsc_entry(runsc, ("--network=none", "--host-uds=open"))
    assert json.loads(seen[0]) == {"runtimes": {"runsc": runsc_entry(runsc), "runsc-egress": egress}}
    assert done == [
        f"registered runsc ({runsc}, --network=none) in {daemon_json}",
        f"registered runsc-egress ({runsc}, --network=none --host-uds=open) in {daemon_json}",
        "docker 20.10 already answering at unix:///var/run/docker.sock",
        f"reloaded dockerd (pid {sleeper.pid}, SIGHUP): runsc, runsc-egress available",
    ]


def test_the_bootstrap_registers_nothing_for_another_engine_or_without_runsc(tmp_path: Path) -> None:
    daemon_json = tmp_path / "daemon.json"

    def never() -> list[str]:
        raise AssertionError("the runtimes are not asked when nothing was registered")

    elsewhere = {**_fake_runsc(tmp_path), "DOCKER_HOST": "tcp://10.0.0.1:2375"}
    done = ensure_runsc(elsewhere, lambda: ["started"], never, dockerd_pid=lambda: None, path=daemon_json)
    assert done[0] == "started" and done[1].startswith("gVisor not registered: DOCKER_HOST=tcp://10.0.0.1:2375")
    done = ensure_runsc(
        {"PATH": str(tmp_path / "empty")}, lambda: [], never, dockerd_pid=lambda: None, path=daemon_json
    )
    assert done == ["gVisor not registered: runsc is not installed (scripts/ensure-host-tools installs it)"]
    assert not daemon_json.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="registering needs root, as on the CI machine")
def test_a_daemon_without_runsc_whose_pid_is_unknown_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(EngineError, match="its pid is unknown") as refused:
        ensure_runsc(
            _fake_runsc(tmp_path), lambda: [], lambda: ["runc"], dockerd_pid=lambda: None,
            path=tmp_path / "daemon.json",
        )  # fmt: skip
    assert "kill -HUP" in refused.value.hint
