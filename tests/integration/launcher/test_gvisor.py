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
from terminai_sandbox.assemble import BuildResult, repo_root
from terminai_sandbox.contracts import run_contracts
from terminai_sandbox.daemon_config import DAEMON_JSON, runsc_entry
from terminai_sandbox.engine import Engine

from tests.fixtures.registry import RegistryServer
from tests.integration.launcher.test_launch import Site

ROOT = repo_root()
HARDENED = {
    "network_mode": "none",
    "read_only": True,
    "tmpfs": {"/tmp": "rw,size=64m"},
    "cap_drop": ["ALL"],
    "security_opt": ["no-new-privileges"],
}


def test_the_engine_bootstrap_registers_runsc_and_keeps_dockerds_configuration(engine: Engine) -> None:
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
    assert {k: v for k, v in after.items() if k != "runtimes"} == {k: v for k, v in before.items() if k != "runtimes"}
    assert {k: v for k, v in after["runtimes"].items() if k != "runsc"} == {
        k: v for k, v in before.get("runtimes", {}).items() if k != "runsc"
    }
    assert after["runtimes"]["runsc"] == before.get("runtimes", {}).get("runsc", runsc_entry("/usr/bin/runsc"))
    assert "runsc" in engine.runtimes()
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
    assert json.loads(DAEMON_JSON.read_text()) == after


def test_the_contract_suite_passes_under_gvisor(engine: Engine, built_image: BuildResult, tmp_path: Path) -> None:
    report = run_contracts(engine, built_image.config_digest, runtime="runsc", output_dir=tmp_path)
    assert report.passed and not report.failed


def test_the_session_kernel_is_gvisors_and_hardening_holds_inside(engine: Engine, built_image: BuildResult) -> None:
    script = (
        "dmesg | head -1; uname -r; id -u; grep CapEff /proc/self/status; "
        "grep ' / ' /proc/self/mounts; python3 -c 'import socket; socket.create_connection((\"1.1.1.1\", 53), 2)' 2>&1"
        " | tail -1"
    )
    code, out, _ = engine.run(built_image.config_digest, ["sh", "-c", script], runtime="runsc", **HARDENED)
    text = out.decode()
    assert code == 0, text
    lines = text.splitlines()
    assert lines[0].endswith("Starting gVisor...") and lines[1] != os.uname().release  # not the host's kernel
    assert lines[2] == "10001" and "CapEff:\t0000000000000000" in text
    root = next(line.split() for line in lines if line.split()[1:2] == ["/"])
    assert "ro" in root[3].split(","), root  # gVisor mounts the image read-only
    assert lines[-1].startswith("OSError: [Errno 113]"), lines[-1]  # no network stack: no route anywhere


def test_the_executor_fails_closed_under_this_gvisor(engine: Engine, built_image: BuildResult) -> None:
    """Debian 12's runsc (20221219) lacks seccomp(SECCOMP_GET_ACTION_AVAIL), so libseccomp reports API level 2
    and refuses SECCOMP_RET_KILL_PROCESS: the executor cannot build its system-call filter and runs nothing."""
    probe = (
        "import ctypes; lib = ctypes.CDLL('libseccomp.so.2'); print('api', lib.seccomp_api_get())\n"
        "from terminai_apts.errors import ExecutorError\n"
        "from terminai_apts.executor import isolation\n"
        "try:\n    isolation.prepare()\nexcept ExecutorError as exc:\n    print('refused', exc.message)\n"
        "else:\n    print('prepared')\n"
    )
    runs = {}
    for runtime in ("runc", "runsc"):
        code, out, _ = engine.run(built_image.config_digest, ["python3", "-c", probe], runtime=runtime, **HARDENED)
        runs[runtime] = out.decode().splitlines()
        assert code == 0, runs
    assert runs["runc"][1] == "prepared" and int(runs["runc"][0].split()[1]) >= 3
    assert runs["runsc"] == ["api 2", "refused libseccomp could not set the bad-arch action (Invalid argument)"]
    marker = "print('RAN-' + 'INSIDE')"
    code, out, err = engine.run(
        built_image.config_digest,
        ["sh", "-c", 'printf "%s" "$CODE" | terminai-apts exec --json'],
        environment={"CODE": marker},
        runtime="runsc",
        **HARDENED,
    )
    assert code != 0 and b"RAN-INSIDE" not in out + err
    assert b"the executor zygote is not running" in err


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
