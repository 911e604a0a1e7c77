"""The one Docker Engine API client, over a plain socket with the standard library.

dockerd and podman's Docker-compatible socket both answer it. The launch kernel uses it
as it is (a session start asks four things: which engine answers and its API version from
``/_ping``, else ``/version``; for a session under gVisor whether it has the runtime from
``/info``; the local image by reference; for a ``REPO:TAG`` reference the digest the
registry serves now, from ``/distribution/{ref}/json``), through
:class:`~terminai_sandbox.engine.docker.DockerEngine`; the build (``load``), the contract
suite and the release use it directly (:func:`connect`): pulls by digest, image load, tag
and removal, and containers created, started, waited for, read and removed. No docker SDK:
with requests and urllib3 under it, it took ~80 ms to import, more than the launcher's
whole own cost.

The wire (one exchange, chunking, demultiplexing, early answers) is :mod:`.transport`;
where engines live is :mod:`.sockets`; why one does not answer is :func:`diagnose`, here.
It checks the API version with an actionable message, labels every container it creates,
and removes them on every path (:meth:`DockerApi.run`). Starting an engine is not its job:
``scripts/ensure-engine`` installs and starts Debian's dockerd; errors here name it.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from terminai_apts.records import frozen_record

from terminai_sandbox.common import deadlines
from terminai_sandbox.common.reference import is_digest
from terminai_sandbox.common.which import which
from terminai_sandbox.engine.sockets import candidate_hosts
from terminai_sandbox.engine.transport import (
    NotAnApiAnswer,
    api_request,
    demultiplex,
    distribution_path,
    image_path,
)
from terminai_sandbox.engine.transport import quote_path as _quote
from terminai_sandbox.errors import EngineError, RegistryError, RegistryUnreachable

TYPE_CHECKING = False  # not `from typing import ...`: a launch never imports typing (~3 ms)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypedDict, Unpack

    from terminai_sandbox.engine.transport import EarlyAnswers

    #: Hears each step of a pull (:class:`PullProgress`) while the engine's stream arrives.
    PullCallback = Callable[["PullProgress"], None]

    class ContainerOptions(TypedDict, total=False):
        """How a container is made (the docker SDK's keyword names, so callers read the same)."""

        name: str
        labels: Mapping[str, str]
        environment: Mapping[str, str]
        entrypoint: Sequence[str]
        user: str
        network_mode: str
        read_only: bool
        tmpfs: Mapping[str, str]
        volumes: Mapping[str, Mapping[str, str]]  # host path -> {"bind": path inside, "mode": "ro" | "rw"}
        cap_drop: Sequence[str]
        security_opt: Sequence[str]
        runtime: str | None  # None: the engine's default


MIN_API_VERSION = (1, 40)  # Docker 19.03 / podman 2: the oldest API we exercise
LABEL = "dev.terminai.sandbox"  # on every container this client creates
PLAIN_SCHEMES = ("unix://", "tcp://", "http://")

# How dockerd words a registry's refusal to an anonymous or wrong login (it answers 500 for them).
AUTH_REFUSALS = ("unauthorized", "denied", "no basic auth credentials", "authentication required")


def diagnose(host: str, exc: Exception) -> EngineError:
    """Why ``host`` did not answer, in words a user can act on."""
    if not host.startswith(PLAIN_SCHEMES):
        return EngineError(
            f"the engine address {host} is not supported: only unix://, tcp:// and http:// are",
            hint="forward the remote engine's socket (ssh -nNL /tmp/engine.sock:/var/run/docker.sock HOST) "
            "and set DOCKER_HOST=unix:///tmp/engine.sock",
        )
    path = host.removeprefix("unix://") if host.startswith("unix://") else None
    text = str(exc)
    if path and Path(path).exists() and ("Permission denied" in text or "PermissionError" in text):
        return EngineError(
            f"permission denied on the engine socket {path}",
            hint="add your user to the 'docker' group (then log in again), or use rootless podman "
            "and set DOCKER_HOST=unix://$XDG_RUNTIME_DIR/podman/podman.sock",
        )
    if path and not Path(path).exists():
        if which("dockerd") is None and which("podman") is None:
            return EngineError(
                "no container engine is installed",
                hint="install Docker or Podman (Debian/Ubuntu: apt-get install docker.io), "
                "or run scripts/ensure-engine as root",
            )
        return EngineError(
            f"the container engine is not running (no socket at {path})",
            hint="start it (systemctl start docker, or scripts/ensure-engine as root)",
        )
    return EngineError(
        f"the container engine at {host} does not answer: {text.splitlines()[0] if text else type(exc).__name__}",
        hint="check that the daemon is running and DOCKER_HOST is right",
    )


def check_api_version(api: str, host: str) -> None:
    try:
        major, minor = (int(p) for p in api.split(".")[:2])
    except ValueError:
        raise EngineError(
            f"the engine at {host} gave an API version that is not one: {api[:40]!r}",
            hint="check that DOCKER_HOST names a Docker or Podman API socket",
        ) from None
    if (major, minor) < MIN_API_VERSION:
        raise EngineError(
            f"engine API {api} at {host} is too old (need {MIN_API_VERSION[0]}.{MIN_API_VERSION[1]}+)",
            hint="upgrade Docker to 19.03+ or Podman to 2.0+",
        )


def engine_name(version: Mapping[str, Any]) -> str:
    """``docker`` or ``podman``, from a ``/version`` document."""
    components = " ".join(c.get("Name", "") for c in version.get("Components", []) or [])
    return "podman" if "podman" in components.lower() else "docker"


def api_get(host: str, path: str, *, timeout: float = 30, headers: Mapping[str, str] | None = None) -> tuple[int, Any]:
    """Like :func:`api_request`, with the body decoded as JSON (None when empty)."""
    status, _, body = api_request(host, path, timeout=timeout, headers=headers)
    try:
        return status, (json.loads(body) if body.strip() else None)
    except ValueError:
        raise NotAnApiAnswer(f"GET {path} answered {status} with a body that is not JSON: {body[:40]!r}") from None


def _ping_version(host: str, timeout: float, answers: EarlyAnswers | None = None) -> dict[str, Any] | None:
    """``/_ping`` (what the docker CLI itself asks first): API version and server from the headers.

    It answers in well under a millisecond where ``/version`` takes several. None when the
    headers do not say enough (then :meth:`DockerApi.connect` asks ``/version``).
    """
    status, headers, _ = api_request(host, "/_ping", timeout=timeout, answers=answers)
    if status != 200:
        return None
    server, api = headers.get("server", ""), headers.get("api-version", "")
    product, _, rest = server.partition("/")
    if not api or not rest or product.lower() not in ("docker", "libpod"):
        return None
    name = "podman" if product.lower() == "libpod" or "libpod-api-version" in headers else "Engine"
    return {"ApiVersion": api, "Version": rest.split()[0], "Components": [{"Name": name}]}


def digest_or_refusal(reference: str, status: int, body: Any) -> str:
    """The digest in a ``/distribution`` answer, or the :class:`RegistryError` its refusal means."""
    digest = (body.get("Descriptor") or {}).get("digest") if isinstance(body, dict) else None
    if status == 200 and isinstance(digest, str) and is_digest(digest):
        return digest
    message = str(body.get("message") if isinstance(body, dict) else body)
    if status == 404 or "manifest unknown" in message:
        raise RegistryError(f"{reference}: manifest unknown", hint="check the repository and tag")
    if status in (401, 403) or any(word in message.lower() for word in AUTH_REFUSALS):
        raise RegistryError(f"the registry refused {reference}: {message}", hint="log in first (docker login REGISTRY)")
    raise RegistryError(
        f"the engine could not resolve {reference} ({status}): {message}",
        hint="check the registry address and that the engine can reach it",
    )


@frozen_record
class PullProgress:
    """One step of a pull as the engine reports it: a layer's status and, while it moves, bytes."""

    layer: str  # the engine's short layer id
    status: str  # "Downloading", "Extracting", "Pull complete", ...
    current: int = 0  # bytes so far (0 when the step has no byte count)
    total: int = 0


@frozen_record
class EngineInfo:
    """Which engine answered, where, and its API version."""

    host: str
    name: str  # "docker" | "podman"
    version: str
    api_version: str


class EngineRefused(EngineError):
    """The engine answered a request with an error status; ``explanation`` is its own message."""

    def __init__(self, message: str, *, status: int, explanation: str, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.status, self.explanation = status, explanation


def _message(body: Any) -> str:
    if isinstance(body, dict) and body.get("message"):
        return str(body["message"])
    return str(body).strip() if body else "no message"


def _stream_error(body: bytes) -> str | None:
    """The first error in a JSON-lines progress stream (pull, load, build), or None.

    These calls answer 200 before they start, so a failure half-way arrives as a line with
    ``error`` in the stream, not as a status.
    """
    for line in body.splitlines():
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict) and item.get("error"):
            detail = item.get("errorDetail")
            return str(detail.get("message") if isinstance(detail, dict) and detail.get("message") else item["error"])
    return None


class DockerApi:
    """The one client of the Docker Engine API (dockerd, or podman's Docker-compatible socket).

    Standard library only, so the launch kernel uses it as it is (through
    :class:`~terminai_sandbox.engine.docker.DockerEngine`); the build, the contract suite and
    the release use it directly. Every container it creates is labelled :data:`LABEL` and removed on every path
    (:meth:`run`); an error status becomes :class:`EngineRefused`, a socket that stops
    answering an :class:`~terminai_sandbox.errors.EngineError`.
    """

    def __init__(
        self,
        info: EngineInfo,
        *,
        timeout: float = deadlines.ENGINE_REQUEST_SECONDS,
        answers: EarlyAnswers | None = None,
    ) -> None:
        self.info = info
        self.timeout = timeout
        self.answers = answers  # requests sent early (a session start only): read in place of asking

    @classmethod
    def connect(
        cls,
        env: Mapping[str, str],
        *,
        timeout: float = deadlines.ENGINE_REQUEST_SECONDS,
        probe: float = deadlines.ENGINE_PROBE_SECONDS,
        answers: EarlyAnswers | None = None,
    ) -> DockerApi:
        """The first engine that answers; :class:`EngineError` says why none did.

        Each candidate has ``probe`` seconds in all (``TERMINAI_ENGINE_TIMEOUT`` in ``env``
        overrides it) to accept the connection and answer ``/_ping`` (and ``/version`` when
        the ping does not say enough): an engine that is up answers in milliseconds, and a
        socket that accepts and stays silent must not hold a person for the request
        timeout. Every later request has ``timeout`` seconds for its whole answer.
        ``answers``: requests a session start sent early, read in place of asking again.
        """
        limit = deadlines.engine_probe_seconds(env, probe)
        errors: list[EngineError] = []
        for host in candidate_hosts(env):
            give_up = time.monotonic() + limit
            try:
                version = _ping_version(host, limit, answers)
                if version is None:
                    status, version = api_get(host, "/version", timeout=max(0.001, give_up - time.monotonic()))
                    if status != 200 or not isinstance(version, dict):
                        raise NotAnApiAnswer(f"GET /version answered {status} without a version document")
            except TimeoutError:
                errors.append(
                    EngineError(
                        f"the container engine at {host} accepted the connection but did not answer within {limit:g} s",
                        hint="check that the daemon is running and not stuck, and that DOCKER_HOST names an "
                        f"engine's API socket ({deadlines.ENGINE_VARIABLE}=SECONDS allows more time)",
                    )
                )
                if env.get("DOCKER_HOST"):
                    break
                continue
            except NotAnApiAnswer as exc:
                errors.append(
                    EngineError(
                        f"{host} answered, but not as a Docker or Podman API does: {exc}",
                        hint="check that DOCKER_HOST names the engine's API socket (not a proxy or another service)",
                    )
                )
                if env.get("DOCKER_HOST"):
                    break
                continue
            except (OSError, ValueError) as exc:
                errors.append(diagnose(host, exc))
                if env.get("DOCKER_HOST"):
                    break
                continue
            api = str(version.get("ApiVersion", "0.0"))
            check_api_version(api, host)
            info = EngineInfo(
                host=host, name=engine_name(version), version=str(version.get("Version", "?")), api_version=api
            )
            return cls(info, timeout=timeout, answers=answers)
        raise no_engine(errors)

    # -- transport ---------------------------------------------------------------------------

    def _raw(
        self,
        method: str,
        path: str,
        *,
        body: bytes | Path | None = None,
        content_type: str = "application/json",
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
        waiting: bool = False,
        streaming: bool = False,
        on_line: Callable[[bytes], None] | None = None,
    ) -> tuple[int, bytes]:
        """One request: (status, body). With ``waiting``, running out of time is a :class:`TimeoutError`.

        The whole answer must arrive within ``timeout`` seconds; with ``streaming`` (a pull,
        an image load) within :data:`~.deadlines.ENGINE_STREAM_SECONDS`, and no pause in it
        may last ``timeout``."""
        limit = self.timeout if timeout is None else timeout
        try:
            status, _, answer = api_request(
                self.info.host,
                f"/v{self.info.api_version}{path}",
                method=method,
                body=body,
                content_type=content_type,
                timeout=limit,
                headers=headers,
                on_line=on_line,
                # A document must be whole within the timeout, not only between bytes; a
                # pull's or load's progress stream lasts as long as the transfer does.
                deadline=deadlines.ENGINE_STREAM_SECONDS if streaming else limit,
                answers=self.answers,
                # The same request without the version prefix may have been sent early: an
                # engine answers it at its own API version, the one connect() pinned.
                early=path,
            )
        except TimeoutError as exc:
            if waiting:
                raise
            raise EngineError(
                f"the engine at {self.info.host} did not answer {method} {path} in time ({exc})",
                hint="check that the daemon is running and not overloaded, then run the command again",
            ) from None
        except NotAnApiAnswer as exc:
            raise EngineError(
                f"the engine at {self.info.host} answered, but not as the Docker API does: {exc}",
                hint="check that DOCKER_HOST names the engine's API socket (not a proxy or another service)",
            ) from None
        except (OSError, ValueError) as exc:
            raise EngineError(
                f"the engine at {self.info.host} stopped answering: {exc}",
                hint="check that DOCKER_HOST names a Docker or Podman API socket and that the daemon is healthy",
            ) from None
        return status, answer

    def _call(
        self,
        method: str,
        path: str,
        *,
        doing: str,
        document: Mapping[str, Any] | None = None,
        body: bytes | Path | None = None,
        content_type: str = "application/json",
        headers: Mapping[str, str] | None = None,
        ok: tuple[int, ...] = (200, 201, 204),
        timeout: float | None = None,
    ) -> tuple[int, Any]:
        """One request; the JSON answer (None when empty). An error status is :class:`EngineRefused`."""
        if document is not None:
            body = json.dumps(document).encode()
        status, raw = self._raw(method, path, body=body, content_type=content_type, headers=headers, timeout=timeout)
        answer = _loads(raw)
        if status not in ok:
            explanation = _message(answer)
            raise EngineRefused(
                f"the engine refused {doing} ({status}): {explanation}", status=status, explanation=explanation
            )
        return status, answer

    def _get(self, path: str, headers: Mapping[str, str] | None = None) -> tuple[int, Any]:
        """The status and JSON answer (a str when the body is not JSON: callers refuse it by type)."""
        status, raw = self._raw("GET", path, headers=headers)
        return status, _loads(raw)

    # -- the engine and its images ------------------------------------------------------------

    def runtimes(self) -> list[str]:
        """The names of the OCI runtimes the engine can run containers with (``GET /info`` ``Runtimes``)."""
        status, body = self._get("/info")
        if status != 200 or not isinstance(body, dict):
            raise EngineError(f"the engine at {self.info.host} answered GET /info with {status}")
        return sorted(body.get("Runtimes") or {})

    def platform(self) -> tuple[str, str]:
        """(os, architecture) of the engine's host, as ``GET /version`` reports them (``Os``, ``Arch``).

        The engine's, not this process's: over ``DOCKER_HOST=ssh://…`` the two may differ,
        and the image must suit the machine that runs it.
        """
        status, body = self._get("/version")
        os_name, arch = (body.get("Os"), body.get("Arch")) if isinstance(body, dict) else (None, None)
        if status != 200 or not isinstance(os_name, str) or not isinstance(arch, str) or not os_name or not arch:
            raise EngineError(
                f"the engine at {self.info.host} did not report its platform (GET /version: {status})",
                hint="check that the engine is docker 20.10 or later, or podman's Docker API service",
            )
        return os_name, arch

    def inspect_image(self, reference: str) -> dict[str, Any] | None:
        """The engine's ``image inspect`` document for ``reference``, or None when it has no such image."""
        status, body = self._get(image_path(reference))
        if status == 404:
            return None
        if status != 200 or not isinstance(body, dict):
            message = body.get("message") if isinstance(body, dict) else body
            raise EngineError(f"the engine cannot look up {reference} ({status}): {message}")
        return body

    def distribution_digest(
        self, reference: str, *, auth: Mapping[str, str] | None = None, seconds: float | None = None
    ) -> str:
        """The digest the registry serves for ``reference`` now, asked through the engine.

        ``auth`` is what the docker CLI would send for the registry (username, password,
        serveraddress); it travels only over the engine's own socket. The engine answers
        only once the registry has, so this is a registry request: it is bounded by
        ``seconds`` (a registry request's deadline; default
        :data:`~.deadlines.REGISTRY_INTERACTIVE_SECONDS`) and the command's total deadline,
        not by the engine's 120 s (dockerd waits on a trickling registry far longer).
        """
        limit = deadlines.REGISTRY_INTERACTIVE_SECONDS if seconds is None else seconds
        command = deadlines.active()
        by_command = command is not None and command.left() < limit
        if command is not None and by_command:
            limit = max(0.001, command.left())
        try:
            status, raw = self._raw(
                "GET", distribution_path(reference), headers=_auth_header(auth), timeout=limit, waiting=True
            )
        except TimeoutError:
            if command is not None and by_command:
                raise RegistryUnreachable(
                    f"the engine could not resolve {reference}: {command.describe()} passed before the registry "
                    "answered it",
                    hint=command.hint(f"the registry of {reference}"),
                ) from None
            raise RegistryUnreachable(
                f"the engine could not resolve {reference}: the registry gave it no whole answer within "
                f"{round(limit, 1):g} s",
                hint="the registry is slow or stopped answering: check it and the network, or allow more time "
                f"with {deadlines.REGISTRY_VARIABLE}=SECONDS (now {limit:g})",
            ) from None
        return digest_or_refusal(reference, status, _loads(raw))

    def pull_by_digest(
        self,
        reference: str,
        digest: str,
        *,
        auth: Mapping[str, str] | None = None,
        on_progress: Callable[[PullProgress], None] | None = None,
    ) -> str:
        """Pull ``reference@digest`` (``reference`` without tag) into the engine; return the image id.

        Only the digest is asked for, so what arrives is exactly the manifest named: a tag
        that moved in between cannot substitute another image. The engine's progress stream
        is read to its end (``on_progress`` hears each layer's steps and byte counts as they
        arrive); an error in it is a failed pull.
        """
        pinned = f"{reference}@{digest}"
        status, raw = self._raw(
            "POST",
            f"/images/create?fromImage={_quote(reference)}&tag={_quote(digest)}",
            body=b"",
            headers=_auth_header(auth),
            streaming=True,
            on_line=None if on_progress is None else _pull_events(on_progress),
        )
        problem = _stream_error(raw) if status == 200 else _message(_loads(raw))
        if problem is not None:
            if any(word in problem.lower() for word in AUTH_REFUSALS):
                raise RegistryError(
                    f"the registry refused to serve {pinned}: {problem}", hint="log in first (docker login REGISTRY)"
                )
            raise RegistryError(
                f"pulling {pinned} failed: {problem}",
                hint="check the registry address, that the engine can reach it, and the digest",
            )
        found = self.inspect_image(pinned)
        if found is None:
            raise RegistryError(f"the engine pulled {pinned} but cannot find it afterwards")
        return _id_in(found, f"inspecting {pinned}")

    def load_image(self, archive: Path) -> None:
        """``docker load`` a ``docker save`` archive (streamed from disk)."""
        status, raw = self._raw(
            "POST", "/images/load?quiet=1", body=archive, content_type="application/x-tar", streaming=True
        )
        problem = _stream_error(raw) if status == 200 else _message(_loads(raw))
        if problem is not None:
            raise EngineRefused(
                f"the engine refused loading {archive.name} ({status}): {problem}", status=status, explanation=problem
            )

    def tag_image(self, image: str, repository: str, tag: str) -> None:
        """Point ``repository:tag`` at ``image``."""
        self._call(
            "POST",
            f"/images/{_quote(image)}/tag?repo={_quote(repository)}&tag={_quote(tag)}",
            doing=f"tagging {image} as {repository}:{tag}",
        )

    def remove_image(self, image: str, *, force: bool = False, prune: bool = True) -> None:
        """Remove ``image`` (an id, or a tag: then only the tag unless it was the last)."""
        query = f"force={int(force)}&noprune={int(not prune)}"
        self._call("DELETE", f"/images/{_quote(image)}?{query}", doing=f"removing {image}")

    # -- containers ---------------------------------------------------------------------------

    def create_container(
        self, image: str, command: Sequence[str] | None = None, **options: Unpack[ContainerOptions]
    ) -> str:
        """Create (not start) a container labelled :data:`LABEL`; return its id."""
        name = options.get("name") or f"terminai-{os.urandom(6).hex()}"
        _, body = self._call(
            "POST",
            f"/containers/create?name={_quote(name)}",
            doing=f"creating a container from {image}",
            document=_container_document(image, command, options),
        )
        return _id_in(body, f"creating a container from {image}")

    def start_container(self, container: str) -> None:
        self._call("POST", f"/containers/{container}/start", doing=f"starting container {container[:12]}")

    def wait_container(self, container: str, *, timeout: float) -> int:
        """The container's exit code; :class:`TimeoutError` when it runs longer than ``timeout`` seconds."""
        status, raw = self._raw("POST", f"/containers/{container}/wait", body=b"", timeout=timeout, waiting=True)
        answer = _loads(raw)
        if status != 200 or not isinstance(answer, dict):
            explanation = _message(answer)
            raise EngineRefused(
                f"the engine refused waiting for container {container[:12]} ({status}): {explanation}",
                status=status,
                explanation=explanation,
            )
        code = answer.get("StatusCode", 1)
        if type(code) is not int:
            raise EngineError(f"the engine answered waiting for container {container[:12]} without an exit code")
        return code

    def container_logs(self, container: str) -> tuple[bytes, bytes]:
        """What the (stopped) container wrote: (stdout, stderr)."""
        status, raw = self._raw("GET", f"/containers/{container}/logs?stdout=1&stderr=1")
        if status != 200:
            explanation = _message(_loads(raw))
            raise EngineRefused(
                f"the engine refused the logs of container {container[:12]} ({status}): {explanation}",
                status=status,
                explanation=explanation,
            )
        return demultiplex(raw)

    def kill_container(self, container: str) -> None:
        self._call("POST", f"/containers/{container}/kill", doing=f"killing container {container[:12]}", ok=(204, 409))

    def remove_container(self, container: str) -> None:
        """Remove the container, running or not (``docker rm -f``); an absent one is no error."""
        self._call(
            "DELETE",
            f"/containers/{container}?force=1&v=1",
            doing=f"removing container {container[:12]}",
            ok=(204, 404),
        )

    def put_archive(self, container: str, path: str, archive: bytes) -> None:
        """Unpack the tar ``archive`` at ``path`` in the (stopped) container's filesystem."""
        self._call(
            "PUT",
            f"/containers/{container}/archive?path={_quote(path)}",
            doing=f"copying into container {container[:12]}",
            body=archive,
            content_type="application/x-tar",
        )

    def commit(self, container: str, *, changes: Sequence[str] = ()) -> str:
        """The container's filesystem as a new image (``docker commit``); return the image id."""
        query = "".join(f"&changes={_quote(change)}" for change in changes)
        _, body = self._call(
            "POST", f"/commit?container={container}{query}", doing=f"committing container {container[:12]}", body=b""
        )
        return _id_in(body, f"committing container {container[:12]}")

    def run(
        self,
        image: str,
        command: Sequence[str] | None = None,
        *,
        timeout: float = 300,
        **options: Unpack[ContainerOptions],
    ) -> tuple[int, bytes, bytes]:
        """Run a container to completion; return (exit code, stdout, stderr). Always removed."""
        container = self.create_container(image, command, **options)
        try:
            self.start_container(container)
            try:
                code = self.wait_container(container, timeout=timeout)
            except TimeoutError:
                self.kill_container(container)
                raise EngineError(f"container from {image} did not finish within {timeout:.0f} s") from None
            out, err = self.container_logs(container)
            return code, out, err
        finally:
            try:  # noqa: SIM105  (contextlib is not loaded on the launch path)
                self.remove_container(container)
            except EngineError:
                pass  # the engine went away: nothing left to clean here


def _pull_events(on_progress: Callable[[PullProgress], None]) -> Callable[[bytes], None]:
    """A line listener turning a pull's JSON lines into :class:`PullProgress` steps."""

    def heard(line: bytes) -> None:
        try:
            item = json.loads(line)
        except ValueError:
            return
        if not isinstance(item, dict) or item.get("error") or not item.get("id") or not item.get("status"):
            return
        detail = item.get("progressDetail")
        counts = detail if isinstance(detail, dict) else {}
        current, total = counts.get("current"), counts.get("total")
        on_progress(
            PullProgress(
                layer=str(item["id"]),
                status=str(item["status"]),
                current=current if type(current) is int and current >= 0 else 0,
                total=total if type(total) is int and total >= 0 else 0,
            )
        )

    return heard


def _id_in(answer: Any, doing: str) -> str:
    """The ``Id`` of an engine's answer, or the :class:`EngineError` for an answer without one."""
    found = answer.get("Id") if isinstance(answer, dict) else None
    if not isinstance(found, str) or not found:
        raise EngineError(f"the engine answered {doing} without an id: {str(answer)[:80]!r}")
    return found


def _loads(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw.strip() else None
    except ValueError:
        return raw.decode(errors="replace")


def _auth_header(auth: Mapping[str, str] | None) -> dict[str, str] | None:
    if not auth:
        return None
    import base64  # noqa: PLC0415  (only with credentials)

    return {"X-Registry-Auth": base64.urlsafe_b64encode(json.dumps(dict(auth)).encode()).decode()}


def _container_document(image: str, command: Sequence[str] | None, options: ContainerOptions) -> dict[str, Any]:
    """The ``POST /containers/create`` body for ``options`` (the docker SDK's names)."""
    host: dict[str, Any] = {}
    if "network_mode" in options:
        host["NetworkMode"] = options["network_mode"]
    if options.get("read_only"):
        host["ReadonlyRootfs"] = True
    if "tmpfs" in options:
        host["Tmpfs"] = dict(options["tmpfs"])
    if "volumes" in options:
        host["Binds"] = [
            f"{source}:{bind['bind']}:{bind.get('mode', 'rw')}" for source, bind in options["volumes"].items()
        ]
    if "cap_drop" in options:
        host["CapDrop"] = list(options["cap_drop"])
    if "security_opt" in options:
        host["SecurityOpt"] = list(options["security_opt"])
    if options.get("runtime"):
        host["Runtime"] = options["runtime"]
    document: dict[str, Any] = {"Image": image, "Labels": {LABEL: "1", **options.get("labels", {})}, "HostConfig": host}
    if command is not None:
        document["Cmd"] = list(command)
    if "entrypoint" in options:
        document["Entrypoint"] = list(options["entrypoint"])
    if "environment" in options:
        document["Env"] = [f"{key}={value}" for key, value in options["environment"].items()]
    if "user" in options:
        document["User"] = options["user"]
    return document


def no_engine(errors: list[EngineError]) -> EngineError:
    """The error to raise when no candidate answered: the default socket's story matters
    most, unless some socket refused us outright."""
    denied = [e for e in errors if "permission denied" in e.message]
    return (denied or errors or [EngineError("no container engine found")])[0]


def connect(
    env: Mapping[str, str] | None = None,
    *,
    timeout: float = deadlines.ENGINE_REQUEST_SECONDS,
    probe: float = deadlines.ENGINE_BATCH_PROBE_SECONDS,
) -> DockerApi:
    """The build's, the contract suite's and the release's engine: the first Docker API that answers.

    ``probe`` bounds reaching it (connect and first answer; ``TERMINAI_ENGINE_TIMEOUT``
    overrides it), ``timeout`` each later request's whole answer: see ``docs/DEADLINES.md``.
    It never reads a session start's early answers.
    """
    return DockerApi.connect(os.environ if env is None else env, timeout=timeout, probe=probe)
