"""The one engine protocol, :class:`Engine`: what the launcher needs of any container engine.

Two implementations, and every difference between them in this room:

``docker`` (:mod:`.docker`): preflight asks dockerd's API through the package's one engine client,
:class:`~terminai_sandbox.engine.client.DockerApi` (ping, inspects, tag resolution,
pulls, and the contract suite of ``--deep``); a project layer is built and the session
runs through the docker CLI.

``podman`` (:mod:`.podman`): preflight and the session both use the ``podman`` CLI. Podman needs no daemon,
and the image preflight inspects is then the image in the storage ``podman run`` reads (a
podman API socket can belong to another user's storage). The differences:

===================  ==================================  =========================================
                     docker                              podman
===================  ==================================  =========================================
home tmpfs owner     ``uid=``/``gid=`` mount options     ``U`` (podman refuses ``uid=``/``gid=``)
host identity        ``--user UID:GID``                  rootless: ``--userns=keep-id`` + ``--user``;
                                                         as root: the image's user (keep-id is a
                                                         rootless-only mode)
``--init``           docker-init                         catatonit (Debian package ``catatonit``)
ulimits              inherited from dockerd              explicit ``nofile``/``nproc`` no higher
                                                         than the launcher's own hard limits
plain-HTTP registry  dockerd allows 127.0.0.0/8          ``--tls-verify=false`` for loopback
                                                         registries or ``--insecure-registry``
``--deep``           contract suite via the Docker API   refused (the suite needs the Docker API)
===================  ==================================  =========================================

Rootful podman asks the kernel for RLIMIT_NOFILE 1048576 and a high RLIMIT_NPROC by
default; where root lacks CAP_SYS_RESOURCE (some VMs and nested containers) every run then
fails with "error setting rlimit type 7: operation not permitted". The explicit limits
avoid that and are modest anyway: the pids cgroup limit stays the real cap on processes.

Rootless podman on a cgroups v1 host cannot apply ``--memory``, ``--cpus`` or
``--pids-limit`` (it says "Resource limits are not supported and ignored" and runs anyway).
Preflight says so in step 1, and with it the audit ledger, instead of implying limits that
do not hold.
"""

from __future__ import annotations

from collections.abc import Mapping

from terminai_apts.records import field, frozen_record

from terminai_sandbox.errors import EngineError

TYPE_CHECKING = False  # not `from typing import ...`: a launch never imports typing (~3 ms)
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any, Protocol

    from terminai_sandbox.common.reference import ImageRef
    from terminai_sandbox.engine.client import DockerApi
    from terminai_sandbox.engine.transport import EarlyAnswers

    class TagResolver(Protocol):
        """What a tag's resolution needs of a registry client (podman asks the registry itself)."""

        def resolve(self, repo: str, tag: str) -> str: ...

    class Engine(Protocol):
        """The engine operations a session start uses; see the module docstring for the two kinds."""

        name: str

        @property
        def api(self) -> DockerApi | None:
            """The Docker API client when the engine speaks it (``--deep`` runs the contract
            suite through it); None for the podman CLI."""

        @property
        def host(self) -> str | None: ...

        def describe(self) -> str: ...

        def resolve(self, ref: ImageRef, tag: str, registry: Callable[[], TagResolver], *, seconds: float) -> str: ...

        def inspect(self, reference: str) -> ImageFacts | None: ...

        def pull(self, pinned: ImageRef, *, insecure: bool) -> ImageFacts: ...

        def build(
            self,
            *,
            context: Path,
            dockerfile: str,
            build_args: Mapping[str, str],
            tag: str,
            labels: Mapping[str, str],
        ) -> ImageFacts: ...

        def image_document(self, reference: str) -> dict[str, Any] | None: ...

        def new_layer_members(self, tag: str, skip: int, scratch: Path) -> list[tuple[str, int, str, bool]]: ...

        def remove(self, tag: str) -> None: ...

        def runtime_problem(self, runtime: str) -> EngineError | None: ...

        def platform(self) -> tuple[str, str]: ...


@frozen_record
class ImageFacts:
    """What preflight needs to know about a local image."""

    id: str
    labels: Mapping[str, str] = field(default_factory=dict)
    os: str | None = None  # the image config's platform, as the engine's inspect reports it
    architecture: str | None = None


def image_facts(document: Mapping[str, Any]) -> ImageFacts:
    """What an ``image inspect`` document says; :class:`EngineError` when it is not one."""
    config = document.get("Config") or {}
    labels = (config.get("Labels") if isinstance(config, dict) else None) or document.get("Labels") or {}
    image_id = document.get("Id")
    if not isinstance(image_id, str) or not image_id or not isinstance(config, dict) or not isinstance(labels, dict):
        raise EngineError(f"the engine's image inspect answer is not an image document: {str(document)[:80]!r}")
    os_name, architecture = document.get("Os"), document.get("Architecture")
    return ImageFacts(
        id=image_id,
        labels={str(k): str(v) for k, v in labels.items()},
        os=os_name if isinstance(os_name, str) and os_name else None,
        architecture=architecture if isinstance(architecture, str) and architecture else None,
    )


def connect(name: str, env: Mapping[str, str], *, answers: EarlyAnswers | None = None) -> Engine:
    """The engine called ``name``, checked to answer; :class:`EngineError` says why not.

    ``answers``: requests a session start sent dockerd early (:mod:`terminai_sandbox.launch.early`).
    """
    if name == "podman":
        from terminai_sandbox.engine.podman import PodmanEngine  # noqa: PLC0415  (a docker launch never needs it)

        return PodmanEngine.connect(env)
    from terminai_sandbox.engine.docker import DockerEngine  # noqa: PLC0415

    return DockerEngine.connect(env, answers=answers)
