"""Per-project layer: ``.terminai/sandbox.Dockerfile`` built FROM the verified digest.

The Dockerfile must start with ``ARG BASE_IMAGE`` / ``FROM ${BASE_IMAGE}``: the launcher
passes the verified ``repo@sha256:…`` as that build argument, so the project layer can only
extend the image that passed verification. The result is tagged under a project-specific
name (never the official tag), cached by the hash of the Dockerfile and the base digest,
built without network, and labelled with what it derives from.
"""

from __future__ import annotations

import re
from pathlib import Path

from terminai_sandbox.errors import LaunchError
from terminai_sandbox.launch.engines import ImageFacts

TYPE_CHECKING = False  # not `from typing import ...`: a launch never imports typing (~3 ms)
if TYPE_CHECKING:
    from terminai_sandbox.launch.engines import LaunchEngine

DOCKERFILE = Path(".terminai") / "sandbox.Dockerfile"
DERIVED_LABEL = "dev.terminai.derived-from"
_FROM = re.compile(r"^\s*FROM\s+(\S+)", re.IGNORECASE | re.MULTILINE)


def project_dockerfile(project: Path) -> Path | None:
    path = project / DOCKERFILE
    return path if path.is_file() else None


def build_project_layer(
    engine: LaunchEngine, project: Path, base_pinned: str, base_digest: str
) -> tuple[ImageFacts, bool]:
    """Build (or reuse) the project image; return (image, built_now)."""
    dockerfile = project / DOCKERFILE
    text = dockerfile.read_text()
    froms = _FROM.findall(text)
    if not froms or froms[0] not in ("${BASE_IMAGE}", "$BASE_IMAGE"):
        raise LaunchError(
            f"{dockerfile} must start FROM ${{BASE_IMAGE}} (found {froms[0] if froms else 'no FROM'})",
            hint="the launcher passes the verified image as BASE_IMAGE; add 'ARG BASE_IMAGE' first",
        )
    import hashlib  # noqa: PLC0415  (a project layer only: hashlib loads OpenSSL)

    key = hashlib.sha256(text.encode() + b"\0" + base_digest.encode()).hexdigest()[:16]
    name = "terminai-project/" + hashlib.sha256(str(project.resolve()).encode()).hexdigest()[:12]
    tag = f"{name}:{key}"
    existing = engine.inspect(tag)
    # A tag can be re-pointed by anyone with engine access: reuse it only if it says what it derives from.
    if existing is not None and existing.labels.get(DERIVED_LABEL) == base_digest:
        return existing, False
    built = engine.build(
        context=project,
        dockerfile=str(DOCKERFILE),
        build_args={"BASE_IMAGE": base_pinned},
        tag=tag,
        labels={DERIVED_LABEL: base_digest, "dev.terminai.project": str(project.resolve())},
    )
    return built, True
