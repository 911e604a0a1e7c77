"""OciLayout: a single-image OCI layout opened, checked and read by digest."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from terminai_sandbox.artifacts.oci_layout import OciLayout
from terminai_sandbox.errors import ArtifactCorrupted, ArtifactError

from tests.fixtures.oci import write_layout

CONFIG = json.dumps({"created": "2026-11-20T02:11:10Z", "config": {"Labels": {"a": "1"}}}).encode()
LAYERS = [b"first layer", b"second layer"]


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _blob(root: Path, data: bytes) -> Path:
    return root / "blobs" / "sha256" / hashlib.sha256(data).hexdigest()


@pytest.fixture
def layout_dir(tmp_path: Path) -> Path:
    write_layout(tmp_path / "oci", config=CONFIG, layers=LAYERS)
    return tmp_path / "oci"


def test_a_good_layout_opens_and_reads_by_digest(layout_dir: Path) -> None:
    layout = OciLayout.open(layout_dir)
    index = json.loads((layout_dir / "index.json").read_text())
    assert layout.manifest_digest == index["manifests"][0]["digest"] == _digest(layout.manifest_bytes)
    assert layout.config_digest == _digest(CONFIG)
    assert [d.digest for d in layout.layers] == [_digest(data) for data in LAYERS]
    assert [p.read_bytes() for p in layout.layer_paths()] == LAYERS  # bottom layer first
    assert layout.read_blob(_digest(LAYERS[1])) == LAYERS[1]
    assert layout.labels() == {"a": "1"}
    assert layout.image_config()["created"] == "2026-11-20T02:11:10Z"
    layout.verify()


def _rewrite_index(root: Path, change: Callable[[dict[str, object]], None]) -> None:
    index = json.loads((root / "index.json").read_text())
    change(index)
    (root / "index.json").write_text(json.dumps(index))


def _second_manifest(index: dict[str, object]) -> None:
    manifests = index["manifests"]
    assert isinstance(manifests, list)
    manifests.append(dict(manifests[0]))


def _descriptor(key: str, value: object) -> Callable[[dict[str, object]], None]:
    def change(index: dict[str, object]) -> None:
        manifests = index["manifests"]
        assert isinstance(manifests, list)
        manifests[0][key] = value

    return change


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda root: (root / "oci-layout").unlink(), "is not an OCI image layout (no oci-layout)"),
        (lambda root: (root / "index.json").unlink(), "is not an OCI image layout (no index.json)"),
        (lambda root: (root / "oci-layout").write_text('{"imageLayoutVersion": "2.0.0"}'), "imageLayoutVersion 1.0.0"),
        (lambda root: (root / "index.json").write_text("{not json"), "index.json is not valid JSON"),
        (lambda root: _rewrite_index(root, _second_manifest), "lists 2 manifests, not exactly one"),
        (lambda root: _rewrite_index(root, lambda i: i.update(manifests=[])), "lists 0 manifests"),
        (lambda root: _rewrite_index(root, _descriptor("digest", "md5:abc")), "has no sha256 digest"),
        (lambda root: _rewrite_index(root, _descriptor("size", -1)), "has no valid size"),
        (
            lambda root: _rewrite_index(root, _descriptor("mediaType", "application/vnd.oci.image.index.v1+json")),
            "not an image manifest",
        ),
        (lambda root: _blob(root, LAYERS[0]).unlink(), "named by the manifest is missing"),
        (lambda root: _blob(root, CONFIG).unlink(), "named by the manifest is missing"),
    ],
)
def test_a_malformed_layout_is_refused_with_what_is_wrong(
    layout_dir: Path, damage: Callable[[Path], object], message: str
) -> None:
    damage(layout_dir)
    with pytest.raises(ArtifactError) as caught:
        OciLayout.open(layout_dir)
    assert not isinstance(caught.value, ArtifactCorrupted)
    assert message in caught.value.message
    assert str(layout_dir) in caught.value.message
    assert caught.value.exit_code == 3 and "terminai-sandbox build" in caught.value.hint


def test_a_manifest_whose_bytes_changed_is_corrupted(layout_dir: Path) -> None:
    layout = OciLayout.open(layout_dir)
    path = layout.blob_path(layout.manifest_digest)
    path.write_bytes(layout.manifest_bytes.replace(b"schemaVersion", b"schemaversion"))
    with pytest.raises(ArtifactCorrupted, match=r"the image manifest .* is corrupted"):
        OciLayout.open(layout_dir)


def test_a_manifest_of_another_size_than_the_index_says_is_corrupted(layout_dir: Path) -> None:
    _rewrite_index(layout_dir, _descriptor("size", 1))
    with pytest.raises(ArtifactCorrupted, match=r"index\.json says 1"):
        OciLayout.open(layout_dir)


def test_blobs_are_checked_when_read_and_layers_when_verified(layout_dir: Path) -> None:
    layout = OciLayout.open(layout_dir)
    _blob(layout_dir, CONFIG).write_bytes(CONFIG + b" ")
    with pytest.raises(ArtifactCorrupted, match="is corrupted"):
        layout.image_config()
    _blob(layout_dir, LAYERS[1]).write_bytes(b"tampered")
    with pytest.raises(ArtifactCorrupted, match=f"layer blob {_digest(LAYERS[1])} is corrupted"):
        layout.verify()


def test_only_sha256_digests_name_blobs(layout_dir: Path) -> None:
    layout = OciLayout.open(layout_dir)
    for bad in ("sha256:../../etc/passwd", "sha512:" + "0" * 128, "sha256:" + "A" * 64):
        with pytest.raises(ArtifactError, match="is not a sha256 digest"):
            layout.blob_path(bad)


def test_the_offline_store_refuses_a_release_whose_layout_is_damaged(tmp_path: Path) -> None:
    from terminai_sandbox.errors import VerificationError
    from terminai_sandbox.signing.store import OfflineStore

    digest = write_layout(tmp_path / "oci", config=CONFIG, layers=LAYERS)
    (tmp_path / "signatures.json").write_text(json.dumps({"digest": digest, "bundles": ["b"]}))
    assert OfflineStore(tmp_path).bundles(digest) == ["b"]
    with pytest.raises(VerificationError, match=f"holds image {digest}, not sha256:0"):
        OfflineStore(tmp_path).bundles("sha256:" + "0" * 64)
    manifest = OciLayout.open(tmp_path / "oci").blob_path(digest)
    manifest.write_bytes(manifest.read_bytes() + b" ")
    with pytest.raises(VerificationError, match=r"step 3: the image in .* is corrupted"):
        OfflineStore(tmp_path).bundles(digest)
    (tmp_path / "oci" / "index.json").unlink()
    with pytest.raises(VerificationError, match="is not a release directory with an OCI layout"):
        OfflineStore(tmp_path).bundles(digest)
