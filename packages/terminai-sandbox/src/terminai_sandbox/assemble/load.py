"""Load a built image into the engine and prove the engine holds exactly the assembled config."""

from __future__ import annotations

from pathlib import Path

from terminai_sandbox.engine import Engine
from terminai_sandbox.errors import BuildError


def load(archive: Path, reference: str, config_digest: str) -> Engine:
    """``docker load`` the archive; fail unless the engine's image id is the config digest."""
    engine = Engine.connect()
    with archive.open("rb") as handle:
        engine.client.images.load(handle.read())
    image = engine.client.images.get(reference)
    if image.id != config_digest:
        raise BuildError(
            f"the engine loaded {reference} as {image.id}, but the assembled config is {config_digest}",
            hint="another image may hold this tag; remove it and build again",
        )
    return engine
