"""A small single-layer image pushed to a loopback registry (no engine, no build)."""

from __future__ import annotations

from pathlib import Path

from terminai_sandbox.artifacts.oci_layout import OciLayout
from terminai_sandbox.registry import RegistryClient

from tests.fixtures.oci import write_layout

CONFIG = b'{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}'


def push_tiny(
    client: RegistryClient, repo: str, workdir: Path, *, content: bytes = b"hello", tag: str | None = None
) -> str:
    """Push a one-layer image holding ``content`` to ``repo``; return its manifest digest."""
    layout = workdir / f"layout-{repo.replace('/', '-')}-{len(content)}-{content[:8].hex()}"
    if not layout.exists():
        write_layout(layout, config=CONFIG, layers=[content])
    return client.push_layout(OciLayout.open(layout), repo, tag=tag).digest
