"""The per-platform work of a multi-platform release (``release --platforms A,B``).

A release of an image index runs the same eight steps as a release of one image
(:mod:`.steps`); the state's digest is the index's. Where a step works on images rather
than on the index, it does that work once per platform, here:

* ``contracts``: the suite inside each platform's image (a foreign one under qemu-user;
  what emulation cannot hold is recorded by name, as ``contracts`` reports it);
* ``describe``: each platform's SBOM (from that platform's own package databases and
  locks) and SLSA provenance (from that platform's build plan), one pair of files each;
* ``sign``: each platform manifest signed, its SBOM and provenance attested on its own
  digest, and then the index signed (last, so an index signature never vouches for a
  platform that is not signed yet).

The files of platform ``linux/arm64`` live under ``dist/X.Y.Z/linux-arm64/``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from terminai_apts import durable

from terminai_sandbox.artifacts.oci_layout import IndexLayout, OciLayout
from terminai_sandbox.signing.formats import dsse

SBOM_FILE = "sbom.cdx.json"
PROVENANCE_FILE = "provenance.slsa.json"


class PlatformBuild(Protocol):
    """One platform's build, as :class:`~terminai_sandbox.assemble.BuildResult` gives it."""

    @property
    def platform(self) -> str: ...
    @property
    def oci_layout(self) -> OciLayout: ...
    @property
    def manifest_digest(self) -> str: ...
    @property
    def config_digest(self) -> str: ...


@runtime_checkable
class BuiltIndex(Protocol):
    """A multi-platform build, as :class:`~terminai_sandbox.assemble.platforms.IndexResult` gives it."""

    @property
    def index_digest(self) -> str: ...
    @property
    def layout(self) -> Path: ...
    @property
    def platforms(self) -> Sequence[PlatformBuild]: ...


def platform_dir(platform: str) -> str:
    """``linux/arm64`` -> ``linux-arm64``: where a platform's release files live."""
    return platform.replace("/", "-")


def digests_of(built: BuiltIndex) -> dict[str, dict[str, str]]:
    """The state's ``platforms``: each platform's manifest and config digest, in the index's order."""
    return {
        each.platform: {"manifest_digest": each.manifest_digest, "config_digest": each.config_digest}
        for each in built.platforms
    }


def images_by_platform(layout: IndexLayout) -> dict[str, OciLayout]:
    """Each image of the index by the platform its own config names."""
    out: dict[str, OciLayout] = {}
    for image in layout.images:
        config = image.image_config()
        out[f"{config.get('os')}/{config.get('architecture')}"] = image
    return out


def layout_problem(layout: IndexLayout, platforms: Mapping[str, Mapping[str, str]]) -> str | None:
    """Why the index layout is not the one the state describes (None when it is)."""
    found = {name: image.manifest_digest for name, image in images_by_platform(layout).items()}
    wanted = {name: digests["manifest_digest"] for name, digests in platforms.items()}
    if found != wanted:
        return f"its platforms are {found}, the release state's {wanted}"
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class Described:
    """One platform's SBOM and provenance, written under the platform's folder."""

    sbom: Path
    provenance: Path


def write_described(target: Path, platform: str, sbom_text: str, provenance_of: Callable[[Path], str]) -> Described:
    """Write the platform's SBOM, then its provenance (which records the SBOM by digest)."""
    folder = target / platform_dir(platform)
    folder.mkdir(parents=True, exist_ok=True)
    sbom = folder / SBOM_FILE
    durable.write(sbom, sbom_text.encode())
    provenance = folder / PROVENANCE_FILE
    durable.write(provenance, provenance_of(sbom).encode())
    return Described(sbom=sbom, provenance=provenance)


def relative(target: Path, path: Path) -> str:
    """A release file's path as records name it: relative to ``dist/X.Y.Z``."""
    return path.relative_to(target).as_posix()


def predicates_of(sbom: Path, provenance: Path) -> list[tuple[str, Any]]:
    """(predicate type, predicate) of a platform's two attestations, read from its files."""
    return [
        (dsse.PREDICATE_TYPES["cyclonedx"], json.loads(sbom.read_text())),
        (dsse.PREDICATE_TYPES["slsaprovenance1"], json.loads(provenance.read_text())),
    ]
