"""``release``: build → contracts → describe → push by digest → sign → verify → tag → release.json.

The steps (:mod:`.steps`) persist their outcomes in ``dist/X.Y.Z/release-state.json``
(:mod:`.state`), so CI runs them as separate jobs (``terminai-sandbox release STEP``) and
``terminai-sandbox release`` runs them all in one process: the same code either way. The
result is ``dist/X.Y.Z/release.json`` plus everything an air-gapped verifier needs
(``oci/``, ``signatures.json``, ``sbom.cdx.json``, ``provenance.slsa.json``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from terminai_sandbox.engine.client import DockerApi
from terminai_sandbox.registry import ProgressCallback, RegistryClient
from terminai_sandbox.release import steps
from terminai_sandbox.release.signing import KeylessSigner, KeySigner, ReleaseSigner
from terminai_sandbox.release.state import STEPS, ReleaseState
from terminai_sandbox.release.steps import BuiltImage, Describe

__all__ = [
    "STEPS",
    "BuiltImage",
    "Describe",
    "KeySigner",
    "KeylessSigner",
    "ReleaseOptions",
    "ReleaseSigner",
    "ReleaseState",
    "release",
    "steps",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ReleaseOptions:
    repository: str  # registry/repo, e.g. 127.0.0.1:5000/terminai/sandbox
    version: str
    dist_root: Path
    describe: Describe

    @property
    def target(self) -> Path:
        return self.dist_root / self.version


def release(
    options: ReleaseOptions,
    *,
    build: Callable[[], BuiltImage],
    engine: DockerApi,
    signer: KeySigner,
    client: RegistryClient,
    suite: Path | None = None,
    on_progress: ProgressCallback | None = None,
) -> dict[str, Any]:
    """Run every step in order; return (and write) the release manifest.

    A release that stopped resumes: the contract suite is not run again for an image whose
    digest already passed it (the state is keyed by that digest).
    """
    target = options.target
    state = steps.build(target, version=options.version, repository=options.repository, image=build)
    if state.passed("contracts") is None:
        steps.contracts(target, engine, suite=suite)
    steps.describe(target, options.describe)
    steps.push(target, client, on_progress=on_progress)
    steps.sign(target, client, signer)
    steps.verify(target, client, signer.policy())
    steps.tag(target, client)
    return steps.manifest(target)
