"""The proxy ``kube`` renders for an allow policy, run for real from the verified image.

``kube`` verifies the image in a loopback registry and renders its objects; the engine then
pulls the Deployment's image by digest and runs its container as the pod spec says (user,
read-only root, no capabilities, no new privileges, limits, the ConfigMap's policy file
mounted read-only, the emptyDirs as tmpfs), on no network. The test then makes that
container's network namespace a small lab (``nsenter``, as root): two global addresses on
its loopback, an HTTP origin on each, routed nowhere. curl, inside the namespace, reaches
the allowed origin through the proxy's rendered port and is refused for the other address
and for a denied name; the proxy's own ledger records each verdict. No packet leaves the
namespace.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from terminai_sandbox.assemble import BuildResult

from tests.fixtures.registry import RegistryServer
from tests.integration.launch.test_launch import Site

ALLOWED, DENIED = "45.0.2.1", "45.0.2.2"  # global addresses, only on the lab's loopback
POLICY = f"allow:{ALLOWED}:8080,!denied.test"


def _run(*argv: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=check)


@pytest.fixture()
def site(registry: RegistryServer, tmp_path: Path, built_image: BuildResult) -> Site:
    os.chmod(tmp_path, 0o755)
    return Site(registry, tmp_path)


@pytest.fixture()
def cleanup() -> Iterator[list[list[str]]]:
    """Commands that undo what a test made (its container, its origins), run whatever happens."""
    undo: list[list[str]] = []
    yield undo
    for argv in reversed(undo):
        subprocess.run(argv, capture_output=True, timeout=60, check=False)


def _engine_flags(pod: dict[str, Any], files: dict[str, Path]) -> list[str]:
    """The ``docker run`` flags for the pod's one container: every field the spec sets, or a failure."""
    [container] = pod["containers"]
    context = container["securityContext"]
    assert context["runAsNonRoot"] is True and context["privileged"] is False
    flags = ["--user", f"{context['runAsUser']}:{context['runAsGroup']}", "--network", "none"]
    if context["readOnlyRootFilesystem"]:
        flags.append("--read-only")
    flags += [f"--cap-drop={cap}" for cap in context["capabilities"]["drop"]]
    assert "add" not in context["capabilities"]
    if not context["allowPrivilegeEscalation"]:
        flags += ["--security-opt", "no-new-privileges"]
    assert context["seccompProfile"] == {"type": "RuntimeDefault"}  # the engine's default profile
    limits = container["resources"]["limits"]
    memory = limits["memory"]
    assert memory.endswith("Mi") or memory.endswith("Gi"), memory
    flags += ["--memory", memory[:-2] + memory[-2].lower(), "--cpus", str(int(limits["cpu"].rstrip("m")) / 1000)]
    volumes = {v["name"]: v for v in pod["volumes"]}
    uid = context["runAsUser"]
    for mount in container["volumeMounts"]:
        volume = volumes[mount["name"]]
        if "configMap" in volume:
            flags += ["-v", f"{files[volume['configMap']['name']]}:{mount['mountPath']}:ro"]
            assert mount.get("readOnly") is True
        else:
            assert set(volume) == {"name", "emptyDir"}, volume
            flags += ["--tmpfs", f"{mount['mountPath']}:uid={uid},gid={context['runAsGroup']},mode=0700"]
    assert set(container) == {
        "args", "image", "imagePullPolicy", "name", "ports", "resources", "securityContext",
        "volumeMounts",
    }, sorted(container)  # fmt: skip
    return flags


def test_the_rendered_proxy_runs_from_the_verified_image_and_enforces_the_policy(
    site: Site, built_image: BuildResult, tmp_path: Path, cleanup: list[list[str]]
) -> None:
    if os.geteuid() != 0:
        pytest.fail("this test enters the proxy container's network namespace: run it as root (as CI does)")
    digest = site.push(built_image.oci_layout.root, "0.1.0")
    name = f"kube-egress-{os.getpid() % 100000}-{os.urandom(2).hex()}"
    out = tmp_path / "objects"
    done = site.cli(
        "kube", site.ref("0.1.0"), "--key", str(site.pub), "--name", name, "--network-policy", POLICY, "--out", str(out)
    )
    assert done.returncode == 0, done.stderr
    objects = [yaml.safe_load(p.read_text()) for p in sorted(out.iterdir())]
    [config] = [o for o in objects if o["kind"] == "ConfigMap"]
    [deployment] = [o for o in objects if o["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    image = pod["containers"][0]["image"]
    assert image == f"{site.registry.host}/terminai/sandbox@{digest}"

    # The ConfigMap as the kubelet projects it: one file per key, readable by the pod's user.
    projected = tmp_path / "configmap"
    projected.mkdir(mode=0o755)
    for key, text in config["data"].items():
        (projected / key).write_text(text)
        (projected / key).chmod(0o644)
    pulled = _run("docker", "pull", "--quiet", image, check=False, timeout=300)
    assert pulled.returncode == 0, pulled.stderr
    flags = _engine_flags(pod, {config["metadata"]["name"]: projected})
    cleanup.append(["docker", "rm", "--force", name])
    started = _run("docker", "run", "--detach", "--name", name, *flags, image, *pod["containers"][0]["args"])
    assert started.returncode == 0, started.stderr
    deadline = time.monotonic() + 60
    while "listening tcp 0.0.0.0:3128" not in (logs := _run("docker", "logs", name, check=False)).stdout:
        state = _run("docker", "inspect", "--format", "{{.State.Running}}", name).stdout.strip()
        assert state == "true" and time.monotonic() < deadline, logs.stdout + logs.stderr
        time.sleep(0.2)

    pid = _run("docker", "inspect", "--format", "{{.State.Pid}}", name).stdout.strip()
    enter = ["nsenter", f"--net=/proc/{pid}/ns/net"]
    for address in (ALLOWED, DENIED):
        _run(*enter, "ip", "addr", "add", f"{address}/32", "dev", "lo")
        origin = subprocess.Popen(
            [*enter, sys.executable, "-m", "http.server", "--bind", address, "8080", "--directory", str(projected)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        cleanup.append(["kill", str(origin.pid)])
    # Both origins answer when asked directly: a refusal below is the proxy's doing.
    for address in (ALLOWED, DENIED):
        for _ in range(100):
            direct = _run(*enter, "curl", "-sS", "--noproxy", "*", "-o", "/dev/null", "-w", "%{http_code}",
                          f"http://{address}:8080/policy.json", check=False)  # fmt: skip
            if direct.stdout == "200":
                break
            time.sleep(0.1)
        assert direct.stdout == "200", direct.stderr

    proxy = ["-x", "http://127.0.0.1:3128"]

    def curl(*argv: str) -> subprocess.CompletedProcess[str]:
        return _run(*enter, "curl", "-sS", "--max-time", "20", *proxy, *argv, check=False)

    reached = curl(f"http://{ALLOWED}:8080/policy.json")
    assert reached.returncode == 0, reached.stderr
    assert json.loads(reached.stdout) == json.loads(config["data"]["policy.json"])  # the origin's bytes, relayed
    refused = curl("-o", "/dev/null", "-w", "%{http_code}", f"http://{DENIED}:8080/policy.json")
    assert refused.stdout == "403", (refused.stdout, refused.stderr)
    tunnel = curl(f"https://{DENIED}:8080/")
    assert tunnel.returncode != 0 and "403" in tunnel.stderr, tunnel.stderr
    named = curl("https://denied.test/")
    assert named.returncode != 0 and "403" in named.stderr, named.stderr
    other_port = curl("-o", "/dev/null", "-w", "%{http_code}", f"http://{ALLOWED}:8081/")
    assert other_port.stdout == "403", other_port.stdout

    ledger_path = next(a for a in pod["containers"][0]["args"] if a.endswith(".ledger"))
    ledger = _run("docker", "exec", name, "cat", ledger_path).stdout
    verdicts = {
        (r["host"], r["port"], r["verdict"]) for line in ledger.splitlines() if (r := json.loads(line)).get("host")
    }
    assert verdicts == {
        (ALLOWED, 8080, "allowed"),
        (DENIED, 8080, "refused"),
        ("denied.test", 443, "refused"),
        (ALLOWED, 8081, "refused"),
    }, verdicts
    # The proxy runs as the image's user, confined, and stops cleanly on SIGTERM.
    status = _run("docker", "exec", name, "grep", "-E", "^(Uid|CapEff|NoNewPrivs):", "/proc/1/status").stdout
    assert "CapEff:\t0000000000000000" in status and "NoNewPrivs:\t1" in status, status
    _run("docker", "stop", "--time", "20", name)
    assert _run("docker", "inspect", "--format", "{{.State.ExitCode}}", name).stdout.strip() == "0"
