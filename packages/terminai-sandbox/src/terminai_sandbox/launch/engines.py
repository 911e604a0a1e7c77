"""The engines a session runs on, and every difference between them, in one place.

``docker``: preflight asks dockerd's API through the package's one engine client,
:class:`~terminai_sandbox.common.dockerapi.DockerApi` (ping, inspects, tag resolution,
pulls, and the contract suite of ``--deep``); a project layer is built and the session
runs through the docker CLI.

``podman``: preflight and the session both use the ``podman`` CLI. Podman needs no daemon,
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

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from terminai_apts.records import field, frozen_record

from terminai_sandbox.common import deadlines, dockerapi
from terminai_sandbox.common.reference import ImageRef
from terminai_sandbox.common.runtime import DEFAULT as DEFAULT_RUNTIME
from terminai_sandbox.common.runtime import missing_on_docker, missing_on_podman, runsc_binary
from terminai_sandbox.common.which import which
from terminai_sandbox.errors import EngineError, LaunchError, RegistryError

TYPE_CHECKING = False  # not `from typing import ...`: a launch never imports typing (~3 ms)
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Callable
    from typing import Any, Protocol

    from terminai_sandbox.common.dockerapi import PullProgress
    from terminai_sandbox.engine import Engine
    from terminai_sandbox.registry import RegistryClient

    class LaunchEngine(Protocol):
        """The engine operations preflight uses; see the module docstring for the two kinds."""

        name: str

        @property
        def host(self) -> str | None: ...

        def describe(self) -> str: ...

        def resolve(self, ref: ImageRef, tag: str, registry: Callable[[], RegistryClient]) -> str: ...

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

        def contract_suite(self, image_id: str, runtime: str = ...) -> int: ...

        def runtime_problem(self, runtime: str) -> EngineError | None: ...

        def platform(self) -> tuple[str, str]: ...


NOFILE_CAP = 65536
NPROC_CAP = 4096


@frozen_record
class ImageFacts:
    """What preflight needs to know about a local image."""

    id: str
    labels: Mapping[str, str] = field(default_factory=dict)
    os: str | None = None  # the image config's platform, as the engine's inspect reports it
    architecture: str | None = None


def connect(name: str, env: Mapping[str, str]) -> LaunchEngine:
    """The engine called ``name``, checked to answer; :class:`EngineError` says why not."""
    if name == "podman":
        return PodmanEngine.connect(env)
    return DockerEngine.connect(env)


def _pull_lines() -> Callable[[PullProgress], None] | None:
    """On a terminal, what a pull is doing, on stderr (an image of a few hundred MiB takes a
    while); nothing on a pipe, where stdout and stderr belong to the session."""
    if not sys.stderr.isatty():
        return None
    from terminai_sandbox.common.pull_lines import PullLines  # noqa: PLC0415  (only when pulling)

    def say(message: str) -> None:
        sys.stderr.write(f"  · pull: {message}\n")
        sys.stderr.flush()

    return PullLines(say)


def _facts(document: Mapping[str, Any]) -> ImageFacts:
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


class DockerEngine:
    """dockerd (or podman's Docker API socket) through the one engine protocol, :class:`terminai_sandbox.engine.Engine`.

    Its implementation is :class:`~terminai_sandbox.common.dockerapi.DockerApi`, the package's one engine client.

    Preflight's ping, image inspects, tag resolution and pulls are API calls; a project
    layer is built by the docker CLI (the one that runs the session: it reads the
    project's ``.dockerignore`` as any ``docker build`` would); ``--deep`` runs the
    contract suite through the same client.
    """

    name = "docker"

    def __init__(self, api: Engine, env: Mapping[str, str]) -> None:
        self.api, self.env = api, env

    @classmethod
    def connect(cls, env: Mapping[str, str]) -> DockerEngine:
        return cls(dockerapi.DockerApi.connect(env), env)

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

    def resolve(self, ref: ImageRef, tag: str, registry: Callable[[], RegistryClient]) -> str:
        # dockerd asks the registry (with the credentials the docker CLI would send), so a
        # launch needs no HTTP client of its own; the digest is then verified like any other.
        return self.api.distribution_digest(f"{ref.name}:{tag}", auth=self._auth(ref.registry))

    def inspect(self, reference: str) -> ImageFacts | None:
        document = self.api.inspect_image(reference)
        return None if document is None else _facts(document)

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
        found = _cli_build(
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
        return saved_layer_members([run_binary("docker", self.env)], env, tag, skip, scratch)

    def remove(self, tag: str) -> None:
        self.api.remove_image(tag, force=True)

    def contract_suite(self, image_id: str, runtime: str = DEFAULT_RUNTIME) -> int:
        from terminai_sandbox.contracts import run_contracts  # noqa: PLC0415

        chosen = None if runtime == DEFAULT_RUNTIME else runtime  # the suite runs where the session will
        return len(run_contracts(self.api, image_id, runtime=chosen).passed)

    def runtime_problem(self, runtime: str) -> EngineError | None:
        if runtime == DEFAULT_RUNTIME:
            return None  # dockerd always has its default runtime; no need to ask
        return missing_on_docker(runtime, self.api.runtimes())

    def platform(self) -> tuple[str, str]:
        """(os, architecture) the engine reports; asked only when the image is a multi-platform index."""
        return self.api.platform()


def _cli_build(
    command: list[str],
    env: Mapping[str, str],
    *,
    context: Path,
    dockerfile: str,
    build_args: Mapping[str, str],
    tag: str,
    labels: Mapping[str, str],
) -> str:
    """``docker build`` or ``podman build`` without network or pulls; the image id it printed."""
    import subprocess  # noqa: PLC0415  (a project layer only)

    args = [*command, "build", "--quiet", "--network=none", "--pull=false", "--rm", "--force-rm"]
    args += ["--file", str(context / dockerfile), "--tag", tag]
    for key, value in build_args.items():
        args += ["--build-arg", f"{key}={value}"]
    for key, value in labels.items():
        args += ["--label", f"{key}={value}"]
    try:
        result = subprocess.run(
            [*args, str(context)], capture_output=True, text=True, env=dict(env), timeout=600, check=False
        )
    except OSError as exc:
        raise EngineError(f"cannot start {command[0]}: {exc.strerror}") from None
    except subprocess.TimeoutExpired:
        raise LaunchError(f"building {dockerfile} did not finish within 600 s") from None
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-15:])
        raise LaunchError(f"building {dockerfile} failed:\n{tail}")
    printed = result.stdout.strip().splitlines()
    return printed[-1].strip() if printed else ""


def saved_layer_members(
    command: list[str], env: Mapping[str, str], tag: str, skip: int, scratch: Path
) -> list[tuple[str, int, str, bool]]:
    """Every entry of the image's layers after the first ``skip``, as ``docker save`` writes them:
    (name, mode, ``file``/``device`` (a device node or FIFO)/``other``, whether it carries file capabilities)."""
    import subprocess  # noqa: PLC0415  (a project layer only)
    import tarfile  # noqa: PLC0415

    archive = scratch / "image.tar"
    try:
        result = subprocess.run(
            [*command, "save", "-o", str(archive), tag],
            capture_output=True,
            text=True,
            env=dict(env),
            timeout=600,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EngineError(f"cannot save {tag} to check its layers: {exc}") from None
    if result.returncode != 0:
        raise EngineError(f"cannot save {tag} to check its layers: {_last_line(result.stderr)}")
    members = []
    try:
        with tarfile.open(archive) as image:
            manifest = json.load(image.extractfile("manifest.json"))  # type: ignore[arg-type]
            for layer in manifest[0]["Layers"][skip:]:
                with tarfile.open(fileobj=image.extractfile(layer)) as tar:
                    for entry in tar:
                        capabilities = "SCHILY.xattr.security.capability" in entry.pax_headers
                        kind = "file" if entry.isreg() else "device" if entry.isdev() else "other"
                        members.append((entry.name, entry.mode, kind, capabilities))
    except (tarfile.TarError, KeyError, IndexError, TypeError, ValueError) as exc:
        raise EngineError(f"the saved image {tag} cannot be read: {exc}") from None
    return members


class PodmanEngine:
    name = "podman"

    def __init__(self, binary: str, version: str, *, rootless: bool, env: Mapping[str, str]) -> None:
        self.binary, self.version, self.rootless, self.env = binary, version, rootless, dict(env)

    def _run(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        import subprocess  # noqa: PLC0415  (docker launches never need it)

        try:
            return subprocess.run(
                [self.binary, *args], capture_output=True, text=True, env=self.env, timeout=timeout, check=False
            )
        except OSError as exc:
            raise EngineError(f"cannot start {self.binary}: {exc.strerror}", hint="install podman") from None
        except subprocess.TimeoutExpired:
            raise EngineError(
                f"podman {args[0]} did not finish within {timeout:g} s",
                hint="run 'podman info' to see whether podman or its storage is stuck",
            ) from None

    @classmethod
    def connect(cls, env: Mapping[str, str]) -> PodmanEngine:
        binary = which("podman", path=env.get("PATH"))
        if binary is None:
            raise EngineError("podman is not installed", hint="install podman (Debian/Ubuntu: apt-get install podman)")
        probe = cls(binary, "?", rootless=os.geteuid() != 0, env=env)
        # The podman CLI sets up its storage on a cold start, which takes longer than a ping.
        result = probe._run("version", "--format", "json", timeout=deadlines.engine_probe_seconds(env, 60))
        if result.returncode != 0:
            raise EngineError(
                f"podman does not work: {_last_line(result.stderr)}",
                hint="run 'podman info' to see what is wrong with its configuration or storage",
            )
        try:
            version = str(json.loads(result.stdout)["Client"]["Version"])
        except (ValueError, KeyError, TypeError):
            raise EngineError(f"podman version printed something unexpected: {result.stdout[:200]!r}") from None
        return cls(binary, version, rootless=probe.rootless, env=env)

    @property
    def host(self) -> str | None:
        return None  # the podman CLI runs both preflight and the session

    def describe(self) -> str:
        mode = "rootless" if self.rootless else "rootful"
        if self.rootless and not cgroups_v2():
            mode += "; --memory, --cpus and --pids-limit NOT enforced: rootless podman on cgroups v1"
        return f"podman {self.version} ({mode}, {self.binary})"

    def resolve(self, ref: ImageRef, tag: str, registry: Callable[[], RegistryClient]) -> str:
        return registry().resolve(ref.repository, tag)

    def inspect(self, reference: str) -> ImageFacts | None:
        result = self._run("image", "inspect", reference, timeout=120)
        if result.returncode != 0:
            if "image not known" in result.stderr or "no such image" in result.stderr.lower():
                return None
            raise EngineError(f"podman cannot look up {reference}: {_last_line(result.stderr)}")
        try:
            documents = json.loads(result.stdout)
            return _facts(documents[0])
        except (ValueError, KeyError, IndexError, TypeError):
            raise EngineError(f"podman image inspect printed something unexpected for {reference}") from None

    def pull(self, pinned: ImageRef, *, insecure: bool) -> ImageFacts:
        args = ["pull", "--quiet"]
        if insecure or _is_loopback(pinned.registry):
            # Loopback registries speak plain HTTP; dockerd allows that for 127.0.0.0/8, podman must be told.
            args.append("--tls-verify=false")
        result = self._run(*args, pinned.pinned)
        if result.returncode != 0:
            raise LaunchError(
                f"pulling {pinned.pinned} failed: {_last_line(result.stderr)}", hint="check the registry and your login"
            )
        found = self.inspect(pinned.pinned)
        if found is None:
            raise LaunchError(f"podman pulled {pinned.pinned} but cannot find it afterwards")
        return found

    def build(
        self, *, context: Path, dockerfile: str, build_args: Mapping[str, str], tag: str, labels: Mapping[str, str]
    ) -> ImageFacts:
        args = ["build", "--quiet", "--network=none", "--pull=never", "--file", str(context / dockerfile), "--tag", tag]
        for key, value in build_args.items():
            args += ["--build-arg", f"{key}={value}"]
        for key, value in labels.items():
            args += ["--label", f"{key}={value}"]
        result = self._run(*args, str(context))
        if result.returncode != 0:
            tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-15:])
            raise LaunchError(f"building {dockerfile} failed:\n{tail}")
        found = self.inspect(tag)
        if found is None:
            raise LaunchError(f"podman built {tag} but cannot find it afterwards")
        return found

    def image_document(self, reference: str) -> dict[str, Any] | None:
        result = self._run("image", "inspect", reference, timeout=120)
        if result.returncode != 0:
            return None
        try:
            document = json.loads(result.stdout)[0]
        except (ValueError, IndexError, KeyError):
            raise EngineError(f"podman image inspect printed something unexpected for {reference}") from None
        return document if isinstance(document, dict) else None

    def new_layer_members(self, tag: str, skip: int, scratch: Path) -> list[tuple[str, int, str, bool]]:
        return saved_layer_members([self.binary], self.env, tag, skip, scratch)

    def remove(self, tag: str) -> None:
        self._run("rmi", "--force", tag, timeout=120)

    def contract_suite(self, image_id: str, runtime: str = DEFAULT_RUNTIME) -> int:
        raise LaunchError(
            "--deep runs the contract suite through the Docker API, which the podman engine does not use",
            hint="run 'terminai-sandbox contracts IMAGE' against dockerd, or drop --deep "
            "(the entrypoint still checks health when the session starts)",
        )

    def runtime_problem(self, runtime: str) -> EngineError | None:
        return missing_on_podman(runtime, runsc_binary(self.env))

    def platform(self) -> tuple[str, str]:
        """(os, architecture) of the machine podman runs containers on (``Server.OsArch``
        for a remote podman, else ``Client.OsArch``)."""
        result = self._run("version", "--format", "json", timeout=60)
        try:
            document = json.loads(result.stdout)
            side = document.get("Server") or document["Client"]
            os_name, _, arch = str(side["OsArch"]).partition("/")
        except (ValueError, KeyError, TypeError, AttributeError):
            os_name = arch = ""
        if result.returncode != 0 or not os_name or not arch:
            raise EngineError(
                f"podman did not report its platform: {_last_line(result.stderr)}",
                hint="run 'podman version' to see what is wrong",
            )
        return os_name, arch


def cgroups_v2(root: Path = Path("/sys/fs/cgroup")) -> bool:
    """True on a unified (v2) cgroup hierarchy, where rootless podman can apply resource limits."""
    return (root / "cgroup.controllers").exists()


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no error message"


def _is_loopback(registry: str) -> bool:
    from terminai_sandbox.common.registry_auth import is_loopback  # noqa: PLC0415  (podman only)

    return is_loopback(registry)


# -- the engine-specific part of the session's command line ----------------------------------


@frozen_record
class SessionFlags:
    """The part of the session's command line that depends on the engine."""

    home_tmpfs: str  # the --tmpfs value for the home directory
    identity: tuple[str, ...]  # --user / --userns
    extra: tuple[str, ...] = ()  # ulimits and other engine-only flags


def _bounded(limit: int, cap: int) -> int:
    import resource  # noqa: PLC0415  (podman's ulimits only)

    return cap if limit == resource.RLIM_INFINITY else min(limit, cap)


def session_flags(
    engine: str,
    *,
    home: str,
    home_size: str,
    uid: int,
    gid: int,
    image_uid: int,
    set_uid_gid: bool | None,
    rlimits: Mapping[str, tuple[int, int]] | None = None,
) -> SessionFlags:
    """The flags in which docker and podman differ (pure: the host's values are passed in).

    ``--user`` is always explicit and never 0: the image's ``USER`` (which a project layer
    could set to root) never decides who the session is. The host identity keeps files in
    mounted folders owned by the user; root on the host, and ``SANDBOX_SET_UID_GID=false``,
    get the image's unprivileged user (``image_uid``) instead.
    """
    use_host_identity = set_uid_gid is not False and uid != 0
    run_uid, run_gid = (uid, gid) if use_host_identity else (image_uid, image_uid)
    user = ("--user", f"{run_uid}:{run_gid}")
    base = f"{home}:rw,nosuid,nodev,size={home_size},mode=0700"
    if engine == "podman":
        limits = rlimits if rlimits is not None else host_rlimits()
        nofile = _bounded(limits["nofile"][1], NOFILE_CAP)
        nproc = _bounded(limits["nproc"][1], NPROC_CAP)
        ulimits = ("--ulimit", f"nofile={nofile}:{nofile}", "--ulimit", f"nproc={nproc}:{nproc}")
        # keep-id maps the rootless user to the same uid inside; it does not exist for root.
        userns = ("--userns=keep-id",) if use_host_identity else ()
        return SessionFlags(home_tmpfs=f"{base},U", identity=userns + user, extra=ulimits)
    return SessionFlags(home_tmpfs=f"{base},uid={run_uid},gid={run_gid}", identity=user)


def host_rlimits() -> dict[str, tuple[int, int]]:
    import resource  # noqa: PLC0415  (podman's ulimits only)

    return {
        "nofile": resource.getrlimit(resource.RLIMIT_NOFILE),
        "nproc": resource.getrlimit(resource.RLIMIT_NPROC),
    }


def run_binary(engine: str, env: Mapping[str, str]) -> str:
    """The engine CLI that runs the session (found on the launcher's PATH)."""
    return which(engine, path=env.get("PATH")) or engine
