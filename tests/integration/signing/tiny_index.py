"""Small multi-platform indexes pushed to a loopback registry (no engine, no build).

Each platform image is one layer under a config naming its platform. The arm64 image is a
fair stand-in for a real arm64 build as far as trust is concerned: verification reads the
index, the manifests, their configs' ``os``/``architecture`` and the signatures, all by
digest, and never executes a byte of a layer; what differs in a real arm64 image (the
layer's ELF files) changes digests, not the rules.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from terminai_sandbox.oci_media import OCI_INDEX, OCI_MANIFEST, sha256_digest
from terminai_sandbox.registry import RegistryClient

from tests.integration.signing.tiny_image import push_tiny


def config(os_name: str, arch: str, variant: str | None = None) -> bytes:
    document: dict[str, Any] = {"architecture": arch, "os": os_name, "rootfs": {"type": "layers", "diff_ids": []}}
    if variant:
        document["variant"] = variant
    return json.dumps(document, sort_keys=True).encode()


def push_platform(client: RegistryClient, repo: str, work: Path, platform: str, *, content: bytes) -> str:
    """Push a one-layer image whose config says ``platform`` (``os/arch[/variant]``); its digest."""
    os_name, arch, *variant = platform.split("/")
    return push_tiny(client, repo, work, content=content, config=config(os_name, arch, *variant))


def descriptor(client: RegistryClient, repo: str, digest: str, platform: Mapping[str, Any] | None) -> dict[str, Any]:
    body, media, _ = client.get_manifest(repo, digest)
    out: dict[str, Any] = {"mediaType": media, "digest": digest, "size": len(body)}
    if platform is not None:
        out["platform"] = dict(platform)
    return out


def plat(text: str, **extra: Any) -> dict[str, Any]:
    os_name, arch, *variant = text.split("/")
    return {"os": os_name, "architecture": arch, **({"variant": variant[0]} if variant else {}), **extra}


def push_index(client: RegistryClient, repo: str, entries: Sequence[dict[str, Any]], *, tag: str | None = None) -> str:
    """Put an OCI image index listing ``entries`` (descriptors); its digest."""
    body = json.dumps({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": list(entries)}, indent=2).encode()
    digest = client.put_manifest(repo, sha256_digest(body), body, OCI_INDEX)
    if tag:
        client.put_manifest(repo, tag, body, OCI_INDEX)
    return digest


__all__ = ["OCI_MANIFEST", "config", "descriptor", "plat", "push_index", "push_platform"]
