"""Preflight verifies before the engine fetches anything: a real loopback registry, dockerd and its event stream.

An unsigned image, and one signed with a key the policy does not trust, are refused at
step 3; dockerd's events then show no pull and the engine does not hold the image. The
companion run with ``--unsafe-skip-verify`` shows the same event watch does see a pull
when one happens, so the absence above means something.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import platform
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import docker
import pytest
from terminai_sandbox.artifacts.oci_layout import OciLayout
from terminai_sandbox.engine.client import DockerApi
from terminai_sandbox.registry import RegistryClient
from terminai_sandbox.signing.formats import keys
from terminai_sandbox.signing.sign import sign as sign_image

from tests.fixtures.oci import write_layout
from tests.fixtures.registry import RegistryServer

pytestmark = pytest.mark.integration

CLI = str(Path(sys.executable).with_name("terminai-sandbox"))
ARCH = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())


def _tiny_layout(root: Path) -> Path:
    """A one-layer image whose content is new to the engine (a random file)."""
    tar = io.BytesIO()
    with tarfile.open(fileobj=tar, mode="w") as archive:
        data = os.urandom(16).hex().encode()
        info = tarfile.TarInfo("marker")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    layer = tar.getvalue()
    config = {
        "architecture": ARCH,
        "os": "linux",
        "config": {"Cmd": ["/marker"]},
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(layer).hexdigest()]},
    }
    write_layout(root, config=json.dumps(config).encode(), layers=[gzip.compress(layer, mtime=0)])
    return root


def _preflight(image: str, key: Path, home: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "TERMINAI_SANDBOX": "docker"}
    project = home.with_name("project")  # outside the home, whose state no session may write
    project.mkdir(exist_ok=True)
    return subprocess.run(
        [CLI, "preflight", "--image", image, "--key", str(key), *extra],
        capture_output=True,
        text=True,
        env=env,
        cwd=project,
        timeout=300,
        check=False,
    )


def _image_events(client: docker.DockerClient, since: int, host: str) -> list[dict[str, object]]:
    """dockerd's image events since ``since`` that name an image of the registry at ``host``."""
    until = int(time.time()) + 1
    events = client.api.events(since=since, until=until, filters={"type": "image"}, decode=True)
    return [e for e in events if str(e.get("id", e.get("Actor", {}).get("ID", ""))).startswith(host)]


def _held(client: docker.DockerClient, reference: str) -> bool:
    try:
        client.images.get(reference)
    except docker.errors.ImageNotFound:
        return False
    return True


def test_an_image_is_verified_before_the_engine_fetches_a_byte_of_it(
    registry: RegistryServer, engine: DockerApi, tmp_path: Path
) -> None:
    client = RegistryClient(registry.host)
    trusted, other = keys.generate(), keys.generate()
    pub = tmp_path / "cosign.pub"
    pub.write_bytes(keys.public_pem(trusted))
    home = tmp_path / "home"
    home.mkdir()
    unsigned = client.push_layout(OciLayout.open(_tiny_layout(tmp_path / "a")), "unsigned/tiny", tag="1.0.0").digest
    foreign = client.push_layout(OciLayout.open(_tiny_layout(tmp_path / "b")), "foreign/tiny", tag="1.0.0").digest
    sign_image(client, "foreign/tiny", foreign, other, docker_reference=f"{registry.host}/foreign/tiny")

    oracle = docker.from_env()  # dockerd's events and images, read by a client we did not write
    since = int(time.time()) - 1
    cases = {
        f"{registry.host}/unsigned/tiny@{unsigned}": "no signature found",
        f"{registry.host}/unsigned/tiny:1.0.0": "no signature found",  # a tag: dockerd reads the manifest digest only
        f"{registry.host}/foreign/tiny@{foreign}": "does not verify with any trusted key",
    }
    for image, message in cases.items():
        refused = _preflight(image, pub, home)
        assert refused.returncode == 11, (image, refused.stderr)
        assert "preflight step 3 (signature) refused" in refused.stderr and message in refused.stderr, refused.stderr
        assert "4. image by digest" not in refused.stderr, refused.stderr
    assert not _image_events(oracle, since, registry.host)
    for pinned in (f"{registry.host}/unsigned/tiny@{unsigned}", f"{registry.host}/foreign/tiny@{foreign}"):
        assert not _held(oracle, pinned)

    # The companion: skipping verification lets step 4 pull, and the same watch sees it.
    since = int(time.time()) - 1
    skipped = _preflight(f"{registry.host}/unsigned/tiny@{unsigned}", pub, home, "--unsafe-skip-verify")
    assert "4. image by digest: pulled by the verified digest" in skipped.stderr, skipped.stderr
    pulls = [e for e in _image_events(oracle, since, registry.host) if e.get("Action") == "pull"]
    assert pulls, "the engine pulled, but its events did not show it: the watch above proves nothing"
    assert _held(oracle, f"{registry.host}/unsigned/tiny@{unsigned}")
