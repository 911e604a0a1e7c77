"""Pulling by digest through the real engine from a loopback registry: per-layer progress with bytes.

``contracts REGISTRY/REPO:TAG`` pulls an image the engine does not hold with
:meth:`DockerApi.pull_by_digest`; its progress callback hears what dockerd streams (each
layer's steps, byte counts while it downloads), and the CLI's reporter turns that into
lines. The image is a small real one (a gzip'd layer of incompressible bytes, a config
whose diff_ids the engine checks), pushed by this project's client.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import tarfile
from pathlib import Path

import pytest
from terminai_sandbox.artifacts.oci_layout import OciLayout
from terminai_sandbox.cli import progress
from terminai_sandbox.engine.client import DockerApi, PullProgress, connect
from terminai_sandbox.errors import RegistryError
from terminai_sandbox.registry import RegistryClient

from tests.fixtures.oci import write_layout
from tests.fixtures.registry import RegistryServer, forget_images

pytestmark = pytest.mark.integration

PAYLOAD = os.urandom(3 << 20)


def _image(root: Path) -> str:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        info = tarfile.TarInfo("data/blob.bin")
        info.size = len(PAYLOAD)
        tar.addfile(info, io.BytesIO(PAYLOAD))
    layer = gzip.compress(raw.getvalue(), mtime=0)
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {},
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(raw.getvalue()).hexdigest()]},
    }
    return write_layout(root, config=json.dumps(config).encode(), layers=[layer])


@pytest.fixture()
def engine() -> DockerApi:
    return connect()


def test_a_pull_by_digest_reports_each_layer_with_byte_counts(
    registry: RegistryServer, engine: DockerApi, tmp_path: Path
) -> None:
    digest = _image(tmp_path / "layout")
    name = f"{registry.host}/progress/pull"
    RegistryClient(registry.host).push_layout(OciLayout.open(tmp_path / "layout"), "progress/pull")
    events: list[PullProgress] = []
    try:
        image_id = engine.pull_by_digest(name, digest, on_progress=events.append)
        found = engine.inspect_image(f"{name}@{digest}")
        assert found is not None and found["Id"] == image_id
    finally:
        forget_images(f"{registry.host}/")
    statuses = {e.status for e in events}
    assert "Pull complete" in statuses, statuses
    moving = [e for e in events if e.status == "Downloading" and e.total]
    assert moving, events  # the engine streamed byte counts for the 3 MiB layer
    assert all(0 < e.current <= e.total for e in moving)
    layer = moving[0].layer
    assert all(e.layer == layer for e in moving)


def test_a_digest_the_registry_does_not_hold_is_a_registry_error(registry: RegistryServer, engine: DockerApi) -> None:
    events: list[PullProgress] = []
    with pytest.raises(RegistryError, match=r"pulling .* failed"):
        engine.pull_by_digest(f"{registry.host}/progress/absent", "sha256:" + "0" * 64, on_progress=events.append)
    assert not any(e.status == "Pull complete" for e in events)


def test_the_reporter_prints_steps_once_and_bytes_throttled(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(progress, "shown", lambda: True)
    report = progress.pull_reporter()
    assert report is not None
    for event in (
        PullProgress(layer="abc123", status="Pulling fs layer"),
        PullProgress(layer="abc123", status="Downloading", current=1 << 20, total=3 << 20),
        PullProgress(layer="abc123", status="Downloading", current=2 << 20, total=3 << 20),  # within a second
        PullProgress(layer="abc123", status="Downloading", current=3 << 20, total=3 << 20),
        PullProgress(layer="abc123", status="Download complete"),
        PullProgress(layer="abc123", status="Download complete"),
        PullProgress(layer="abc123", status="Pull complete"),
    ):
        report(event)
    lines = [line.split("] ", 1)[1] for line in capsys.readouterr().err.splitlines()]
    assert lines == [
        "layer abc123: pulling fs layer",
        "layer abc123: downloading 1.0 MiB of 3.0 MiB",
        "layer abc123: downloading 3.0 MiB of 3.0 MiB",
        "layer abc123: download complete",
        "layer abc123: pull complete",
    ]
    monkeypatch.setattr(progress, "shown", lambda: False)
    assert progress.pull_reporter() is None


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("terminal", [True, False])
def test_a_launch_pull_says_what_it_is_doing_on_a_terminal_only(
    registry: RegistryServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, terminal: bool
) -> None:
    """``run`` pulling an image it does not hold (the launch kernel, without click)."""
    from terminai_sandbox.common.reference import ImageRef
    from terminai_sandbox.engine.docker import DockerEngine

    digest = _image(tmp_path / "layout")
    RegistryClient(registry.host).push_layout(OciLayout.open(tmp_path / "layout"), "progress/launch")
    err = _Terminal() if terminal else io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    try:
        facts = DockerEngine.connect(dict(os.environ)).pull(
            ImageRef.parse(f"{registry.host}/progress/launch@{digest}", what="the image"), insecure=False
        )
    finally:
        forget_images(f"{registry.host}/")
    assert facts is not None
    said = err.getvalue().splitlines()
    if not terminal:
        assert said == []
        return
    assert any(line.startswith("  · pull: layer ") and " of 3.0 MiB" in line for line in said), said
    assert any(line.endswith(": pull complete") for line in said), said
