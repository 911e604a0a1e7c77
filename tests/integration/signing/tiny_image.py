"""A small single-layer image pushed to a loopback registry (no engine, no build)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from terminai_sandbox.artifacts.oci_layout import OciLayout
from terminai_sandbox.registry import RegistryClient

from tests.fixtures.oci import write_layout

CONFIG = b'{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}'


def push_tiny(
    client: RegistryClient,
    repo: str,
    workdir: Path,
    *,
    content: bytes = b"hello",
    tag: str | None = None,
    config: bytes = CONFIG,
) -> str:
    """Push a one-layer image holding ``content`` to ``repo``; return its manifest digest."""
    suffix = "" if config == CONFIG else "-" + hashlib.sha256(config).hexdigest()[:12]
    layout = workdir / f"layout-{repo.replace('/', '-')}-{len(content)}-{content[:8].hex()}{suffix}"
    if not layout.exists():
        write_layout(layout, config=config, layers=[content])
    return client.push_layout(OciLayout.open(layout), repo, tag=tag).digest
