"""gVisor (runsc) as the session's runtime, on the real engine: bootstrap, contracts, executor, refusals.

The hardening of a runsc session as ``docker/podman inspect`` and the session itself see
it is checked by the runtime-parametrized tests in ``test_launch.py`` and ``test_podman.py``;
the executor's attack suite under runsc is in ``tests/integration/executor``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import docker
import pytest
from terminai_sandbox.assemble import BuildResult, repo_root
from terminai_sandbox.contracts import run_contracts
from terminai_sandbox.engine.client import DockerApi
from terminai_sandbox.engine.runtime import EGRESS_RUNSC_ARGS
from terminai_sandbox_dev.daemon_config import DAEMON_JSON, newer_runsc, runsc_entry

from tests.fixtures.registry import RegistryServer
from tests.integration.launch.test_launch import Site

ROOT = repo_root()
HARDENED = {
    "network_mode": "none",
    "read_only": True,
    "tmpfs": {"/tmp": "rw,size=64m"},
    "cap_drop": ["ALL"],
    "security_opt": ["no-new-privileges"],
}
# Both gVisor runtimes: Debian 12's runsc (20221219) and trixie's (20240729, registered as runsc-trixie).
GVISOR = ("runsc", "runsc-trixie")


def test_the_engine_bootstrap_registers_runsc_and_keeps_dockerds_configuration(engine: DockerApi) -> None:
    # The real script against the real (shared) dockerd: idempotent, so it may run on every CI start.
    before = json.loads(DAEMON_JSON.read_text()) if DAEMON_JSON.exists() else {}
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "ensure-engine")],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "runsc" in done.stdout and "already answering" in done.stdout, done.stdout
    after = json.loads(DAEMON_JSON.read_text())
    ours = ("runsc", "runsc-trixie", "runsc-egress")
    assert {k: v for k, v in after.items() if k != "runtimes"} == {k: v for k, v in before.items() if k != "runtimes"}
    assert {k: v for k, v in after["runtimes"].items() if k not in ours} == {
        k: v for k, v in before.get("runtimes", {}).items() if k not in ours
    }
    assert after["runtimes"]["runsc"] == before.get("runtimes", {}).get("runsc", runsc_entry("/usr/bin/runsc"))
    # A session with a network policy runs under runsc-egress: the same binary, and its proxy's socket allowed.
    egress = runsc_entry("/usr/bin/runsc", EGRESS_RUNSC_ARGS)
    assert after["runtimes"]["runsc-egress"] == before.get("runtimes", {}).get("runsc-egress", egress)
    assert "runsc" in engine.runtimes()
    # Where scripts/ensure-host-tools placed trixie's runsc, it is registered beside the host's.
    newer = newer_runsc(os.environ)
    assert newer is not None, "run scripts/ensure-host-tools: it places trixie's runsc the gVisor tests run"
    assert after["runtimes"]["runsc-trixie"] == before.get("runtimes", {}).get("runsc-trixie", runsc_entry(newer))
    assert "runsc-trixie" in engine.runtimes()
    # The engine client's answer is dockerd's, as a client we did not write reads it.
    assert engine.runtimes() == sorted(docker.from_env().info()["Runtimes"])
    again = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "ensure-engine")],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert again.returncode == 0 and "SIGHUP" not in again.stdout and "registered runsc" not in again.stdout
    assert "runsc-trixie already registered" in again.stdout
    assert json.loads(DAEMON_JSON.read_text()) == after


@pytest.mark.parametrize("runtime", GVISOR)
def test_the_contract_suite_passes_under_gvisor(
    engine: DockerApi, built_image: BuildResult, tmp_path: Path, runtime: str
) -> None:
    report = run_contracts(engine, built_image.config_digest, runtime=runtime, output_dir=tmp_path)
    assert report.passed and not report.failed


@pytest.mark.parametrize("runtime", GVISOR)
def test_the_session_kernel_is_gvisors_and_hardening_holds_inside(
    engine: DockerApi, built_image: BuildResult, runtime: str
) -> None:
    script = (
        "dmesg | head -1; uname -r; id -u; grep CapEff /proc/self/status; "
        "grep ' / ' /proc/self/mounts; python3 -c 'import socket; socket.create_connection((\"1.1.1.1\", 53), 2)' 2>&1"
        " | tail -1"
    )
    code, out, _ = engine.run(built_image.config_digest, ["sh", "-c", script], runtime=runtime, **HARDENED)
    text = out.decode()
    assert code == 0, text
    lines = text.splitlines()
    assert lines[0].endswith("Starting gVisor...") and lines[1] != os.uname().release  # not the host's kernel
    assert lines[2] == "10001" and "CapEff:\t0000000000000000" in text
    root = next(line.split() for line in lines if line.split()[1:2] == ["/"])
    assert "ro" in root[3].split(","), root  # gVisor mounts the image read-only
    assert lines[-1].startswith("OSError: [Errno 113]"), lines[-1]  # no network stack: no route anywhere


@pytest.mark.parametrize("runtime", GVISOR)
def test_the_executor_fails_closed_under_gvisor(engine: DockerApi, built_image: BuildResult, runtime: str) -> None:
    """Neither runsc release implements seccomp(SECCOMP_GET_ACTION_AVAIL), so libseccomp reports API level 2
    and refuses SECCOMP_RET_KILL_PROCESS: the executor cannot build its system-call filter and runs nothing."""
    probe = (
        "import ctypes; lib = ctypes.CDLL('libseccomp.so.2'); print('api', lib.seccomp_api_get())\n"
        "from terminai_apts.errors import ExecutorError\n"
        "from terminai_apts.executor.os_layer import isolation\n"
        "try:\n    isolation.prepare()\nexcept ExecutorError as exc:\n    print('refused', exc.message)\n"
        "else:\n    print('prepared')\n"
    )
    runs = {}
    for name in ("runc", runtime):
        code, out, _ = engine.run(built_image.config_digest, ["python3", "-c", probe], runtime=name, **HARDENED)
        runs[name] = out.decode().splitlines()
        assert code == 0, runs
    assert runs["runc"][1] == "prepared" and int(runs["runc"][0].split()[1]) >= 3
    assert runs[runtime] == ["api 2", "refused libseccomp could not set the bad-arch action (Invalid argument)"]
    marker = "print('RAN-' + 'INSIDE')"
    code, out, err = engine.run(
        built_image.config_digest,
        ["sh", "-c", 'printf "%s" "$CODE" | terminai-apts exec --json'],
        environment={"CODE": marker},
        runtime=runtime,
        **HARDENED,
    )
    assert code != 0 and b"RAN-INSIDE" not in out + err
    assert b"the executor zygote is not running" in err


# What the executor's OS layer (docs/SECURITY.md, layer 6) asks of the kernel, asked directly, as the
# image user in a hardened session: the seccomp operations and filter flags libseccomp probes, whether a
# filter's KILL_PROCESS ends the whole process, Landlock, the run's namespaces (with the setgroups file,
# and the UTS names set the way namespaces.py sets them), the mounts rootfs.py builds the run's root with,
# and the rlimit limits.py lowers. Values: "ok" or the errno name; a forked probe that died prints null.
OS_LAYER_PROBE = r"""
import ctypes, errno, json, os, resource, struct, threading, time
libc = ctypes.CDLL(None, use_errno=True)
out = {}
def res(rc):
    return "ok" if rc >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")
out["libseccomp-api"] = ctypes.CDLL("libseccomp.so.2").seccomp_api_get()
action = ctypes.c_uint32(0x80000000)
out["action-avail"] = res(libc.syscall(317, 2, 0, ctypes.byref(action)))
out["flag-log"] = res(libc.syscall(317, 1, 2, None))
out["landlock"] = res(libc.syscall(444, None, 0, 1))
def forked(fn):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            value = fn()
        except OSError as exc:
            value = errno.errorcode.get(exc.errno, str(exc))
        os.write(w, json.dumps(value).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.waitpid(pid, 0)
    return json.loads(data or b"null")
def kill_process():
    # A classic BPF filter: load the call number; getppid (110) -> KILL_PROCESS; anything else -> ALLOW.
    ins = lambda code, k, jt=0, jf=0: struct.pack("HBBI", code, jt, jf, k)
    filter = ins(0x20, 0) + ins(0x15, 110, 0, 1) + ins(0x06, 0x80000000) + ins(0x06, 0x7FFF0000)
    prog = ctypes.create_string_buffer(filter)
    fprog = ctypes.create_string_buffer(struct.pack("HxxxxxxQ", 4, ctypes.addressof(prog)))
    libc.prctl(38, 1, 0, 0, 0)
    if libc.syscall(317, 1, 0, fprog) != 0:
        return res(-1)
    thread = threading.Thread(target=lambda: libc.syscall(110))
    thread.start()
    thread.join(2)
    return "process survives"
out["kill-process-from-a-thread"] = forked(kill_process)
def namespaces():
    found = {"unshare": res(libc.unshare(0x10000000 | 0x20000000 | 0x08000000 | 0x40000000 | 0x04000000))}
    found["setgroups-file"] = os.path.exists("/proc/self/setgroups")
    found["setdomainname"] = res(libc.setdomainname(b"sandbox", 7))
    found["setdomainname-with-nul"] = res(libc.setdomainname(b"sandbox", 8))
    found["sethostname"] = res(libc.sethostname(b"sandbox", 7))
    def mounts():
        done = {"unshare-mount": res(libc.unshare(0x00020000))}
        done["private"] = res(libc.mount(None, b"/", None, 0x4000 | 0x40000, None))
        done["tmpfs"] = res(libc.mount(b"tmpfs", b"/tmp", b"tmpfs", 0x2 | 0x4, b"size=1m,mode=0755"))
        done["tmpfs-nr-inodes"] = res(libc.mount(b"tmpfs", b"/tmp", b"tmpfs", 0x2 | 0x4, b"size=1m,nr_inodes=64"))
        os.makedirs("/tmp/lib", exist_ok=True)
        done["bind"] = res(libc.mount(b"/usr/lib", b"/tmp/lib", None, 0x1000, None))
        done["proc"] = res(libc.mount(b"proc", b"/proc", b"proc", 0x2 | 0x4 | 0x8, None))
        return done
    found.update(forked(mounts))
    return found
out.update(forked(namespaces))
def msgqueue():
    try:
        resource.setrlimit(resource.RLIMIT_MSGQUEUE, (0, 0))
    except ValueError as exc:
        return str(exc)
    return "ok"
out["rlimit-msgqueue"] = forked(msgqueue)
print(json.dumps(out, sort_keys=True))
"""
# Where the two releases answer alike: the guarantees that fail under both.
GVISOR_COMMON = {
    "libseccomp-api": 2,  # no SECCOMP_GET_ACTION_AVAIL, so libseccomp refuses KILL_PROCESS (API level 3)
    "action-avail": "EINVAL",
    "flag-log": "EINVAL",  # only SECCOMP_FILTER_FLAG_TSYNC is known
    "kill-process-from-a-thread": "process survives",  # KILL_PROCESS ends only the calling thread
    "landlock": "ENOSYS",  # no Landlock at all
    "unshare": "ok",  # user, PID, IPC, network and UTS namespaces are offered
    "unshare-mount": "ok",
    "setgroups-file": False,  # /proc/self/setgroups does not exist (namespaces.py writes it)
    "setdomainname": "ENAMETOOLONG",  # the name must carry its NUL within the length
    "setdomainname-with-nul": "ok",
    "sethostname": "ok",
    "rlimit-msgqueue": "not allowed to raise maximum limit",  # RLIMIT_MSGQUEUE cannot be lowered (EPERM)
}
GVISOR_RELEASES = {
    # 20221219: no mount at all in the run's user namespace, so no root of its own and no /proc of its own.
    "runsc": {"private": "EPERM", "tmpfs": "EPERM", "tmpfs-nr-inodes": "EPERM", "bind": "EPERM", "proc": "EPERM"},
    # 20240729: mounts work there, but tmpfs refuses the inode cap rootfs.py and the scratch tmpfs set.
    "runsc-trixie": {"private": "ok", "tmpfs": "ok", "tmpfs-nr-inodes": "EINVAL", "bind": "ok", "proc": "ok"},
}


def test_what_each_gvisor_release_offers_the_executors_os_layer(engine: DockerApi, built_image: BuildResult) -> None:
    found = {}
    for runtime in ("runc", *GVISOR):
        code, out, err = engine.run(
            built_image.config_digest, ["python3", "-c", OS_LAYER_PROBE], runtime=runtime, **HARDENED
        )
        assert code == 0, err
        found[runtime] = json.loads(out.decode().splitlines()[-1])
    # The shared kernel has every mechanism (Docker's default profile refuses the namespaces).
    runc = found["runc"]
    assert runc["libseccomp-api"] >= 3 and runc["action-avail"] == "ok" and runc["landlock"] == "ok", runc
    assert runc["kill-process-from-a-thread"] is None and runc["unshare"] == "EPERM", runc
    for runtime in GVISOR:
        assert found[runtime] == {**GVISOR_COMMON, **GVISOR_RELEASES[runtime]}, (runtime, found[runtime])


def test_podman_refuses_runsc_when_it_is_not_installed(
    registry: RegistryServer, tmp_path: Path, built_image: BuildResult
) -> None:
    os.chmod(tmp_path, 0o755)
    site = Site(registry, tmp_path)
    site.push(built_image.oci_layout.root, "0.1.0")
    # A PATH holding podman but not runsc: the session must not fall back to the shared kernel.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("podman",):
        (bin_dir / tool).symlink_to(f"/usr/bin/{tool}")
    env = {"TERMINAI_SANDBOX": "podman", "TERMINAI_SANDBOX_RUNTIME": "gvisor", "PATH": str(bin_dir)}
    result = site.cli("run", "--image", site.ref("0.1.0"), "--key", str(site.pub), "--", "echo", "RAN", env=env)
    assert result.returncode == 4, result.stderr
    assert "preflight step 1 (engine) refused: the sandbox runtime is runsc (gVisor) but runsc is not on PATH" in (
        result.stderr
    )
    assert "scripts/ensure-host-tools" in result.stderr and "RAN" not in result.stdout


def test_preflight_deep_runs_the_contract_suite_under_the_sessions_runtime(
    registry: RegistryServer, tmp_path: Path, built_image: BuildResult
) -> None:
    os.chmod(tmp_path, 0o755)
    site = Site(registry, tmp_path)
    site.push(built_image.oci_layout.root, "0.1.0")
    result = site.cli(
        "preflight", "--deep", "--runtime", "gvisor", "--image", site.ref("0.1.0"), "--key", str(site.pub)
    )
    assert result.returncode == 0, result.stderr
    assert "; runtime runsc (gVisor)" in result.stderr
    assert "6. health: contract suite passed inside the image under runsc" in result.stderr
