"""One OCI layout holding an image index over the platform images of one build.

Each platform is built on its own into a single-image layout (what a one-platform build
writes, byte for byte); this module merges their blobs into one layout whose
``index.json`` names one image index (``application/vnd.oci.image.index.v1+json``), which
lists each platform's manifest with its ``platform`` object, in the order image.toml
declares the platforms. The index is canonical JSON of the manifests' digests, sizes and
platforms only, so the same platform manifests always give the same index digest.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from terminai_sandbox.artifacts.oci_layout import OciLayout
from terminai_sandbox.assemble.oci import MEDIA_INDEX, MEDIA_MANIFEST, canonical, digest_of, link_or_copy
from terminai_sandbox.errors import BuildError

REF_NAME = "org.opencontainers.image.ref.name"


@dataclass(frozen=True, slots=True, kw_only=True)
class PlatformManifest:
    """One entry of the index: the platform and the manifest that serves it."""

    platform: str  # os/arch
    digest: str
    size: int

    def descriptor(self) -> dict[str, Any]:
        os_name, architecture = self.platform.split("/", 1)
        return {
            "mediaType": MEDIA_MANIFEST,
            "digest": self.digest,
            "size": self.size,
            "platform": {"architecture": architecture, "os": os_name},
        }


def make_index(entries: Sequence[PlatformManifest]) -> bytes:
    """The image index listing ``entries`` in the given order."""
    platforms = [entry.platform for entry in entries]
    if len(set(platforms)) != len(platforms):
        raise BuildError(f"an image index lists each platform once, not {', '.join(platforms)}")
    return canonical({"schemaVersion": 2, "mediaType": MEDIA_INDEX, "manifests": [e.descriptor() for e in entries]})


def entry_of(layout: OciLayout) -> PlatformManifest:
    """The index entry of a single-image layout, its platform read from the image config."""
    config = layout.image_config()
    os_name, architecture = config.get("os"), config.get("architecture")
    if not isinstance(os_name, str) or not isinstance(architecture, str):
        raise BuildError(f"{layout.root}: the image config names no os and architecture")
    raw = layout.read_blob(layout.manifest_digest)
    return PlatformManifest(platform=f"{os_name}/{architecture}", digest=layout.manifest_digest, size=len(raw))


def _link(source: Path, target: Path) -> None:
    if not target.exists():
        link_or_copy(source, target)


def write_index_layout(root: Path, layouts: Sequence[OciLayout], *, ref_name: str) -> str:
    """Write the layout at ``root`` over ``layouts`` (one per platform); return the index digest."""
    entries = [entry_of(layout) for layout in layouts]
    index = make_index(entries)
    if root.exists():
        shutil.rmtree(root)
    blobs = root / "blobs" / "sha256"
    blobs.mkdir(parents=True)
    (root / "oci-layout").write_bytes(canonical({"imageLayoutVersion": "1.0.0"}))
    for layout in layouts:
        # Every blob each platform's manifest reaches: itself, its config, its layers.
        for digest in (layout.manifest_digest, layout.config_digest):
            _link(layout.blob_path(digest), blobs / digest.removeprefix("sha256:"))
        for path in layout.layer_paths():
            _link(path, blobs / path.name)
    digest = digest_of(index)
    (blobs / digest.removeprefix("sha256:")).write_bytes(index)
    top = {
        "schemaVersion": 2,
        "mediaType": MEDIA_INDEX,
        "manifests": [
            {"mediaType": MEDIA_INDEX, "digest": digest, "size": len(index), "annotations": {REF_NAME: ref_name}}
        ],
    }
    (root / "index.json").write_bytes(canonical(top))
    return digest
