"""The Docker API calls preflight makes, over a plain socket with the standard library.

A session start asks the engine four things: which engine answers and its API version
(``/_ping``, else ``/version``), for a session under gVisor whether it has the runtime
(``/info``), the local image by reference (``/images/{ref}/json``) and, for a ``REPO:TAG``
reference, the digest the registry serves now (``/distribution/{ref}/json``). The docker
SDK (with requests and urllib3 under it) takes ~80 ms to import, more than the launcher's
whole own cost, so the kernel asks these itself;
everything else (pulls, builds, containers) goes through the SDK in
:mod:`terminai_sandbox.engine`.

Where engines live and how a failure to reach one is explained (:func:`candidate_hosts`,
:func:`diagnose`) is defined here once; :mod:`terminai_sandbox.engine` uses both.
"""

from __future__ import annotations

import json
import shutil
import socket
from collections.abc import Mapping
from pathlib import Path

from terminai_sandbox.common.records import frozen_record
from terminai_sandbox.common.reference import is_digest
from terminai_sandbox.errors import EngineError, RegistryError

TYPE_CHECKING = False  # not `from typing import ...`: a launch never imports typing (~3 ms)
if TYPE_CHECKING:
    from typing import Any

MIN_API_VERSION = (1, 40)  # Docker 19.03 / podman 2: the oldest API we exercise
DEFAULT_SOCKET = "/var/run/docker.sock"
PLAIN_SCHEMES = ("unix://", "tcp://", "http://")

# How dockerd words a registry's refusal to an anonymous or wrong login (it answers 500 for them).
AUTH_REFUSALS = ("unauthorized", "denied", "no basic auth credentials", "authentication required")

_SAFE_PATH = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~/:@")


def candidate_hosts(env: Mapping[str, str]) -> list[str]:
    """Where to look for a Docker API, in order: DOCKER_HOST, the default socket, podman's."""
    if env.get("DOCKER_HOST"):
        return [env["DOCKER_HOST"]]
    hosts = [f"unix://{DEFAULT_SOCKET}"]
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime:
        hosts.append(f"unix://{runtime}/podman/podman.sock")
    hosts.append("unix:///run/podman/podman.sock")
    return hosts


def speaks(env: Mapping[str, str]) -> bool:
    """Whether this client can talk to the engine ``env`` points at (ssh:// and the like need the SDK)."""
    return all(host.startswith(PLAIN_SCHEMES) for host in candidate_hosts(env))


def diagnose(host: str, exc: Exception) -> EngineError:
    """Why ``host`` did not answer, in words a user can act on."""
    path = host.removeprefix("unix://") if host.startswith("unix://") else None
    text = str(exc)
    if path and Path(path).exists() and ("Permission denied" in text or "PermissionError" in text):
        return EngineError(
            f"permission denied on the engine socket {path}",
            hint="add your user to the 'docker' group (then log in again), or use rootless podman "
            "and set DOCKER_HOST=unix://$XDG_RUNTIME_DIR/podman/podman.sock",
        )
    if path and not Path(path).exists():
        if shutil.which("dockerd") is None and shutil.which("podman") is None:
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
    major, minor = (int(p) for p in api.split(".")[:2])
    if (major, minor) < MIN_API_VERSION:
        raise EngineError(
            f"engine API {api} at {host} is too old (need {MIN_API_VERSION[0]}.{MIN_API_VERSION[1]}+)",
            hint="upgrade Docker to 19.03+ or Podman to 2.0+",
        )


def engine_name(version: Mapping[str, Any]) -> str:
    """``docker`` or ``podman``, from a ``/version`` document."""
    components = " ".join(c.get("Name", "") for c in version.get("Components", []) or [])
    return "podman" if "podman" in components.lower() else "docker"


def _connect(host: str, timeout: float) -> socket.socket:
    if host.startswith("unix://"):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(host.removeprefix("unix://"))
        except OSError:
            sock.close()
            raise
        return sock
    if host.startswith(("tcp://", "http://")):
        address = host.split("://", 1)[1].rstrip("/")
        name, _, port = address.rpartition(":")
        return socket.create_connection((name.strip("[]"), int(port)), timeout=timeout)
    raise ValueError(f"{host}: only unix://, tcp:// and http:// engine addresses are spoken here")


def _dechunk(body: bytes) -> bytes:
    out, rest = bytearray(), body
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out += rest[:size]
        rest = rest[size + 2 :]
    return bytes(out)


def api_request(
    host: str, path: str, *, timeout: float = 30, headers: Mapping[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """``GET path`` on a Docker API host: (status, headers, body).

    Raises OSError when the socket cannot be reached and ValueError when the answer is not
    HTTP. HTTP/1.0 makes the server close the connection after one response, so the body is
    everything up to EOF.
    """
    with _connect(host, timeout) as sock:
        extra = "".join(f"{name}: {value}\r\n" for name, value in (headers or {}).items())
        sock.sendall(f"GET {path} HTTP/1.0\r\nHost: engine\r\nAccept: application/json\r\n{extra}\r\n".encode())
        chunks = []
        while data := sock.recv(65536):
            chunks.append(data)
    head, sep, body = b"".join(chunks).partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parts = status_line.split()
    if not sep or len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise ValueError(f"not an HTTP answer from {host}: {status_line[:80]!r}")
    answered = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in header_lines)}
    if answered.get("transfer-encoding", "").lower() == "chunked":
        body = _dechunk(body)
    return int(parts[1]), answered, body


def api_get(host: str, path: str, *, timeout: float = 30, headers: Mapping[str, str] | None = None) -> tuple[int, Any]:
    """Like :func:`api_request`, with the body decoded as JSON (None when empty)."""
    status, _, body = api_request(host, path, timeout=timeout, headers=headers)
    return status, (json.loads(body) if body.strip() else None)


def _ping_version(host: str, timeout: float) -> dict[str, Any] | None:
    """``/_ping`` (what the docker CLI itself asks first): API version and server from the headers.

    It answers in well under a millisecond where ``/version`` takes several. None when the
    headers do not say enough (then :meth:`DockerApi.connect` asks ``/version``).
    """
    status, headers, _ = api_request(host, "/_ping", timeout=timeout)
    if status != 200:
        return None
    server, api = headers.get("server", ""), headers.get("api-version", "")
    product, _, rest = server.partition("/")
    if not api or not rest or product.lower() not in ("docker", "libpod"):
        return None
    name = "podman" if product.lower() == "libpod" or "libpod-api-version" in headers else "Engine"
    return {"ApiVersion": api, "Version": rest.split()[0], "Components": [{"Name": name}]}


def _quote(text: str) -> str:
    """Percent-encode ``text`` for a URL path (image references rarely need it; urllib.parse is not loaded)."""
    return "".join(c if c in _SAFE_PATH else "".join(f"%{b:02X}" for b in c.encode()) for c in text)


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
class EngineInfo:
    """Which engine answered, where, and its API version."""

    host: str
    name: str  # "docker" | "podman"
    version: str
    api_version: str


class DockerApi:
    """A connected, version-checked Docker API host, for the calls preflight makes."""

    def __init__(self, info: EngineInfo, *, timeout: float = 120) -> None:
        self.info = info
        self.timeout = timeout

    @classmethod
    def connect(cls, env: Mapping[str, str], *, timeout: float = 120) -> DockerApi:
        """The first engine that answers; :class:`EngineError` says why none did."""
        errors: list[EngineError] = []
        for host in candidate_hosts(env):
            try:
                version = _ping_version(host, min(timeout, 30))
                if version is None:
                    status, version = api_get(host, "/version", timeout=min(timeout, 30))
                    if status != 200 or not isinstance(version, dict):
                        raise ValueError(f"GET /version answered {status}")
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
            return cls(info, timeout=timeout)
        raise no_engine(errors)

    def _get(self, path: str, headers: Mapping[str, str] | None = None) -> tuple[int, Any]:
        try:
            return api_get(self.info.host, f"/v{self.info.api_version}{path}", timeout=self.timeout, headers=headers)
        except (OSError, ValueError) as exc:
            raise EngineError(f"the engine at {self.info.host} stopped answering: {exc}") from None

    def runtimes(self) -> list[str]:
        """The names of the OCI runtimes the engine can run containers with (``GET /info`` ``Runtimes``)."""
        status, body = self._get("/info")
        if status != 200 or not isinstance(body, dict):
            raise EngineError(f"the engine at {self.info.host} answered GET /info with {status}")
        return sorted(body.get("Runtimes") or {})

    def inspect_image(self, reference: str) -> dict[str, Any] | None:
        """The engine's ``image inspect`` document for ``reference``, or None when it has no such image."""
        status, body = self._get(f"/images/{_quote(reference)}/json")
        if status == 404:
            return None
        if status != 200 or not isinstance(body, dict):
            message = body.get("message") if isinstance(body, dict) else body
            raise EngineError(f"the engine cannot look up {reference} ({status}): {message}")
        return body

    def distribution_digest(self, reference: str, *, auth: Mapping[str, str] | None = None) -> str:
        """The digest the registry serves for ``reference`` now, asked through the engine.

        ``auth`` is what the docker CLI would send for the registry (username, password,
        serveraddress); it travels only over the engine's own socket.
        """
        headers = {}
        if auth:
            import base64  # noqa: PLC0415  (only with credentials)

            headers["X-Registry-Auth"] = base64.urlsafe_b64encode(json.dumps(dict(auth)).encode()).decode()
        status, body = self._get(f"/distribution/{_quote(reference)}/json", headers)
        return digest_or_refusal(reference, status, body)


def no_engine(errors: list[EngineError]) -> EngineError:
    """The error to raise when no candidate answered: the default socket's story matters
    most, unless some socket refused us outright."""
    denied = [e for e in errors if "permission denied" in e.message]
    return (denied or errors or [EngineError("no container engine found")])[0]
