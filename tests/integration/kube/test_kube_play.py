"""``terminai-sandbox kube`` against a real registry, and its Pod run for real by ``podman kube play``.

No cluster runs here; podman plays the emitted Pod as a kubelet would (rootful, with the
pod's own network namespace and no network, as ``--network none`` gives a session), and
``podman inspect`` plus checks from inside show ``run``'s hardening. Podman 4.3 (Debian 12)
plays an ``emptyDir`` as a named volume rather than a tmpfs; a newer podman (and every
kubelet) honours ``medium: Memory``, which the tests then check too.

gVisor is not exercised here: podman places every container of a pod in the pod's
namespaces, and runsc (Debian 12's 20221219 and later) cannot join another sandbox's
namespaces that way, so the container dies as it starts (containers/podman#15223,
google/gvisor#7949). On a cluster, containerd's or CRI-O's runsc shim builds one sandbox
per pod; the emitted ``RuntimeClass`` selects it.

Rootful podman asks for RLIMIT_NOFILE 1048576 by default, which fails where root lacks
CAP_SYS_RESOURCE (see :mod:`terminai_sandbox.engine.flags`); ``kube play`` has no
``--ulimit``, so a containers.conf sets the limits the launcher sets.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from terminai_sandbox.assemble import BuildResult
from terminai_sandbox.common.hardening import HOME_IN_IMAGE, IMAGE_UID
from terminai_sandbox.engine.flags import NOFILE_CAP, NPROC_CAP, host_rlimits
from terminai_sandbox.kube.hardening import VOLUMES

from tests.fixtures.registry import RegistryServer
from tests.integration.launch.test_launch import Site


def _podman(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["podman", *args], capture_output=True, text=True, timeout=300, check=False, env={**os.environ, **(env or {})}
    )


@pytest.fixture()
def site(registry: RegistryServer, tmp_path: Path, built_image: BuildResult) -> Site:
    os.chmod(tmp_path, 0o755)
    return Site(registry, tmp_path)


def test_kube_emits_only_for_a_verified_image_and_pins_the_digest(site: Site, built_image: BuildResult) -> None:
    digest = site.push(built_image.oci_layout.root, "0.1.0")
    site.push(built_image.oci_layout.root, "0.1.0", sign=False, repo="unsigned/sandbox")
    out = site.tmp / "objects"
    done = site.cli("kube", site.ref("0.1.0"), "--key", str(site.pub), "--out", str(out))
    assert done.returncode == 0, done.stderr
    written = sorted(out.iterdir())
    assert [Path(line).name for line in done.stdout.splitlines()] == [p.name for p in written]
    objects = [yaml.safe_load(p.read_text()) for p in written]
    pod = next(o for o in objects if o["kind"] == "Pod")
    # The tag was resolved once, verified, and only the digest reaches the cluster.
    assert pod["spec"]["containers"][0]["image"] == f"{site.registry.host}/terminai/sandbox@{digest}"
    policy = next(o for o in objects if o["kind"] == "ClusterImagePolicy")
    assert policy["spec"]["authorities"][0]["key"]["data"] == site.pub.read_text()
    # Same bytes on stdout (YAML) as in the files; twice the same.
    first = site.cli("kube", f"{site.registry.host}/terminai/sandbox@{digest}", "--key", str(site.pub))
    again = site.cli("kube", site.ref("0.1.0"), "--key", str(site.pub))
    assert first.returncode == again.returncode == 0 and first.stdout == again.stdout
    assert list(yaml.safe_load_all(first.stdout)) == objects

    unsigned_out = site.tmp / "unsigned"
    refused = site.cli(
        "kube", site.ref("0.1.0", "unsigned/sandbox"), "--key", str(site.pub), "--out", str(unsigned_out)
    )
    assert refused.returncode == 11 and "no signature found" in refused.stderr
    assert refused.stdout == "" and not unsigned_out.exists()
    wrong = site.cli("kube", site.ref("0.1.0"), "--certificate-identity", "x", "--json")
    assert wrong.returncode == 3 and "--certificate-oidc-issuer" in wrong.stderr and wrong.stdout == ""


@pytest.fixture()
def podman_conf(tmp_path: Path) -> Path:
    assert shutil.which("podman"), "podman is not installed: run 'make host-tools' (scripts/ensure-host-tools)"
    limits = host_rlimits()
    nofile = min(limits["nofile"][1], NOFILE_CAP)
    nproc = min(limits["nproc"][1], NPROC_CAP)
    conf = tmp_path / "containers.conf"
    conf.write_text(f'[containers]\ndefault_ulimits = ["nofile={nofile}:{nofile}", "nproc={nproc}:{nproc}"]\n')
    return conf


@pytest.fixture()
def played() -> Iterator[list[tuple[Path, str]]]:
    """Pod files played (and images pulled) by a test; torn down whatever happens."""
    items: list[tuple[Path, str]] = []
    yield items
    for pod_file, image in items:
        _podman("kube", "down", str(pod_file))
        _podman("volume", "rm", "--force", *VOLUMES.values())
        _podman("rmi", image)


def test_the_emitted_pod_runs_hardened_under_podman_kube_play(
    site: Site, built_image: BuildResult, podman_conf: Path, played: list[tuple[Path, str]]
) -> None:
    digest = site.push(built_image.oci_layout.root, "0.1.0")
    name = f"kube-play-{os.getpid() % 100000}"
    out = site.tmp / "objects"
    done = site.cli("kube", site.ref("0.1.0"), "--key", str(site.pub), "--name", name, "--out", str(out))
    assert done.returncode == 0, done.stderr
    [pod_file] = out.glob("*-pod-*.yaml")
    image = yaml.safe_load(pod_file.read_text())["spec"]["containers"][0]["image"]
    # The image reaches podman's storage by digest, from the registry it was verified in.
    pulled = _podman("pull", "--quiet", "--tls-verify=false", image)
    assert pulled.returncode == 0, pulled.stderr
    played.append((pod_file, image))
    env = {"CONTAINERS_CONF": str(podman_conf)}
    play = _podman("kube", "play", "--network", "none", str(pod_file), env=env)
    assert play.returncode == 0, play.stderr
    container = f"{name}-sandbox"
    deadline = time.monotonic() + 60
    while _podman("inspect", container, "--format", "{{.State.Running}}").stdout.strip() != "true":
        assert time.monotonic() < deadline, _podman("logs", container).stderr
        time.sleep(0.2)

    [facts] = json.loads(_podman("inspect", container).stdout)
    host = facts["HostConfig"]
    assert host["ReadonlyRootfs"] is True
    assert host["CapAdd"] == [] and {"CAP_SETUID", "CAP_CHOWN", "CAP_NET_RAW"} <= set(host["CapDrop"])
    assert "no-new-privileges" in host["SecurityOpt"]
    assert host["Memory"] == 2 * 1024**3 and host["NanoCpus"] == 2 * 10**9
    assert facts["Config"]["User"] == f"{IMAGE_UID}:{IMAGE_UID}"
    # podman names an image by the first manifest it was stored under (another image of the
    # same config may be there already), so the pod's image is checked by its ID and digests.
    [stored] = json.loads(_podman("image", "inspect", image).stdout)
    assert facts["Image"] == stored["Id"]
    assert digest in {name.rpartition("@")[2] for name in stored["RepoDigests"]}
    mounts = {m["Destination"]: m for m in facts["Mounts"]}
    assert {"/tmp", HOME_IN_IMAGE, "/workspace"} <= set(mounts)

    script = (
        "id -u; id -g; grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status;"
        " touch /root-write 2>/dev/null && echo ROOT-WRITABLE;"
        " touch /tmp/t $HOME/h /workspace/w && echo SCRATCH-WRITABLE; echo HOME=$HOME; cat /proc/mounts"
    )
    inside = _podman("exec", container, "sh", "-c", script)
    assert inside.returncode == 0, inside.stderr
    lines = inside.stdout.splitlines()
    assert lines[:2] == [str(IMAGE_UID), str(IMAGE_UID)]
    status = dict(line.split(":\t", 1) for line in lines[2:6])
    assert status["CapEff"] == status["CapBnd"] == "0000000000000000"
    assert status["NoNewPrivs"] == "1"
    assert status["Seccomp"] == "2"  # a filter: the RuntimeDefault profile
    assert "ROOT-WRITABLE" not in lines and "SCRATCH-WRITABLE" in lines and f"HOME={HOME_IN_IMAGE}" in lines
    table = {fields[1]: fields for fields in (line.split() for line in lines) if len(fields) >= 4}
    assert "ro" in table["/"][3].split(",")
    for path in ("/tmp", HOME_IN_IMAGE):
        options = table[path][3].split(",")
        assert "rw" in options and {"nosuid", "nodev"} <= set(options), (path, options)
        if table[path][2] == "tmpfs":  # podman that honours emptyDir medium: Memory
            assert any(o.startswith("size=") for o in options), options

    down = _podman("kube", "down", str(pod_file))
    assert down.returncode == 0, down.stderr
    assert _podman("container", "exists", container).returncode == 1
