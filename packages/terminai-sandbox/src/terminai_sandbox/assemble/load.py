"""Load a built image into the engine and prove the engine holds exactly the assembled config."""

from __future__ import annotations

from pathlib import Path

from terminai_sandbox.engine.client import DockerApi, connect
from terminai_sandbox.errors import BuildError


def load(archive: Path, reference: str, config_digest: str) -> DockerApi:
    """``docker load`` the archive; fail unless the engine's image id is the config digest."""
    engine = connect()
    engine.load_image(archive)
    image = engine.inspect_image(reference)
    found = None if image is None else str(image["Id"])
    if found != config_digest:
        raise BuildError(
            f"the engine loaded {reference} as {found}, but the assembled config is {config_digest}",
            hint="another image may hold this tag; remove it and build again",
        )
    return engine
