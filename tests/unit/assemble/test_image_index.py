"""The multi-platform OCI layout: one image index over the platform manifests, read back by
skopeo (containers/image), which resolves each platform to its own manifest."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from terminai_sandbox import layers
from terminai_sandbox.artifacts.oci_layout import OciLayout
from terminai_sandbox.assemble import oci
from terminai_sandbox.assemble.index import PlatformManifest, make_index, write_index_layout
from terminai_sandbox.errors import BuildError

SDE = 1795140670
SKOPEO = shutil.which("skopeo")


def _single(tmp_path: Path, architecture: str, content: bytes) -> OciLayout:
    """A one-layer, single-image layout of ``architecture``, as a one-platform build writes it."""
    staging = tmp_path / f"staging-{architecture}"
    (staging / "etc").mkdir(parents=True)
    (staging / "etc" / "arch").write_bytes(content)
    layer = layers.write_layer(staging, tmp_path / f"{architecture}.tar", source_date_epoch=SDE)
    packed = layers.compress(layer, tmp_path / f"{architecture}.tar.gz")
    config = oci.make_config(
        layers=[packed], history=["one file"], user="10001:10001", env=[], entrypoint=["/bin/sh"], cmd=[],
        workdir="/", labels={}, source_date_epoch=SDE, architecture=architecture,
    )  # fmt: skip
    manifest = oci.make_manifest(config, [packed], {})
    root = tmp_path / f"oci-{architecture}"
    oci.write_oci_layout(root, config=config, manifest=manifest, layers=[packed], ref_name="1.2.3")
    return OciLayout.open(root)


def test_the_index_lists_each_platform_manifest_in_the_declared_order(tmp_path: Path) -> None:
    amd64, arm64 = _single(tmp_path, "amd64", b"x86-64\n"), _single(tmp_path, "arm64", b"aarch64\n")
    digest = write_index_layout(tmp_path / "index", [amd64, arm64], ref_name="1.2.3")
    top = json.loads((tmp_path / "index" / "index.json").read_bytes())
    assert top["manifests"][0]["mediaType"] == oci.MEDIA_INDEX and top["manifests"][0]["digest"] == digest
    raw = (tmp_path / "index" / "blobs" / "sha256" / digest.removeprefix("sha256:")).read_bytes()
    assert oci.digest_of(raw) == digest
    index = json.loads(raw)
    assert index["mediaType"] == oci.MEDIA_INDEX
    assert [(m["digest"], m["platform"]) for m in index["manifests"]] == [
        (amd64.manifest_digest, {"architecture": "amd64", "os": "linux"}),
        (arm64.manifest_digest, {"architecture": "arm64", "os": "linux"}),
    ]


def test_the_same_manifests_give_the_same_index_digest_and_another_order_another(tmp_path: Path) -> None:
    amd64, arm64 = _single(tmp_path, "amd64", b"x86-64\n"), _single(tmp_path, "arm64", b"aarch64\n")
    first = write_index_layout(tmp_path / "a", [amd64, arm64], ref_name="1.2.3")
    second = write_index_layout(tmp_path / "b", [amd64, arm64], ref_name="1.2.3")
    assert first == second
    assert (tmp_path / "a" / "index.json").read_bytes() == (tmp_path / "b" / "index.json").read_bytes()
    assert write_index_layout(tmp_path / "c", [arm64, amd64], ref_name="1.2.3") != first


def test_a_platform_listed_twice_is_refused() -> None:
    entry = PlatformManifest(platform="linux/amd64", digest="sha256:" + "a" * 64, size=1)
    with pytest.raises(BuildError, match="each platform once"):
        make_index([entry, entry])


@pytest.mark.skipif(SKOPEO is None, reason="skopeo is not installed (make host-tools)")
def test_skopeo_resolves_each_platform_of_the_index_to_its_own_image(tmp_path: Path) -> None:
    amd64, arm64 = _single(tmp_path, "amd64", b"x86-64\n"), _single(tmp_path, "arm64", b"aarch64\n")
    digest = write_index_layout(tmp_path / "index", [amd64, arm64], ref_name="1.2.3")
    reference = f"oci:{tmp_path / 'index'}:1.2.3"
    assert SKOPEO is not None
    raw = subprocess.run([SKOPEO, "inspect", "--raw", reference], capture_output=True, check=True).stdout
    assert oci.digest_of(raw) == digest  # skopeo serves the index's bytes unchanged
    for arch, layout in (("amd64", amd64), ("arm64", arm64)):
        platform = [SKOPEO, "--override-os", "linux", "--override-arch", arch, "inspect"]
        data = json.loads(subprocess.run([*platform, reference], capture_output=True, check=True).stdout)
        assert data["Architecture"] == arch
        assert data["Layers"] == [layer.digest for layer in layout.layers]
        config = subprocess.run([*platform, "--config", "--raw", reference], capture_output=True, check=True).stdout
        assert oci.digest_of(config) == layout.config_digest
    # Copying every platform out keeps every byte: the copy's index is the same index.
    subprocess.run(
        [SKOPEO, "copy", "--all", "--preserve-digests", reference, f"oci:{tmp_path / 'copy'}:1.2.3"],
        capture_output=True, check=True,
    )  # fmt: skip
    copied = subprocess.run(
        [SKOPEO, "inspect", "--raw", f"oci:{tmp_path / 'copy'}:1.2.3"], capture_output=True, check=True
    ).stdout
    assert oci.digest_of(copied) == digest
