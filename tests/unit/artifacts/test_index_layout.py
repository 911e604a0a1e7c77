"""A multi-platform OCI layout: index.json names one image index; each platform opens as an image."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from terminai_sandbox.artifacts.oci_layout import IndexLayout, OciLayout, is_index_layout
from terminai_sandbox.errors import ArtifactCorrupted, ArtifactError

from tests.fixtures.oci import INDEX_TYPE, write_index_layout, write_layout

AMD64 = b'{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}'
ARM64 = b'{"architecture":"arm64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}'


def _layout(root: Path) -> tuple[str, dict[str, str]]:
    return write_index_layout(root, {"linux/amd64": (AMD64, [b"a"]), "linux/arm64": (ARM64, [b"b", b"c"])})


def test_an_index_layout_opens_with_its_exact_bytes_and_each_platform(tmp_path: Path) -> None:
    index, children = _layout(tmp_path / "oci")
    assert is_index_layout(tmp_path / "oci")
    opened = IndexLayout.open(tmp_path / "oci")
    assert opened.index_digest == index
    assert opened.index_bytes == (tmp_path / "oci" / "blobs" / "sha256" / index.removeprefix("sha256:")).read_bytes()
    assert [image.manifest_digest for image in opened.images] == list(children.values())
    assert [len(image.layers) for image in opened.images] == [1, 2]
    with pytest.raises(ArtifactError, match="not an image manifest"):
        OciLayout.open(tmp_path / "oci")  # the single-image reader refuses it, as before


def test_a_single_image_layout_is_not_an_index_layout(tmp_path: Path) -> None:
    write_layout(tmp_path / "one", config=AMD64, layers=[b"x"])
    assert not is_index_layout(tmp_path / "one")
    with pytest.raises(ArtifactError, match="not an image index"):
        IndexLayout.open(tmp_path / "one")


def test_a_nested_index_is_refused(tmp_path: Path) -> None:
    index, _ = _layout(tmp_path / "oci")
    blobs = tmp_path / "oci" / "blobs" / "sha256"
    document = json.loads((blobs / index.removeprefix("sha256:")).read_bytes())
    document["manifests"][1]["mediaType"] = INDEX_TYPE
    body = json.dumps(document).encode()
    digest = hashlib.sha256(body).hexdigest()
    (blobs / digest).write_bytes(body)
    top = {
        "schemaVersion": 2,
        "manifests": [{"mediaType": INDEX_TYPE, "digest": f"sha256:{digest}", "size": len(body)}],
    }
    (tmp_path / "oci" / "index.json").write_text(json.dumps(top))
    with pytest.raises(ArtifactError, match="itself an index"):
        IndexLayout.open(tmp_path / "oci")


def test_an_index_whose_bytes_changed_is_corrupted(tmp_path: Path) -> None:
    index, _ = _layout(tmp_path / "oci")
    path = tmp_path / "oci" / "blobs" / "sha256" / index.removeprefix("sha256:")
    path.write_bytes(path.read_bytes().replace(b"arm64", b"amd64"))
    with pytest.raises(ArtifactCorrupted, match="the image index"):
        IndexLayout.open(tmp_path / "oci")
