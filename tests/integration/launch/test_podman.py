"""The launcher on podman: a verified, signed image pulled by digest into podman's storage and run hardened.

Podman is a required host tool (``scripts/ensure-host-tools`` installs it with catatonit
for ``--init``); a missing podman fails these tests, it never skips them. Preflight and the
session use the podman CLI, so the image is checked in the same storage it runs from.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from terminai_sandbox.artifacts.contract import Contract
from terminai_sandbox.assemble import BuildResult
from terminai_sandbox.engine.podman import cgroups_v2

from tests.fixtures.launcher import InstalledLauncher
from tests.fixtures.registry import RegistryServer, podman_forget
from tests.integration.launch.test_launch import Site, _relabel

# A contract major this launcher cannot serve (the next one).
FUTURE = f"{int(Contract.shipped().version.split('.')[0]) + 1}.0.0"

PODMAN = {"TERMINAI_SANDBOX": "podman"}


def _podman(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["podman", *args], capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture()
def podman_site(registry: RegistryServer, tmp_path: Path, built_image: BuildResult) -> Iterator[Site]:
    assert shutil.which("podman"), "podman is not installed: run 'make host-tools' (scripts/ensure-host-tools)"
    assert shutil.which("catatonit") or Path("/usr/libexec/podman/catatonit").exists(), "catatonit is missing"
    os.chmod(tmp_path, 0o755)
    yield Site(registry, tmp_path)
    podman_forget(registry.host)  # leave podman's storage as it was


@pytest.mark.parametrize("runtime", ["runc", "runsc"])
def test_podman_runs_the_verified_image_hardened(podman_site: Site, built_image: BuildResult, runtime: str) -> None:
    site = podman_site
    digest = site.push(built_image.oci_layout.root, "0.1.0")
    holder: dict[str, subprocess.CompletedProcess[str]] = {}
    env = {**PODMAN, "TERMINAI_SANDBOX_RUNTIME": runtime}
    thread = threading.Thread(
        target=lambda: holder.setdefault(
            "r", site.cli("run", "--image", site.ref("0.1.0"), "--key", str(site.pub), "--", "sleep", "30", env=env)
        )
    )
    thread.start()
    try:
        # Both runtimes' rows may run at once in two workers, with the same digest: this launch's
        # session is the one that mounts this site's working directory.
        container: dict[str, Any] = {}
        deadline = time.monotonic() + 120
        while not container and time.monotonic() < deadline and thread.is_alive():
            found = _podman("ps", "--filter", f"label=dev.terminai.verified={digest}", "--format", "{{.ID}}").stdout
            for shown in json.loads(_podman("inspect", *found.split()).stdout or "[]") if found.split() else []:
                if any(m.get("Destination") == str(site.project) for m in shown.get("Mounts") or []):
                    container = shown
            time.sleep(0.2)
        assert container, f"the podman session did not start: {holder.get('r')}"
        host = container["HostConfig"]
        assert host["ReadonlyRootfs"] is True and host["CapAdd"] == [] and "CAP_SETUID" in host["CapDrop"]
        assert "no-new-privileges" in host["SecurityOpt"] and host["NetworkMode"] == "none"
        assert host["AutoRemove"] is True and host["Init"] is True
        assert host["PidsLimit"] == 512 and host["Memory"] == 2 * 1024**3 and host["NanoCpus"] == 2 * 10**9
        assert {"/tmp", "/home/sandbox"} <= set(host["Tmpfs"])
        assert "mode=0700" in host["Tmpfs"]["/home/sandbox"]
        assert {u["Name"] for u in host["Ulimits"]} >= {"RLIMIT_NOFILE", "RLIMIT_NPROC"}
        expected_user = "10001:10001" if os.getuid() == 0 else f"{os.getuid()}:{os.getgid()}"
        assert container["Config"]["User"] == expected_user
        assert container["ImageDigest"] == digest and container["ImageName"].endswith(f"@{digest}")
        assert any(e.startswith("SANDBOX=terminai-") for e in container["Config"]["Env"])
        assert (container["OCIRuntime"] == "/usr/bin/runsc") == (runtime == "runsc"), container["OCIRuntime"]
        # From inside: which kernel answers, and that the session holds no capability.
        inside = _podman("exec", container["Id"], "sh", "-c", "dmesg 2>&1 | head -1; grep CapEff /proc/self/status")
        assert "CapEff:\t0000000000000000" in inside.stdout, inside.stderr
        assert ("Starting gVisor" in inside.stdout) == (runtime == "runsc"), inside.stdout
        _podman("kill", container["Id"])
    finally:
        thread.join(timeout=120)
    result = holder["r"]
    assert "1. engine: podman" in result.stderr, result.stderr
    # The other runtime's row, in another worker, may have pulled the same digest first.
    assert re.search(r"4\. image by digest: (pulled by the verified digest|present) ", result.stderr), result.stderr
    label = "runsc (gVisor)" if runtime == "runsc" else "runc (the engine's default"
    assert f"; runtime {label}" in result.stderr, result.stderr
    ledger = site.home / ".local" / "state" / "terminai-sandbox" / "audit.jsonl"
    runs = [json.loads(line) for line in ledger.read_text().splitlines() if '"event": "run"' in line]
    assert runs[-1]["runtime"] == runtime
    flags = ["--runtime", "/usr/bin/runsc", "--runtime-flag", "network=none"]
    assert (" ".join(flags) in " ".join(runs[-1]["argv"])) == (runtime == "runsc")
    # The image reached podman's storage by digest (and only through preflight).
    assert _podman("image", "exists", f"{site.ref('0.1.0').rsplit(':', 1)[0]}@{digest}").returncode == 0


def test_podman_passes_output_and_exit_code_through(podman_site: Site, built_image: BuildResult) -> None:
    site = podman_site
    site.push(built_image.oci_layout.root, "0.1.0")
    script = "echo out; echo err >&2; grep CapEff /proc/self/status; touch $HOME/ok; exit 7"
    result = site.cli("run", "--image", site.ref("0.1.0"), "--key", str(site.pub), "--", "sh", "-c", script, env=PODMAN)
    assert result.returncode == 7, result.stderr
    assert result.stdout.splitlines()[0] == "out" and "err" in result.stderr
    assert "CapEff:\t0000000000000000" in result.stdout  # no capabilities at all
    # The second launch hits the verification cache; every step still runs and is audited.
    again = site.cli("run", "--image", site.ref("0.1.0"), "--key", str(site.pub), "--", "true", env=PODMAN)
    assert again.returncode == 0 and "verified earlier for this digest" in again.stderr
    assert "4. image by digest: present" in again.stderr
    ledger = site.home / ".local" / "state" / "terminai-sandbox" / "audit.jsonl"
    events = [json.loads(line) for line in ledger.read_text().splitlines()]
    assert [e["code"] for e in events if e["event"] == "exit"] == [7, 0]
    assert sum(1 for e in events if e["event"] == "preflight-step") == 16
    assert all(e["argv"][0].endswith("podman") for e in events if e["event"] == "run")


def test_podman_refuses_what_docker_refuses(podman_site: Site, built_image: BuildResult, tmp_path: Path) -> None:
    site = podman_site
    site.push(built_image.oci_layout.root, "0.1.0", sign=False, repo="unsigned/sandbox")
    unsigned = site.cli(
        "run",
        "--image",
        site.ref("0.1.0", "unsigned/sandbox"),
        "--key",
        str(site.pub),
        "--",
        "sh",
        "-c",
        "echo COMMAND-RAN",
        env=PODMAN,
    )
    assert unsigned.returncode == 11 and "no signature found" in unsigned.stderr
    assert "COMMAND-RAN" not in unsigned.stdout
    future = _relabel(built_image.oci_layout.root, tmp_path / "future", {"dev.terminai.contract.version": FUTURE})
    site.push(future, f"{FUTURE}-future")
    refused = site.cli("run", "--image", site.ref(f"{FUTURE}-future"), "--key", str(site.pub), "--", "true", env=PODMAN)
    assert refused.returncode == 13 and "major differs" in refused.stderr
    site.push(built_image.oci_layout.root, "0.1.0")
    deep = site.cli("preflight", "--deep", "--image", site.ref("0.1.0"), "--key", str(site.pub), env=PODMAN)
    assert deep.returncode == 13 and "--deep runs the contract suite through the Docker API" in deep.stderr


@dataclass(frozen=True)
class _User:
    name: str
    uid: int
    gid: int
    home: Path


def _has_subids(name: str) -> bool:
    def listed(path: str) -> bool:
        return any(line.startswith(f"{name}:") for line in Path(path).read_text().splitlines())

    return listed("/etc/subuid") and listed("/etc/subgid")


def _native_overlay(home: Path, uid: int, gid: int) -> None:
    """Give the throwaway user the storage a rootless podman user normally has: overlay.

    Without fuse-overlayfs (Debian's podman only recommends it), podman 4.3 falls back to
    vfs, which copies the whole image for every container and re-owns every file for
    ``--userns=keep-id``: 15 s a launch here, all of it in podman's storage. Kernels from
    5.13 mount overlay inside a user namespace, so podman is told to use that instead.
    """
    if tuple(int(n) for n in re.findall(r"\d+", os.uname().release)[:2]) < (5, 13):
        return
    conf = home / ".config" / "containers"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "storage.conf").write_text('[storage]\ndriver = "overlay"\n')
    for path in (home / ".config", conf, conf / "storage.conf"):
        os.chown(path, uid, gid)


@pytest.fixture()
def rootless_user() -> Iterator[_User]:
    """An unprivileged user with subordinate id ranges: rootless podman's requirements.

    As root, a throwaway user is created and removed with its home and processes (podman
    leaves a pause process per user). As anyone else, the tests run as that user, who
    needs ranges in /etc/subuid and /etc/subgid.
    """
    if os.geteuid() != 0:
        me = pwd.getpwuid(os.getuid())
        assert _has_subids(me.pw_name), f"rootless podman needs /etc/subuid and /etc/subgid ranges for {me.pw_name}"
        yield _User(me.pw_name, me.pw_uid, me.pw_gid, Path(me.pw_dir))
        return
    name = f"terminai-rl{os.getpid() % 100000}"
    home = Path(tempfile.mkdtemp(prefix="terminai-rootless-"))
    home.rmdir()
    subprocess.run(["useradd", "--create-home", "--home-dir", str(home), "--user-group", name], check=True)
    try:
        if not _has_subids(name):  # useradd adds ranges itself when login.defs asks for them
            start = 1_000_000 + os.getpid() % 1000 * 65536
            ids = f"{start}-{start + 65535}"
            subprocess.run(["usermod", "--add-subuids", ids, "--add-subgids", ids, name], check=True)
        entry = pwd.getpwnam(name)
        _native_overlay(home, entry.pw_uid, entry.pw_gid)
        yield _User(name, entry.pw_uid, entry.pw_gid, home)
    finally:
        deadline = time.monotonic() + 30
        while subprocess.run(["pkill", "-KILL", "-u", name], check=False).returncode == 0:
            assert time.monotonic() < deadline, f"processes of {name} survive SIGKILL"
            time.sleep(0.1)
        subprocess.run(["userdel", "--remove", name], check=False, capture_output=True)
        shutil.rmtree(home, ignore_errors=True)


def test_rootless_podman_keeps_the_host_identity(
    rootless_user: _User, registry: RegistryServer, built_image: BuildResult, installed_launcher: InstalledLauncher
) -> None:
    user = rootless_user
    shared = Path(tempfile.mkdtemp(prefix="terminai-rootless-site-"))
    try:
        shared.chmod(0o755)
        site = Site(registry, shared)
        site.pub.chmod(0o644)
        site.push(built_image.oci_layout.root, "0.1.0")
        project = site.project
        os.chown(project, user.uid, user.gid)
        runtime = shared / "runtime"
        runtime.mkdir(mode=0o700)
        os.chown(runtime, user.uid, user.gid)
        env = {"HOME": str(user.home), "USER": user.name, "LOGNAME": user.name, "XDG_RUNTIME_DIR": str(runtime)}
        command = "id -u; id -g; pwd; touch made-in-the-session"
        as_root = os.geteuid() == 0  # else the test already runs as that user
        result = site.cli(
            *("run", "--image", site.ref("0.1.0"), "--key", str(site.pub), "--", "sh", "-c", command),
            env={**env, **PODMAN},
            cwd=project,
            user=user.uid if as_root else None,
            group=user.gid if as_root else None,
            # The user may not read the checkout (a clone in a 0700 home): the installed launcher it can.
            cli=installed_launcher.cli,
        )
        assert result.returncode == 0, result.stderr
        assert "1. engine: podman" in result.stderr and "rootless" in result.stderr
        if not cgroups_v2():
            assert "NOT enforced: rootless podman on cgroups v1" in result.stderr
        # Inside, the session is the host user (--userns=keep-id), in the same working directory ...
        assert result.stdout.split() == [str(user.uid), str(user.gid), str(project)]
        # ... so what it writes in the mounted project belongs to that user on the host.
        made = (project / "made-in-the-session").stat()
        assert (made.st_uid, made.st_gid) == (user.uid, user.gid)
        ledger = user.home / ".local" / "state" / "terminai-sandbox" / "audit.jsonl"
        runs = [json.loads(line) for line in ledger.read_text().splitlines() if '"event": "run"' in line]
        assert "--userns=keep-id" in runs[-1]["argv"] and f"{user.uid}:{user.gid}" in runs[-1]["argv"]
    finally:
        shutil.rmtree(shared, ignore_errors=True)
