"""An OCI image layout holding one image, opened and checked once, then read by digest.

``OciLayout.open(root)`` is the only code that knows the layout's shape (the
`image-layout spec <https://github.com/opencontainers/image-spec/blob/main/image-layout.md>`_):
``oci-layout`` (version 1.0.0), ``index.json`` naming exactly one image manifest, and
``blobs/sha256/<hex>``. Opening reads the index and the manifest (checking the manifest's
bytes against its digest and its size) and checks that the config and every layer blob
exist. Every blob read through :meth:`OciLayout.read_blob` is checked against its digest;
:meth:`OciLayout.verify` streams the layers through sha256 too. A malformed layout is an
:class:`~terminai_sandbox.errors.ArtifactError` naming what is wrong; bytes that do not
match their digest are :class:`~terminai_sandbox.errors.ArtifactCorrupted`.

A multi-platform build writes the other shape the spec allows: ``index.json`` naming one
image index (``application/vnd.oci.image.index.v1+json``) whose entries are the platform
manifests. :meth:`IndexLayout.open` reads it: the index's bytes as stored (their digest is
the release's), and each platform as an :class:`OciLayout` over the same blobs. A nested
index is refused here too.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from terminai_sandbox.errors import ArtifactCorrupted, ArtifactError
from terminai_sandbox.oci_media import DOCKER_MANIFEST, OCI_INDEX, OCI_MANIFEST, sha256_digest

LAYOUT_VERSION = "1.0.0"
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
_MANIFEST_TYPES = (OCI_MANIFEST, DOCKER_MANIFEST)
_HINT = "pass the oci/ directory of a build (e.g. dist/X.Y.Z/oci), or rebuild it with 'terminai-sandbox build'"


@dataclass(frozen=True, slots=True, kw_only=True)
class Descriptor:
    """What an index or manifest says of one blob: its media type, digest and size."""

    media_type: str
    digest: str
    size: int

    @classmethod
    def parse(cls, value: object, *, where: str) -> Descriptor:
        if not isinstance(value, Mapping):
            raise ArtifactError(f"{where} is not a descriptor (a JSON object)", hint=_HINT)
        media_type, digest, size = value.get("mediaType"), value.get("digest"), value.get("size")
        if not isinstance(digest, str) or not _DIGEST.match(digest):
            raise ArtifactError(f"{where} has no sha256 digest (got {digest!r})", hint=_HINT)
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise ArtifactError(f"{where} has no valid size (got {size!r})", hint=_HINT)
        if not isinstance(media_type, str) or not media_type:
            raise ArtifactError(f"{where} has no media type", hint=_HINT)
        return cls(media_type=media_type, digest=digest, size=size)


@dataclass(frozen=True, slots=True, kw_only=True)
class OciLayout:
    """One image in an OCI layout: its manifest (bytes as stored), config and layer descriptors."""

    root: Path
    manifest: Descriptor
    manifest_bytes: bytes
    config: Descriptor
    layers: tuple[Descriptor, ...]

    @classmethod
    def open(cls, root: Path) -> OciLayout:
        """Open and check the layout at ``root`` (see the module docstring for what is checked)."""
        marker = _read_json(root, "oci-layout")
        if not isinstance(marker, Mapping) or marker.get("imageLayoutVersion") != LAYOUT_VERSION:
            raise ArtifactError(
                f"{root} is not an OCI image layout: oci-layout does not say imageLayoutVersion {LAYOUT_VERSION}",
                hint=_HINT,
            )
        index = _read_json(root, "index.json")
        manifests = index.get("manifests") if isinstance(index, Mapping) else None
        if not isinstance(manifests, list) or len(manifests) != 1:
            count = len(manifests) if isinstance(manifests, list) else "no"
            raise ArtifactError(
                f"{root} is not a single-image OCI layout: index.json lists {count} manifests, not exactly one",
                hint=_HINT,
            )
        descriptor = Descriptor.parse(manifests[0], where=f"{root}/index.json manifests[0]")
        return cls.image_at(root, descriptor)

    @classmethod
    def image_at(cls, root: Path, descriptor: Descriptor) -> OciLayout:
        """The image whose manifest ``descriptor`` names, in the layout at ``root`` (a platform of an index too)."""
        if descriptor.media_type not in _MANIFEST_TYPES:
            raise ArtifactError(
                f"{root}: index.json names a {descriptor.media_type}, not an image manifest", hint=_HINT
            )
        data = _blob(root, descriptor.digest, what="the image manifest")
        if len(data) != descriptor.size:
            raise ArtifactCorrupted(
                f"{root}: the image manifest is {len(data)} bytes, index.json says {descriptor.size}"
            )
        manifest = _json_object(data, f"{root}: the image manifest {descriptor.digest}")
        config = Descriptor.parse(manifest.get("config"), where=f"{root}: the manifest's config")
        raw_layers = manifest.get("layers")
        if not isinstance(raw_layers, list):
            raise ArtifactError(f"{root}: the image manifest has no layers list", hint=_HINT)
        layers = tuple(
            Descriptor.parse(item, where=f"{root}: the manifest's layers[{n}]") for n, item in enumerate(raw_layers)
        )
        layout = cls(root=root, manifest=descriptor, manifest_bytes=data, config=config, layers=layers)
        for item in (config, *layers):
            if not layout.blob_path(item.digest).is_file():
                raise ArtifactError(f"{root}: blob {item.digest} named by the manifest is missing", hint=_HINT)
        return layout

    @property
    def manifest_digest(self) -> str:
        return self.manifest.digest

    @property
    def config_digest(self) -> str:
        return self.config.digest

    def blob_path(self, digest: str) -> Path:
        """Where the blob ``digest`` lives (for streaming readers; :meth:`read_blob` checks the bytes)."""
        if not _DIGEST.match(digest):
            raise ArtifactError(f"{digest!r} is not a sha256 digest", hint=_HINT)
        return self.root / "blobs" / "sha256" / digest.removeprefix("sha256:")

    def layer_paths(self) -> tuple[Path, ...]:
        """The layer blobs in order, bottom first."""
        return tuple(self.blob_path(layer.digest) for layer in self.layers)

    def read_blob(self, digest: str) -> bytes:
        """A blob's bytes, checked against ``digest``."""
        return _blob(self.root, digest, what=f"blob {digest}")

    def image_config(self) -> Mapping[str, Any]:
        """The image config (checked against its digest), as a JSON object."""
        return _json_object(self.read_blob(self.config.digest), f"{self.root}: the image config")

    def labels(self) -> Mapping[str, str]:
        """The image config's labels (``config.Labels``); empty when it has none."""
        section = self.image_config().get("config") or {}
        labels = section.get("Labels") if isinstance(section, Mapping) else None
        if not isinstance(labels, Mapping):
            return {}
        return {str(k): str(v) for k, v in labels.items()}

    def verify(self) -> None:
        """Stream every layer blob through sha256; raise ArtifactCorrupted at the first mismatch."""
        for layer in self.layers:
            digest = hashlib.sha256()
            with self.blob_path(layer.digest).open("rb") as handle:
                for chunk in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(chunk)
            if f"sha256:{digest.hexdigest()}" != layer.digest:
                raise ArtifactCorrupted(f"{self.root}: layer blob {layer.digest} is corrupted (hashes differently)")


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexLayout:
    """A layout whose ``index.json`` names one image index over platform manifests."""

    root: Path
    index: Descriptor
    index_bytes: bytes
    images: tuple[OciLayout, ...]

    @classmethod
    def open(cls, root: Path) -> IndexLayout:
        marker = _read_json(root, "oci-layout")
        if not isinstance(marker, Mapping) or marker.get("imageLayoutVersion") != LAYOUT_VERSION:
            raise ArtifactError(f"{root} is not an OCI image layout (oci-layout)", hint=_HINT)
        top = _read_json(root, "index.json")
        manifests = top.get("manifests") if isinstance(top, Mapping) else None
        if not isinstance(manifests, list) or len(manifests) != 1:
            raise ArtifactError(f"{root}: index.json must name exactly one image index", hint=_HINT)
        descriptor = Descriptor.parse(manifests[0], where=f"{root}/index.json manifests[0]")
        if descriptor.media_type != OCI_INDEX:
            raise ArtifactError(f"{root}: index.json names a {descriptor.media_type}, not an image index", hint=_HINT)
        data = _blob(root, descriptor.digest, what="the image index")
        if len(data) != descriptor.size:
            raise ArtifactCorrupted(f"{root}: the image index is {len(data)} bytes, index.json says {descriptor.size}")
        entries = _json_object(data, f"{root}: the image index {descriptor.digest}").get("manifests")
        if not isinstance(entries, list) or not entries:
            raise ArtifactError(f"{root}: the image index lists no manifests", hint=_HINT)
        images = []
        for n, entry in enumerate(entries):
            child = Descriptor.parse(entry, where=f"{root}: the image index's manifests[{n}]")
            if child.media_type == OCI_INDEX:
                raise ArtifactError(f"{root}: the image index's manifests[{n}] is itself an index (nested)", hint=_HINT)
            images.append(OciLayout.image_at(root, child))
        return cls(root=root, index=descriptor, index_bytes=data, images=tuple(images))

    @property
    def index_digest(self) -> str:
        return self.index.digest


def is_index_layout(root: Path) -> bool:
    """True when ``index.json`` at ``root`` names an image index (checked again by :meth:`IndexLayout.open`)."""
    top = _read_json(root, "index.json")
    manifests = top.get("manifests") if isinstance(top, Mapping) else None
    return (
        isinstance(manifests, list)
        and len(manifests) == 1
        and isinstance(manifests[0], Mapping)
        and manifests[0].get("mediaType") == OCI_INDEX
    )


def _read_json(root: Path, name: str) -> object:
    path = root / name
    if path.exists() and not path.is_file():  # a FIFO or device would block or never end
        raise ArtifactError(f"{root} is not an OCI image layout: {name} is not a regular file", hint=_HINT)
    try:
        return json.loads(path.read_bytes())
    except FileNotFoundError:
        raise ArtifactError(f"{root} is not an OCI image layout (no {name})", hint=_HINT) from None
    except OSError as exc:
        problem = f"cannot read {name}: {exc.strerror}"
    except ValueError as exc:
        problem = f"{name} is not valid JSON: {exc}"
    raise ArtifactError(f"{root} is not an OCI image layout: {problem}", hint=_HINT)


def _blob(root: Path, digest: str, *, what: str) -> bytes:
    if not _DIGEST.match(digest):
        raise ArtifactError(f"{digest!r} is not a sha256 digest", hint=_HINT)
    path = root / "blobs" / "sha256" / digest.removeprefix("sha256:")
    try:
        if not path.is_file():  # missing, or a FIFO or device that would block
            raise FileNotFoundError(path)
        data = path.read_bytes()
    except OSError:
        raise ArtifactError(f"{root}: {what} ({digest}) is missing from blobs/sha256", hint=_HINT) from None
    if sha256_digest(data) != digest:
        raise ArtifactCorrupted(f"{root}: {what} ({digest}) is corrupted (hashes differently)")
    return data


def _json_object(data: bytes, what: str) -> Mapping[str, Any]:
    try:
        value = json.loads(data)
    except ValueError as exc:
        raise ArtifactError(f"{what} is not valid JSON: {exc}", hint=_HINT) from None
    if not isinstance(value, dict):
        raise ArtifactError(f"{what} is not a JSON object", hint=_HINT)
    return value
