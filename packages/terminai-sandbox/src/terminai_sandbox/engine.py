"""The one wrapper around the docker SDK (dockerd, or podman's Docker-compatible socket).

Everything outside the launch kernel that talks to an engine goes through :class:`Engine`:
it checks the API version with an actionable message, labels every container it creates,
and removes them on every path (:meth:`Engine.container`). Where engines live and how a
failure to reach one is explained come from :mod:`terminai_sandbox.common.dockerapi`, which
the launch kernel also uses for the few calls a session start makes without the SDK.

Starting an engine is not this module's job: ``scripts/ensure-engine`` installs and starts
Debian's dockerd for maintainers and CI; errors here name it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import docker
import docker.errors
import requests

from terminai_sandbox.common.dockerapi import (
    AUTH_REFUSALS,
    candidate_hosts,
    check_api_version,
    diagnose,
    digest_or_refusal,
    engine_name,
    no_engine,
)
from terminai_sandbox.errors import EngineError, RegistryError

LABEL = "dev.terminai.sandbox"


@dataclass(frozen=True, slots=True, kw_only=True)
class PullProgress:
    """One step of a pull as the engine reports it: a layer's status and, while it moves, bytes."""

    layer: str  # the engine's short layer id
    status: str  # "Downloading", "Extracting", "Pull complete", ...
    current: int = 0  # bytes so far (0 when the step has no byte count)
    total: int = 0


PullCallback = Callable[[PullProgress], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineInfo:
    """Which engine answered, where, and its API version."""

    host: str
    name: str  # "docker" | "podman"
    version: str
    api_version: str


class Engine:
    """A connected, version-checked docker SDK client."""

    def __init__(self, client: docker.DockerClient, info: EngineInfo, *, timeout: int = 120) -> None:
        self.client = client
        self.info = info
        self.timeout = timeout

    @classmethod
    def connect(cls, env: Mapping[str, str] | None = None, *, timeout: int = 120) -> Engine:
        """Connect to the first engine that answers; raise :class:`EngineError` saying why none did."""
        env = os.environ if env is None else env
        errors: list[EngineError] = []
        for host in candidate_hosts(env):
            try:
                client = docker.DockerClient(base_url=host, timeout=timeout, version="auto")
                version: dict[str, Any] = dict(client.version())
            except (docker.errors.DockerException, requests.RequestException, OSError) as exc:
                errors.append(diagnose(host, exc))
                if env.get("DOCKER_HOST"):
                    break
                continue
            api = str(version.get("ApiVersion", "0.0"))
            check_api_version(api, host)
            info = EngineInfo(
                host=host, name=engine_name(version), version=str(version.get("Version", "?")), api_version=api
            )
            return cls(client, info, timeout=timeout)
        raise no_engine(errors)

    def runtimes(self) -> list[str]:
        """The names of the OCI runtimes the engine can run containers with (``info`` ``Runtimes``)."""
        try:
            document: dict[str, Any] = dict(self.client.info())
        except docker.errors.APIError as exc:
            raise EngineError(f"the engine at {self.info.host} refused GET /info: {exc.explanation}") from None
        except requests.RequestException as exc:
            raise EngineError(f"the engine at {self.info.host} stopped answering: {exc}") from None
        return sorted(document.get("Runtimes") or {})

    def inspect_image(self, reference: str) -> dict[str, Any] | None:
        """The engine's ``image inspect`` document for ``reference``, or None when it has no such image."""
        try:
            found: dict[str, Any] = self.client.api.inspect_image(reference)
        except docker.errors.ImageNotFound:
            return None
        except docker.errors.APIError as exc:
            raise EngineError(f"the engine cannot look up {reference}: {exc.explanation}") from None
        except requests.RequestException as exc:
            raise EngineError(f"the engine at {self.info.host} stopped answering: {exc}") from None
        return found

    def distribution_digest(self, reference: str, *, auth: Mapping[str, str] | None = None) -> str:
        """The digest the registry serves for ``reference`` now, asked through the engine."""
        try:
            body = self.client.api.inspect_distribution(reference, auth_config=dict(auth) if auth else None)
        except docker.errors.APIError as exc:
            return digest_or_refusal(reference, exc.status_code or 500, {"message": exc.explanation})
        except requests.RequestException as exc:
            raise EngineError(f"the engine at {self.info.host} stopped answering: {exc}") from None
        return digest_or_refusal(reference, 200, body)

    def pull_by_digest(self, reference: str, digest: str, *, on_progress: PullCallback | None = None) -> str:
        """Pull ``reference@digest`` (``reference`` without tag) into the engine; return the image id.

        Only the digest is asked for, so what arrives is exactly the manifest named: a tag
        that moved in between cannot substitute another image. The engine's progress stream
        is read to its end (``on_progress`` hears each layer's steps and byte counts); an
        error in it is a failed pull, not something to notice afterwards.
        """
        pinned = f"{reference}@{digest}"
        try:
            for event in self.client.api.pull(reference, tag=digest, stream=True, decode=True):
                if not isinstance(event, dict):
                    continue
                if "error" in event:
                    raise docker.errors.APIError(str(event["error"]), explanation=str(event["error"]))
                if on_progress is not None and event.get("id") and event.get("status"):
                    detail = event.get("progressDetail") or {}
                    on_progress(
                        PullProgress(
                            layer=str(event["id"]),
                            status=str(event["status"]),
                            current=int(detail.get("current") or 0),
                            total=int(detail.get("total") or 0),
                        )
                    )
        except docker.errors.APIError as exc:
            message = str(exc.explanation or exc)
            if any(word in message.lower() for word in AUTH_REFUSALS):
                raise RegistryError(
                    f"the registry refused to serve {pinned}: {message}", hint="log in first (docker login REGISTRY)"
                ) from None
            raise RegistryError(
                f"pulling {pinned} failed: {message}",
                hint="check the registry address, that the engine can reach it, and the digest",
            ) from None
        except requests.RequestException as exc:
            raise EngineError(f"the engine at {self.info.host} stopped answering during a pull: {exc}") from None
        found = self.inspect_image(pinned)
        if found is None:
            raise RegistryError(f"the engine pulled {pinned} but cannot find it afterwards")
        return str(found["Id"])

    @contextlib.contextmanager
    def container(self, image: str, command: Sequence[str] | None = None, **kwargs: Any) -> Iterator[Any]:
        """Create a labelled container, yield it, and remove it on every path."""
        labels = {LABEL: "1", **kwargs.pop("labels", {})}
        name = kwargs.pop("name", f"terminai-{os.urandom(6).hex()}")
        created = self.client.containers.create(image, command, labels=labels, name=name, **kwargs)
        try:
            yield created
        finally:
            with contextlib.suppress(docker.errors.APIError, requests.RequestException):
                created.remove(force=True)

    def run(
        self, image: str, command: Sequence[str] | None = None, *, timeout: float = 300, **kwargs: Any
    ) -> tuple[int, bytes, bytes]:
        """Run a container to completion; return (exit code, stdout, stderr). Always removed."""
        with self.container(image, command, **kwargs) as created:
            created.start()
            try:
                status = created.wait(timeout=timeout)
            except requests.exceptions.ReadTimeout:
                created.kill()
                raise EngineError(f"container from {image} did not finish within {timeout:.0f} s") from None
            out = created.logs(stdout=True, stderr=False)
            err = created.logs(stdout=False, stderr=True)
            return int(status.get("StatusCode", 1)), bytes(out), bytes(err)
