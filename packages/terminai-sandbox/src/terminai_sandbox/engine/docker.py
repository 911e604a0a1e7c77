"""dockerd as a session's engine: preflight over the Docker API, a project layer through ``docker build``.

One of the two implementations of :class:`~terminai_sandbox.engine.protocol.Engine` (the
other is :mod:`.podman`); the session itself runs through the docker CLI pointed at the same
API address (:attr:`DockerEngine.host`).

Part of the launch kernel: standard library only.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

from terminai_sandbox.common.reference import ImageRef
from terminai_sandbox.engine.client import DockerApi
from terminai_sandbox.engine.flags import run_binary
from terminai_sandbox.engine.protocol import ImageFacts, image_facts
from terminai_sandbox.engine.runtime import DEFAULT as DEFAULT_RUNTIME
from terminai_sandbox.engine.runtime import missing_on_docker
from terminai_sandbox.errors import EngineError, LaunchError, RegistryError

TYPE_CHECKING = False  # not `from typing import ...`: a launch never imports typing (~3 ms)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from terminai_sandbox.engine.client import PullProgress
    from terminai_sandbox.engine.protocol import TagResolver
    from terminai_sandbox.engine.transport import EarlyAnswers


def _pull_lines() -> Callable[[PullProgress], None] | None:
    """On a terminal, what a pull is doing, on stderr (an image of a few hundred MiB takes a
    while); nothing on a pipe, where stdout and stderr belong to the session."""
    if not sys.stderr.isatty():
        return None
    from terminai_sandbox.engine.pull_lines import PullLines  # noqa: PLC0415  (only when pulling)

    def say(message: str) -> None:
        sys.stderr.write(f"  · pull: {message}\n")
        sys.stderr.flush()

    return PullLines(say)


class DockerEngine:
    """dockerd (or podman's Docker API socket) as the :class:`~.protocol.Engine` of a session.

    Its implementation is :class:`~terminai_sandbox.engine.client.DockerApi`, the package's one engine client.

    Preflight's ping, image inspects, tag resolution and pulls are API calls; a project
    layer is built by the docker CLI (the one that runs the session: it reads the
    project's ``.dockerignore`` as any ``docker build`` would); ``--deep`` runs the
    contract suite through the same client.
    """

    name = "docker"

    def __init__(self, api: DockerApi, env: Mapping[str, str]) -> None:
        self.api: DockerApi = api
        self.env = env

    @classmethod
    def connect(cls, env: Mapping[str, str], *, answers: EarlyAnswers | None = None) -> DockerEngine:
        """dockerd's API, checked to answer; ``answers`` holds the requests a session start sent early."""
        return cls(DockerApi.connect(env, answers=answers), env)

    @property
    def host(self) -> str | None:
        """The API address preflight used; the session's docker CLI is pointed at it too."""
        return str(self.api.info.host)

    def describe(self) -> str:
        info = self.api.info
        return f"{info.name} {info.version} at {info.host}"

    def _auth(self, registry: str) -> dict[str, str] | None:
        # What the docker CLI would send for the registry; read only when a step needs the registry.
        from terminai_sandbox.common.registry_auth import docker_config_credentials, engine_auth  # noqa: PLC0415

        return engine_auth(docker_config_credentials(registry, self.env), registry)

    def resolve(self, ref: ImageRef, tag: str, registry: Callable[[], TagResolver], *, seconds: float) -> str:
        # dockerd asks the registry (with the credentials the docker CLI would send), so a
        # launch needs no HTTP client of its own; the digest is then verified like any other.
        # ``seconds``: a registry request's deadline, since the engine answers when the registry has.
        return self.api.distribution_digest(f"{ref.name}:{tag}", auth=self._auth(ref.registry), seconds=seconds)

    def inspect(self, reference: str) -> ImageFacts | None:
        document = self.api.inspect_image(reference)
        return None if document is None else image_facts(document)

    def pull(self, pinned: ImageRef, *, insecure: bool) -> ImageFacts:
        # dockerd decides plain HTTP itself (127.0.0.0/8 and its insecure-registries list).
        assert pinned.digest is not None
        try:
            self.api.pull_by_digest(
                pinned.name, pinned.digest, auth=self._auth(pinned.registry), on_progress=_pull_lines()
            )
        except RegistryError as exc:  # the registry's exit code, as when step 2 resolves a tag
            raise RegistryError(exc.message, hint=exc.hint or "check the registry and your login") from None
        found = self.inspect(pinned.pinned)
        if found is None:
            raise LaunchError(f"the engine pulled {pinned.pinned} but cannot find it afterwards")
        return found

    def build(
        self, *, context: Path, dockerfile: str, build_args: Mapping[str, str], tag: str, labels: Mapping[str, str]
    ) -> ImageFacts:
        from terminai_sandbox.engine.cli import cli_build  # noqa: PLC0415  (a project layer only)

        found = cli_build(
            [run_binary("docker", self.env)],
            # the classic builder: the one the project-layer checks are proven against
            # (tests/integration/launch/test_dockerfile_oracle.py), whatever the caller's setting
            {**self.env, "DOCKER_HOST": self.api.info.host, "DOCKER_BUILDKIT": "0"},
            context=context,
            dockerfile=dockerfile,
            build_args=build_args,
            tag=tag,
            labels=labels,
        )
        facts = self.inspect(tag)
        if facts is None or facts.id != found:
            raise LaunchError(f"docker built {tag} as {found}, but the engine holds {facts.id if facts else 'nothing'}")
        return facts

    def image_document(self, reference: str) -> dict[str, Any] | None:
        return self.api.inspect_image(reference)

    def new_layer_members(self, tag: str, skip: int, scratch: Path) -> list[tuple[str, int, str, bool]]:
        env = {**self.env, "DOCKER_HOST": self.api.info.host}
        from terminai_sandbox.engine.cli import saved_layer_members  # noqa: PLC0415  (a project layer only)

        return saved_layer_members([run_binary("docker", self.env)], env, tag, skip, scratch)

    def remove(self, tag: str) -> None:
        self.api.remove_image(tag, force=True)

    def runtime_problem(self, runtime: str) -> EngineError | None:
        if runtime == DEFAULT_RUNTIME:
            return None  # dockerd always has its default runtime; no need to ask
        return missing_on_docker(runtime, self.api.runtimes())

    def platform(self) -> tuple[str, str]:
        """(os, architecture) the engine reports; asked only when the image is a multi-platform index."""
        return self.api.platform()
