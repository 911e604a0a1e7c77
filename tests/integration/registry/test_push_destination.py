"""``push SRC REPO@sha256:…``: a digest destination must be the layout's; a mismatch sends nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from terminai_sandbox.artifacts.oci_layout import OciLayout
from terminai_sandbox.errors import ConfigError
from terminai_sandbox.registry import RegistryClient

from tests.fixtures.oci import write_layout
from tests.fixtures.registry import RegistryServer, has_manifest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CLI = str(Path(sys.executable).with_name("terminai-sandbox"))
ZEROS = "sha256:" + "0" * 64


def _layout(root: Path) -> OciLayout:
    config = json.dumps({"architecture": "amd64", "os": "linux", "rootfs": {"type": "layers", "diff_ids": []}})
    write_layout(root, config=config.encode(), layers=[])
    return OciLayout.open(root)


def _push(layout: Path, destination: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ["PATH"], "HOME": str(layout.parent)}
    return subprocess.run(
        [CLI, "push", str(layout), destination], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def test_a_digest_destination_that_is_not_the_layouts_is_refused_before_anything_is_sent(
    registry: RegistryServer, tmp_path: Path
) -> None:
    layout = _layout(tmp_path / "layout")
    client = RegistryClient(registry.host)
    for destination in (f"{registry.host}/demo/x@{ZEROS}", f"{registry.host}/demo/x:1.0.0@{ZEROS}"):
        refused = _push(layout.root, destination)
        assert refused.returncode == 3, refused.stderr
        assert f"the destination names {ZEROS}, but the layout's manifest is {layout.manifest_digest}" in refused.stderr
        assert "nothing was pushed" in refused.stderr and "Traceback" not in refused.stderr
    # Nothing reached the registry: no manifest by either digest or the tag, not even the config blob.
    assert not has_manifest(registry.host, "demo/x", layout.manifest_digest)
    assert not has_manifest(registry.host, "demo/x", ZEROS)
    assert not has_manifest(registry.host, "demo/x", "1.0.0")
    assert not client.has_blob("demo/x", layout.config.digest)
    # The library refuses the same way.
    with pytest.raises(ConfigError, match="nothing was pushed"):
        client.push_layout(layout, "demo/x", digest=ZEROS)
    assert not client.has_blob("demo/x", layout.config.digest)
    # With the check switched off (no digest handed over, as push did before), the push
    # "succeeds" under another digest than the one the user named.
    assert client.push_layout(layout, "demo/unchecked").digest != ZEROS

    # The layout's own digest is a fine destination, with or without a tag, and is what is reported.
    for destination in (
        f"{registry.host}/demo/x@{layout.manifest_digest}",
        f"{registry.host}/demo/x:1.0.0@{layout.manifest_digest}",
    ):
        pushed = _push(layout.root, destination)
        assert pushed.returncode == 0, pushed.stderr
        assert f"{registry.host}/demo/x@{layout.manifest_digest}" in pushed.stdout
    assert has_manifest(registry.host, "demo/x", layout.manifest_digest)
    assert client.resolve("demo/x", "1.0.0") == layout.manifest_digest
