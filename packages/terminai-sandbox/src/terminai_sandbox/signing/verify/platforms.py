"""Step 1i: the rules an image index must keep before any of its platforms can be trusted.

A multi-platform release is one OCI image index (or Docker manifest list) naming one image
manifest per platform. Verification trusts an index only when the index itself is signed
and the platform manifest that will run is listed in it and signed too (see
:mod:`.image`). This module holds the part that needs no cryptography: reading the index
strictly and choosing the platform, so that the manifest chosen is the one and only
manifest the signed index names for that platform.

Refused, each with its own message (exit 11):

* a child that is itself an index (nesting: the platform would be chosen by a document the
  rule below never read);
* the same child digest listed twice, or two children for the same platform (which one a
  client picks would then depend on the client);
* a platform with ``os.version`` or ``os.features`` (Windows selectors; on Linux they only
  serve to make one entry look more specific than another), or a ``variant`` that is not
  the one canonical value for its architecture (``arm64`` may say ``v8``, ``arm`` must say
  ``v6``, ``v7`` or ``v8``; every other architecture none), or any other unknown field;
* a child without a platform, or with a platform that is not ``os/architecture`` text.

Attestation manifests that BuildKit lists with ``vnd.docker.reference.type`` annotations
and platform ``unknown/unknown`` are not platforms; they are refused too, since we never
publish them and a verifier that skipped them would be reading an index it does not
understand.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from terminai_sandbox.errors import VerificationError
from terminai_sandbox.oci_media import DOCKER_LIST, DOCKER_MANIFEST, OCI_INDEX, OCI_MANIFEST

INDEX_TYPES = (OCI_INDEX, DOCKER_LIST)
MANIFEST_TYPES = (OCI_MANIFEST, DOCKER_MANIFEST)
_VARIANTS = {"arm64": ("v8",), "arm": ("v6", "v7", "v8")}
_PLATFORM_KEYS = {"os", "architecture", "variant"}
_ATTESTATION_ANNOTATION = "vnd.docker.reference.type"
# What the engines report (Go's GOARCH, or uname -m on some podman builds) -> OCI's names.
_ENGINE_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "armv7l": "arm"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Platform:
    """``os/architecture[/variant]``; arm64's optional ``v8`` is dropped so both spellings compare equal."""

    os: str
    architecture: str
    variant: str | None = None

    @classmethod
    def parse(cls, text: str) -> Platform:
        """``linux/amd64``, ``linux/arm64``, ``linux/arm/v7``."""
        parts = text.strip().split("/")
        if len(parts) not in (2, 3) or not all(parts):
            raise VerificationError(
                f"{text!r} is not a platform", hint="name a platform as os/architecture, e.g. linux/amd64"
            )
        return cls.of(parts[0], parts[1], parts[2] if len(parts) == 3 else None)

    @classmethod
    def of(cls, os_name: str, architecture: str, variant: str | None = None) -> Platform:
        architecture = _ENGINE_ARCH.get(architecture, architecture)
        if architecture == "arm64" and variant == "v8":
            variant = None
        return cls(os=os_name, architecture=architecture, variant=variant)

    def __str__(self) -> str:
        return "/".join(p for p in (self.os, self.architecture, self.variant) if p)


@dataclass(frozen=True, slots=True, kw_only=True)
class PlatformManifest:
    platform: Platform
    digest: str
    media_type: str
    size: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageIndex:
    """An index that kept every rule of step 1i: one manifest per platform, none nested."""

    digest: str
    children: tuple[PlatformManifest, ...]

    @property
    def platforms(self) -> tuple[Platform, ...]:
        return tuple(child.platform for child in self.children)

    def select(self, wanted: Platform) -> PlatformManifest:
        """The one manifest listed for ``wanted``; refused, naming what the index has, when none is."""
        for child in self.children:
            if child.platform == wanted:
                return child
        have = ", ".join(str(p) for p in self.platforms)
        raise VerificationError(
            f"step 1i: the index {self.digest} has no manifest for {wanted} (it has: {have})",
            hint=f"run on a host of one of its platforms ({have}), or use a release built for {wanted}",
        )


def is_index(media_type: str, body: bytes) -> bool:
    if media_type in INDEX_TYPES:
        return True
    if media_type in MANIFEST_TYPES:
        return False
    try:
        document = json.loads(body)
    except ValueError:
        return False
    return isinstance(document, dict) and document.get("mediaType") in INDEX_TYPES


def parse_index(body: bytes, digest: str) -> ImageIndex:
    """The index in ``body`` (whose bytes the registry client already checked against ``digest``)."""
    try:
        document = json.loads(body)
    except ValueError:
        raise VerificationError(f"step 1i: the index {digest} is not JSON") from None
    manifests = document.get("manifests") if isinstance(document, dict) else None
    if not isinstance(manifests, list) or not manifests:
        raise VerificationError(f"step 1i: the index {digest} lists no manifests")
    children = tuple(_child(entry, digest, n) for n, entry in enumerate(manifests))
    seen_digests: set[str] = set()
    seen_platforms: set[Platform] = set()
    for child in children:
        if child.digest in seen_digests:
            raise VerificationError(
                f"step 1i: the index {digest} lists {child.digest} more than once (again as {child.platform})",
                hint="an index names each platform manifest once; do not run this image",
            )
        if child.platform in seen_platforms:
            raise VerificationError(
                f"step 1i: the index {digest} lists two manifests for {child.platform}",
                hint="which one runs would depend on the client; do not run this image",
            )
        seen_digests.add(child.digest)
        seen_platforms.add(child.platform)
    return ImageIndex(digest=digest, children=children)


def _child(entry: Any, index: str, n: int) -> PlatformManifest:
    where = f"step 1i: entry {n} of the index {index}"
    if not isinstance(entry, dict):
        raise VerificationError(f"{where} is not a descriptor")
    media_type, child, size = entry.get("mediaType"), entry.get("digest"), entry.get("size")
    if media_type in INDEX_TYPES:
        raise VerificationError(
            f"{where} ({child}) is itself an index: nested indexes are refused",
            hint="a release index lists platform manifests only; do not run this image",
        )
    if media_type not in MANIFEST_TYPES:
        raise VerificationError(f"{where} ({child}) is a {media_type!r}, not an image manifest")
    if not isinstance(child, str) or not child.startswith("sha256:") or not isinstance(size, int):
        raise VerificationError(f"{where} has no sha256 digest and size")
    annotations = entry.get("annotations")
    if isinstance(annotations, dict) and _ATTESTATION_ANNOTATION in annotations:
        raise VerificationError(
            f"{where} ({child}) is a BuildKit attestation manifest, not a platform",
            hint="our releases attach attestations as cosign artifacts; this index was not made by our release",
        )
    platform = _platform(entry.get("platform"), where)
    return PlatformManifest(platform=platform, digest=child, media_type=media_type, size=size)


def _platform(value: Any, where: str) -> Platform:
    if not isinstance(value, dict):
        raise VerificationError(f"{where} names no platform")
    tricks = sorted(set(value) - _PLATFORM_KEYS)
    if tricks:
        raise VerificationError(
            f"{where} has platform fields {', '.join(tricks)}: "
            "only os, architecture and a canonical variant are accepted",
            hint="os.version and os.features select Windows builds; on Linux they only make one entry outrank another",
        )
    os_name, architecture, variant = value.get("os"), value.get("architecture"), value.get("variant")
    if not isinstance(os_name, str) or not isinstance(architecture, str) or not os_name or not architecture:
        raise VerificationError(f"{where} has no os and architecture")
    if "unknown" in (os_name, architecture):
        raise VerificationError(f"{where} is for platform {os_name}/{architecture}: not a platform anything runs")
    if variant is not None and (not isinstance(variant, str) or variant not in _VARIANTS.get(architecture, ())):
        allowed = " or ".join(_VARIANTS.get(architecture, ())) or "none"
        raise VerificationError(
            f"{where} claims {os_name}/{architecture} variant {variant!r} (allowed: {allowed})",
            hint="a variant that is not the architecture's own would let one entry outrank another",
        )
    return Platform.of(os_name, architecture, variant)
