"""Image config, manifest and the two on-disk forms: an OCI image layout and a docker archive.

JSON is canonical (sorted keys, compact, UTF-8) so identical inputs give identical
digests. The OCI layout (gzip layers) is what gets pushed blob by blob; the docker
archive (``manifest.json`` + config + uncompressed layers) is what ``docker load``
takes (Docker 20.10 rejects a pure OCI layout tar). Both carry the same config, so the
engine's image id equals the config digest.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tarfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from terminai_sandbox.layers import Layer

MEDIA_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MEDIA_CONFIG = "application/vnd.oci.image.config.v1+json"
MEDIA_LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
MEDIA_INDEX = "application/vnd.oci.image.index.v1+json"


def link_or_copy(source: str | Path, target: str | Path) -> None:
    """Place a blob by hard link, or copy it where the file system has none. Blobs are
    content-addressed and never rewritten in place, so sharing the inode changes no byte."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def canonical(data: Any) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def digest_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def iso(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def make_config(
    *,
    layers: Sequence[Layer],
    history: Sequence[str],
    user: str,
    env: Sequence[str],
    entrypoint: Sequence[str],
    cmd: Sequence[str],
    workdir: str,
    labels: dict[str, str],
    source_date_epoch: int,
    architecture: str,
) -> bytes:
    created = iso(source_date_epoch)
    config = {
        "architecture": architecture,
        "os": "linux",
        "created": created,
        "config": {
            "User": user,
            "Env": list(env),
            "Entrypoint": list(entrypoint),
            "Cmd": list(cmd),
            "WorkingDir": workdir,
            "Labels": dict(sorted(labels.items())),
        },
        "rootfs": {"type": "layers", "diff_ids": [layer.diff_id for layer in layers]},
        "history": [{"created": created, "created_by": step} for step in history],
    }
    return canonical(config)


def make_manifest(config: bytes, layers: Sequence[Layer], annotations: dict[str, str]) -> bytes:
    manifest = {
        "schemaVersion": 2,
        "mediaType": MEDIA_MANIFEST,
        "config": {"mediaType": MEDIA_CONFIG, "digest": digest_of(config), "size": len(config)},
        "layers": [
            {"mediaType": MEDIA_LAYER_GZIP, "digest": layer.digest, "size": layer.gzip_size} for layer in layers
        ],
        "annotations": dict(sorted(annotations.items())),
    }
    return canonical(manifest)


def _blob(root: Path, digest: str) -> Path:
    return root / "blobs" / "sha256" / digest.removeprefix("sha256:")


def write_oci_layout(root: Path, *, config: bytes, manifest: bytes, layers: Sequence[Layer], ref_name: str) -> str:
    """Write an OCI image layout at ``root``; return the manifest digest."""
    if root.exists():
        shutil.rmtree(root)
    (root / "blobs" / "sha256").mkdir(parents=True)
    (root / "oci-layout").write_bytes(canonical({"imageLayoutVersion": "1.0.0"}))
    _blob(root, digest_of(config)).write_bytes(config)
    _blob(root, digest_of(manifest)).write_bytes(manifest)
    for layer in layers:
        assert layer.gzip is not None and layer.digest is not None
        link_or_copy(layer.gzip, _blob(root, layer.digest))
    index = {
        "schemaVersion": 2,
        "mediaType": MEDIA_INDEX,
        "manifests": [
            {
                "mediaType": MEDIA_MANIFEST,
                "digest": digest_of(manifest),
                "size": len(manifest),
                "annotations": {"org.opencontainers.image.ref.name": ref_name},
            }
        ],
    }
    (root / "index.json").write_bytes(canonical(index))
    return digest_of(manifest)


def write_docker_archive(
    path: Path, *, config: bytes, layers: Sequence[Layer], repo_tag: str, source_date_epoch: int
) -> None:
    """Write a ``docker load``-able archive with uncompressed layers (deterministic tar)."""
    config_name = f"blobs/sha256/{digest_of(config).removeprefix('sha256:')}"
    layer_names = [f"blobs/sha256/{layer.diff_id.removeprefix('sha256:')}" for layer in layers]
    manifest = canonical([{"Config": config_name, "RepoTags": [repo_tag], "Layers": layer_names}])
    with path.open("wb") as out, tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:

        def add(name: str, data: bytes | None = None, source: Path | None = None) -> None:
            info = tarfile.TarInfo(name)
            info.mtime, info.mode, info.uname, info.gname = source_date_epoch, 0o644, "", ""
            if source is not None:
                info.size = source.stat().st_size
                with source.open("rb") as handle:
                    tar.addfile(info, handle)
            else:
                assert data is not None
                info.size = len(data)

                tar.addfile(info, io.BytesIO(data))

        seen = set()
        entries: list[tuple[str, bytes | None, Path | None]] = [(config_name, config, None)]
        for name, layer in zip(layer_names, layers, strict=True):
            if name not in seen:
                entries.append((name, None, layer.tar))
                seen.add(name)
        entries.append(("manifest.json", manifest, None))
        for name, data, source in sorted(entries, key=lambda e: e[0]):
            add(name, data, source)
