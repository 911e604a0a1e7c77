"""The container engine as the build, the contract suite and the release see it: one protocol.

:class:`Engine` names every engine operation the package uses outside a session's own
``docker run``; :func:`connect` returns the one implementation, the standard-library Docker
Engine API client :class:`~terminai_sandbox.common.dockerapi.DockerApi` (dockerd, or
podman's Docker-compatible socket), which the launch kernel uses too. It checks the API
version with an actionable message, labels every container it creates, and removes them
on every path (:meth:`Engine.run`).

Starting an engine is not this module's job: ``scripts/ensure-engine`` installs and starts
Debian's dockerd for maintainers and CI; errors here name it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, Unpack

from terminai_sandbox.common import deadlines
from terminai_sandbox.common.dockerapi import LABEL, DockerApi, EngineInfo, EngineRefused, PullProgress

if TYPE_CHECKING:  # defined for type checkers only: the launch kernel never imports typing
    from terminai_sandbox.common.dockerapi import ContainerOptions


#: Hears each step of a pull (:class:`PullProgress`) while the engine's stream arrives.
PullCallback = Callable[[PullProgress], None]


class Engine(Protocol):
    """A connected, version-checked container engine."""

    @property
    def info(self) -> EngineInfo: ...

    def runtimes(self) -> list[str]: ...

    def platform(self) -> tuple[str, str]: ...

    def inspect_image(self, reference: str) -> dict[str, Any] | None: ...

    def distribution_digest(
        self, reference: str, *, auth: Mapping[str, str] | None = None, seconds: float | None = None
    ) -> str: ...

    def pull_by_digest(
        self,
        reference: str,
        digest: str,
        *,
        auth: Mapping[str, str] | None = None,
        on_progress: PullCallback | None = None,
    ) -> str: ...

    def load_image(self, archive: Path) -> None: ...

    def tag_image(self, image: str, repository: str, tag: str) -> None: ...

    def remove_image(self, image: str, *, force: bool = False, prune: bool = True) -> None: ...

    def create_container(
        self, image: str, command: Sequence[str] | None = None, **options: Unpack[ContainerOptions]
    ) -> str: ...

    def put_archive(self, container: str, path: str, archive: bytes) -> None: ...

    def commit(self, container: str, *, changes: Sequence[str] = ()) -> str: ...

    def remove_container(self, container: str) -> None: ...

    def run(
        self,
        image: str,
        command: Sequence[str] | None = None,
        *,
        timeout: float = 300,
        **options: Unpack[ContainerOptions],
    ) -> tuple[int, bytes, bytes]: ...


def connect(
    env: Mapping[str, str] | None = None,
    *,
    timeout: float = deadlines.ENGINE_REQUEST_SECONDS,
    probe: float = deadlines.ENGINE_BATCH_PROBE_SECONDS,
) -> Engine:
    """Connect to the first engine that answers; raise :class:`EngineError` saying why none did.

    ``probe`` bounds reaching it (connect and first answer; ``TERMINAI_ENGINE_TIMEOUT``
    overrides it), ``timeout`` each later request's whole answer: see ``docs/DEADLINES.md``.
    """
    return DockerApi.connect(os.environ if env is None else env, timeout=timeout, probe=probe)


__all__ = ["LABEL", "Engine", "EngineInfo", "EngineRefused", "PullCallback", "PullProgress", "connect"]
