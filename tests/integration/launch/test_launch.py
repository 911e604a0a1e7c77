"""The launcher against the real engine and a real loopback registry: refusals and a hardened run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import docker
import pytest
from terminai_sandbox.artifacts.contract import Contract
from terminai_sandbox.artifacts.oci_layout import OciLayout
from terminai_sandbox.assemble import BuildOptions, BuildResult, build_image, repo_root
from terminai_sandbox.engine.client import DockerApi
from terminai_sandbox.registry import RegistryClient, sha256_digest
from terminai_sandbox.signing.formats import keys
from terminai_sandbox.signing.sign import sign as sign_image

from tests.fixtures.image import tapts_without_transit
from tests.fixtures.launcher import InstalledLauncher
from tests.fixtures.registry import RegistryServer
from tests.unit.launch.test_kernel_seal import forbidden, importtime_modules, outside_the_seal

# A contract major this launcher cannot serve (the next one).
FUTURE = f"{int(Contract.shipped().version.split('.')[0]) + 1}.0.0"

ROOT = repo_root()
CLI = str(Path(sys.executable).with_name("terminai-sandbox"))
NOW = "2026-11-21T12:00:00Z"
REPO = "terminai/sandbox"


class Site:
    def __init__(self, registry: RegistryServer, tmp: Path) -> None:
        self.registry, self.tmp = registry, tmp
        self.client = RegistryClient(registry.host)
        self.key = keys.generate()
        self.pub = tmp / "cosign.pub"
        self.pub.write_bytes(keys.public_pem(self.key))
        self.home = tmp / "home"
        self.home.mkdir()
        # The launches' working directory: outside the home, whose state and settings no session may write.
        self.project = tmp / "project"
        self.project.mkdir()

    def ref(self, tag: str, repo: str = REPO) -> str:
        return f"{self.registry.host}/{repo}:{tag}"

    def push(self, layout: Path, tag: str, *, sign: bool = True, repo: str = REPO) -> str:
        digest = self.client.push_layout(OciLayout.open(layout), repo, tag=tag).digest
        if sign:
            sign_image(self.client, repo, digest, self.key, docker_reference=f"{self.registry.host}/{repo}")
        return digest

    def launch(self, tag: str, *command: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return self.cli("run", "--image", self.ref(tag), "--key", str(self.pub), "--", *command, env=env)

    def cli(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        user: int | None = None,
        group: int | None = None,
        cli: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """The launcher's CLI (``cli``, default the checkout's), as ``user`` (and ``group``) when given.

        Another user may not read the checkout (a clone under a 0700 home): pass the
        installed launcher's ``cli`` (tests/fixtures/launcher.py) with ``user``.
        """
        full = {"PATH": os.environ["PATH"], "HOME": str(self.home), "TERMINAI_SANDBOX": "docker", **(env or {})}
        cmd = [str(cli or CLI), *args]
        if user is not None:
            cmd = ["setpriv", f"--reuid={user}", f"--regid={user if group is None else group}", "--clear-groups", *cmd]
        return subprocess.run(
            cmd, capture_output=True, text=True, env=full, cwd=cwd or self.project, timeout=300, check=False
        )


@pytest.fixture()
def site(registry: RegistryServer, tmp_path: Path, built_image: BuildResult) -> Site:
    os.chmod(tmp_path, 0o755)
    return Site(registry, tmp_path)


def _relabel(layout: Path, out: Path, labels: dict[str, str]) -> Path:
    """A copy of an OCI layout whose config carries other labels (same layers)."""
    return _reconfigure(layout, out, lambda config: config["Labels"].update(labels))


def _reconfigure(layout: Path, out: Path, edit: Callable[[dict[str, Any]], object]) -> Path:
    """A copy of an OCI layout whose image config ``edit`` changed (same layers)."""
    shutil.copytree(layout, out)
    blobs = out / "blobs" / "sha256"
    index = json.loads((out / "index.json").read_text())
    manifest = json.loads((blobs / index["manifests"][0]["digest"].removeprefix("sha256:")).read_text())
    config = json.loads((blobs / manifest["config"]["digest"].removeprefix("sha256:")).read_text())
    edit(config["config"])
    config_bytes = json.dumps(config, sort_keys=True, separators=(",", ":")).encode()
    (blobs / sha256_digest(config_bytes).removeprefix("sha256:")).write_bytes(config_bytes)
    manifest["config"].update(digest=sha256_digest(config_bytes), size=len(config_bytes))
    manifest_bytes = json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()
    (blobs / sha256_digest(manifest_bytes).removeprefix("sha256:")).write_bytes(manifest_bytes)
    index["manifests"][0].update(digest=sha256_digest(manifest_bytes), size=len(manifest_bytes))
    (out / "index.json").write_text(json.dumps(index))
    return out


def test_refusal_matrix(site: Site, built_image: BuildResult, tmp_path: Path) -> None:
    site.push(built_image.oci_layout.root, "0.1.0", sign=False, repo="unsigned/sandbox")
    cases = {
        "unsigned": (
            ["run", "--image", site.ref("0.1.0", "unsigned/sandbox"), "--key", str(site.pub), "--", "true"],
            {},
            11,
            "no signature found",
        ),
        "floating tag": (
            ["run", "--image", site.ref("latest"), "--key", str(site.pub), "--", "true"],
            {},
            13,
            "floating tag",
        ),
        "engine down": (
            ["run", "--image", site.ref("0.1.0"), "--key", str(site.pub), "--", "true"],
            {"DOCKER_HOST": f"unix://{tmp_path}/dead.sock"},
            4,
            "not running",
        ),
        "bad knob": (
            ["run", "--image", site.ref("0.1.0"), "--key", str(site.pub), "--", "true"],
            {"SANDBOX_MOUNTS": "/var/run/docker.sock"},
            3,
            "SANDBOX_MOUNTS item",
        ),
        "bad engine": (
            ["run", "--image", site.ref("0.1.0"), "--key", str(site.pub), "--", "true"],
            {"TERMINAI_SANDBOX": "lxc"},
            3,
            "not a sandbox engine",
        ),
        "dangerous flag": (
            ["run", "--image", site.ref("0.1.0"), "--key", str(site.pub), "--", "true"],
            {"SANDBOX_FLAGS": "--privileged"},
            3,
            "--privileged",
        ),
        "no policy": (["run", "--image", site.ref("0.1.0"), "--", "true"], {}, 3, "no verification policy"),
    }
    signed_digest = site.push(built_image.oci_layout.root, "0.1.0")
    other = keys.generate()
    (tmp_path / "other.pub").write_bytes(keys.public_pem(other))
    cases["wrong key"] = (
        ["run", "--image", site.ref("0.1.0"), "--key", str(tmp_path / "other.pub"), "--", "true"],
        {},
        11,
        "does not verify with any trusted key",
    )
    for name, (args, env, code, message) in cases.items():
        result = site.cli(*args, env=env)
        assert result.returncode == code, (name, result.stdout, result.stderr)
        assert message in result.stderr, (name, result.stderr)
    # The tag moves to another manifest after signing: the new digest has no signature.
    relabelled = _relabel(built_image.oci_layout.root, tmp_path / "moved", {"moved": "yes"})
    moved_digest = site.push(relabelled, "0.1.0", sign=False)
    assert moved_digest != signed_digest
    moved = site.cli("run", "--image", site.ref("0.1.0"), "--key", str(site.pub), "--", "true")
    assert moved.returncode == 11 and "no signature found" in moved.stderr
    # A signed image whose contract label this launcher cannot serve.
    future = _relabel(built_image.oci_layout.root, tmp_path / "future", {"dev.terminai.contract.version": FUTURE})
    site.push(future, f"{FUTURE}-future")
    refused = site.cli("run", "--image", site.ref(f"{FUTURE}-future"), "--key", str(site.pub), "--", "true")
    assert refused.returncode == 13 and "major differs" in refused.stderr


def test_socket_permission_denied_is_named(site: Site, installed_launcher: InstalledLauncher) -> None:
    # An unprivileged user against the root-only engine socket (pytest's tmp dirs are root-only
    # too, and so may be the checkout: that user runs the launcher installed outside it).
    shared = Path(tempfile.mkdtemp(prefix="terminai-nobody-"))
    try:
        shared.chmod(0o777)
        shutil.copyfile(site.pub, shared / "cosign.pub")
        (shared / "cosign.pub").chmod(0o644)
        (shared / "project").mkdir()  # the working directory, beside the home (no session may write that)
        result = site.cli(
            "preflight",
            "--image",
            site.ref("0.1.0"),
            "--key",
            str(shared / "cosign.pub"),
            env={"HOME": str(shared / "home")},
            cwd=shared / "project",
            user=65534,
            cli=installed_launcher.cli,
        )
    finally:
        shutil.rmtree(shared)
    assert result.returncode == 4, result.stderr
    assert "permission denied on the engine socket" in result.stderr


def test_failing_health_check_never_runs_the_command(
    site: Site, built_image: BuildResult, tmp_path: Path, engine: DockerApi
) -> None:
    source = tapts_without_transit(tmp_path)
    broken = build_image(
        BuildOptions(
            output_dir=tmp_path / "broken", tapts_source=source, tag="terminai/sandbox-broken:launch", load=False
        )
    )
    site.push(broken.oci_layout.root, "broken")
    result = site.cli(
        "run", "--image", site.ref("broken"), "--key", str(site.pub), "--", "sh", "-c", "echo COMMAND-RAN"
    )
    assert result.returncode == 70
    assert "COMMAND-RAN" not in result.stdout
    assert "ObjectTableLabels.TRANSIT" in result.stderr


def test_an_image_saying_user_root_still_runs_the_session_unprivileged(
    site: Site, built_image: BuildResult, tmp_path: Path, engine: DockerApi
) -> None:
    """A signed image (or a project layer) whose config says USER 0 never decides who the session is."""
    rooted = _reconfigure(built_image.oci_layout.root, tmp_path / "rooted", lambda config: config.update(User="0"))
    digest = site.push(rooted, "rooted")
    result = site.launch("rooted", "sh", "-c", "id -u; grep CapEff /proc/self/status")
    assert result.returncode == 0, result.stderr
    uid, caps = result.stdout.splitlines()
    assert uid == ("10001" if os.getuid() == 0 else str(os.getuid())) and caps == "CapEff:\t0000000000000000"
    # Below the launcher: the entrypoint itself refuses root, before the health check or the command.
    pinned = f"{site.registry.host}/{REPO}@{digest}"
    direct = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", pinned, "sh", "-c", "echo COMMAND-RAN"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert direct.returncode == 77 and "COMMAND-RAN" not in direct.stdout, direct
    assert "refusing to run the session as root" in direct.stderr


def test_verified_session_runs_hardened_and_plans_the_cleanup(
    site: Site, built_image: BuildResult, tmp_path: Path, engine: DockerApi
) -> None:
    digest = site.push(built_image.oci_layout.root, "0.1.0")
    downloads = tmp_path / "Downloads"
    subprocess.run(
        [sys.executable, str(ROOT / "examples" / "make_sample_downloads.py"), str(downloads), "--now", NOW], check=True
    )
    env = {"SANDBOX_MOUNTS": f"{downloads}:/downloads:ro"}
    result = site.launch("0.1.0", "python3", "-m", "apts.action.cleanup", "/downloads", "--now", NOW, env=env)
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan["counts"]["DELETE"] == 6 and plan["counts"]["TRANSIT"] == 4
    for step in range(7):
        assert f"] {step}. " in result.stderr
    # The approved apply moves files as planned, on a read-write mount the session's user owns.
    if os.getuid() == 0:
        subprocess.run(["chown", "-R", "10001:10001", str(downloads)], check=True)
    applied = site.launch(
        "0.1.0",
        "python3",
        "-m",
        "apts.action.cleanup",
        "/downloads",
        "--now",
        NOW,
        "--apply",
        "--approved-by",
        "alice",
        env={"SANDBOX_MOUNTS": f"{downloads}:/downloads:rw"},
    )
    assert applied.returncode == 0, applied.stderr
    assert not (downloads / "report-q3 (1).pdf").exists()
    assert list((downloads / ".terminai-cleanup" / "quarantine").glob("*/report-q3 (1).pdf"))
    # The session's exit code comes back unchanged, and the ledger records it. This warm
    # launch of a tag (resolved through dockerd, no credentials) stays inside the kernel's seal.
    failed = site.launch("0.1.0", "sh", "-c", "exit 7", env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert failed.returncode == 7, failed.stderr
    imported = importtime_modules(failed.stderr)
    assert {"terminai_sandbox.common.registry_auth", "terminai_sandbox.engine.client"} <= imported
    assert not outside_the_seal(imported), outside_the_seal(imported)
    assert not forbidden(imported), forbidden(imported)
    # Every launch is in the ledger, and the chain verifies until someone edits one byte.
    ledger = site.home / ".local" / "state" / "terminai-sandbox" / "audit.jsonl"
    events = [json.loads(line) for line in ledger.read_text().splitlines()]
    assert any(e["event"] == "run" and e["image"].endswith(digest) for e in events)
    assert any(e["event"] == "exit" and e["code"] == 0 for e in events)
    assert events[-1]["event"] == "exit" and events[-1]["code"] == 7
    ok = site.cli("audit", "verify")
    assert ok.returncode == 0, ok.stderr
    data = bytearray(ledger.read_bytes())
    data[data.index(b'"code": 0') + 8] = ord("1")
    ledger.write_bytes(bytes(data))
    bad = site.cli("audit", "verify")
    assert bad.returncode == 15 and "was edited" in bad.stderr


@pytest.mark.parametrize("runtime", ["runc", "runsc"])
def test_running_container_shows_every_hardening_default(
    site: Site, built_image: BuildResult, engine: DockerApi, runtime: str
) -> None:
    digest = site.push(built_image.oci_layout.root, "0.1.0")
    holder: dict[str, subprocess.CompletedProcess[str]] = {}
    env = {"TERMINAI_SANDBOX_RUNTIME": runtime}
    # Other workers run sessions of the same digest (same label): this one is told by its command.
    seconds = f"20.{os.getpid()}{time.monotonic_ns() % 10**6}"
    thread = threading.Thread(
        target=lambda: holder.setdefault(
            "r", site.cli("run", "--image", site.ref("0.1.0"), "--key", str(site.pub), "--", "sleep", seconds, env=env)
        )
    )
    oracle = docker.from_env()  # the docker SDK: what the engine says, read by a client we did not write
    thread.start()
    try:
        container = None
        deadline = time.monotonic() + 60
        while container is None and time.monotonic() < deadline:
            found = oracle.containers.list(filters={"label": f"dev.terminai.verified={digest}"})
            container = next((c for c in found if seconds in (c.attrs["Config"]["Cmd"] or [])), None)
            time.sleep(0.2)
        assert container is not None, "the session did not start"
        host = container.attrs["HostConfig"]
        assert host["ReadonlyRootfs"] is True and host["CapDrop"] == ["ALL"]
        assert "no-new-privileges" in host["SecurityOpt"] and host["NetworkMode"] == "none"
        assert host["AutoRemove"] is True and host["Init"] is True
        assert host["PidsLimit"] == 512 and host["Memory"] == 2 * 1024**3 and host["NanoCpus"] == 2 * 10**9
        assert set(host["Tmpfs"]) == {"/tmp", "/home/sandbox"}
        expected_user = "10001:10001" if os.getuid() == 0 else f"{os.getuid()}:{os.getgid()}"
        assert container.attrs["Config"]["User"] == expected_user
        assert container.attrs["Config"]["Image"].endswith(f"@{digest}")
        assert any(e.startswith("SANDBOX=terminai-") for e in container.attrs["Config"]["Env"])
        assert host["Runtime"] == runtime  # runc: dockerd's default runtime, which is runc here
        # From inside: which kernel answers, and that the session holds no capability.
        inside = container.exec_run(["sh", "-c", "dmesg 2>&1 | head -1; grep CapEff /proc/self/status"])
        text = inside.output.decode()
        assert "CapEff:\t0000000000000000" in text
        assert ("Starting gVisor" in text) == (runtime == "runsc"), text
        container.kill()
    finally:
        thread.join(timeout=60)
    result = holder["r"]
    label = "runsc (gVisor)" if runtime == "runsc" else "runc (the engine's default"
    assert f"; runtime {label}" in result.stderr, result.stderr
    ledger = site.home / ".local" / "state" / "terminai-sandbox" / "audit.jsonl"
    runs = [json.loads(line) for line in ledger.read_text().splitlines() if '"event": "run"' in line]
    assert runs[-1]["runtime"] == runtime
    assert ("--runtime" in runs[-1]["argv"]) == (runtime == "runsc")


def test_project_layer_is_built_from_the_verified_digest_and_cached(
    site: Site, built_image: BuildResult, engine: DockerApi, tmp_path: Path
) -> None:
    digest = site.push(built_image.oci_layout.root, "0.1.0")
    project = tmp_path / "project"
    (project / ".terminai").mkdir(parents=True)
    (project / ".terminai" / "sandbox.Dockerfile").write_text(
        "ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\nENV PROJECT_MARK=from-the-project-layer\n"
    )
    first = site.cli(
        "run", "--image", site.ref("0.1.0"), "--key", str(site.pub), "--", "printenv", "PROJECT_MARK", cwd=project
    )
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == "from-the-project-layer" and "built project layer" in first.stderr
    second = site.cli("run", "--image", site.ref("0.1.0"), "--key", str(site.pub), "--", "true", cwd=project)
    assert second.returncode == 0 and "cached project layer" in second.stderr
    # This project's images only: other workers' tests derive project images from the same digest.
    labels = [f"dev.terminai.derived-from={digest}", f"dev.terminai.project={project.resolve()}"]
    derived = list(docker.from_env().images.list(filters={"label": labels}))
    for image in derived:
        engine.remove_image(image.id, force=True)
    assert derived and all(t.startswith("terminai-project/") for i in derived for t in i.tags)
    (project / ".terminai" / "sandbox.Dockerfile").write_text("FROM debian:bookworm\n")
    refused = site.cli("run", "--image", site.ref("0.1.0"), "--key", str(site.pub), "--", "true", cwd=project)
    assert refused.returncode == 13 and "must be exactly FROM ${BASE_IMAGE}" in refused.stderr
