"""The one wrapper around the Docker API (dockerd, or podman's Docker-compatible socket).

Everything that talks to an engine goes through :class:`Engine`: it checks the API
version with an actionable message, labels every container it creates, and removes them
on every path (:meth:`Engine.container`). :func:`ensure` starts Debian's ``dockerd`` on a
Debian/Ubuntu host where we are root and no engine answers.

The docker SDK (with requests and urllib3 under it) takes ~80 ms to import. A session
launch needs only ``GET /version`` and ``GET /images/{ref}/json``, so :func:`api_get` asks
those over a plain socket with the standard library, and :attr:`Engine.client` creates the
SDK client on first use (pulls, builds, containers).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from terminai_sandbox.errors import EngineError, RegistryError
from terminai_sandbox.records import frozen_record
from terminai_sandbox.reference import is_digest

TYPE_CHECKING = False  # not `from typing import ...`: a launch never imports typing (~3 ms)
if TYPE_CHECKING:
    from typing import Any

    import docker

LABEL = "dev.terminai.sandbox"
MIN_API_VERSION = (1, 40)  # Docker 19.03 / podman 2: the oldest API we exercise
PIDFILE = Path("/run/terminai-dockerd.pid")
LOGFILE = Path("/var/log/terminai-dockerd.log")
DEFAULT_SOCKET = "/var/run/docker.sock"


def candidate_hosts(env: Mapping[str, str]) -> list[str]:
    """Where to look for a Docker API, in order: DOCKER_HOST, the default socket, podman's."""
    hosts = []
    if env.get("DOCKER_HOST"):
        return [env["DOCKER_HOST"]]
    hosts.append(f"unix://{DEFAULT_SOCKET}")
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime:
        hosts.append(f"unix://{runtime}/podman/podman.sock")
    hosts.append("unix:///run/podman/podman.sock")
    return hosts


def _plain_socket(host: str, timeout: float) -> socket.socket | None:
    """A connected socket for ``unix://`` and ``tcp://`` hosts; None for schemes left to the SDK."""
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
    return None


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
) -> tuple[int, dict[str, str], bytes] | None:
    """``GET path`` on a Docker API host with the standard library: (status, headers, body).

    Returns None when the host's scheme (ssh://, https) needs the SDK. Raises OSError when
    the socket cannot be reached and ValueError when the answer is not HTTP. HTTP/1.0 makes
    the server close the connection after one response, so the body is everything up to EOF.
    """
    sock = _plain_socket(host, timeout)
    if sock is None:
        return None
    with sock:
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


def api_get(
    host: str, path: str, *, timeout: float = 30, headers: Mapping[str, str] | None = None
) -> tuple[int, Any] | None:
    """Like :func:`api_request`, with the body decoded as JSON (None when empty)."""
    answer = api_request(host, path, timeout=timeout, headers=headers)
    if answer is None:
        return None
    status, _, body = answer
    return status, (json.loads(body) if body.strip() else None)


def _ping_version(host: str, timeout: float) -> dict[str, Any] | None:
    """``/_ping`` (what the docker CLI itself asks first): API version and server from the headers.

    It answers in well under a millisecond where ``/version`` takes several. None when the
    headers do not say enough (then :meth:`Engine.connect` asks ``/version``).
    """
    answer = api_request(host, "/_ping", timeout=timeout)
    if answer is None or answer[0] != 200:
        return None
    headers = answer[1]
    server, api = headers.get("server", ""), headers.get("api-version", "")
    product, _, rest = server.partition("/")
    if not api or not rest or product.lower() not in ("docker", "libpod"):
        return None
    name = "podman" if product.lower() == "libpod" or "libpod-api-version" in headers else "Engine"
    return {"ApiVersion": api, "Version": rest.split()[0], "Components": [{"Name": name}]}


# How dockerd words a registry's refusal to an anonymous or wrong login (it answers 500 for them).
_AUTH_REFUSALS = ("unauthorized", "denied", "no basic auth credentials", "authentication required")

_SAFE_PATH = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~/:@")


def _quote(text: str) -> str:
    """Percent-encode ``text`` for a URL path (image references rarely need it; urllib.parse is not loaded)."""
    return "".join(c if c in _SAFE_PATH else "".join(f"%{b:02X}" for b in c.encode()) for c in text)


def _diagnose(host: str, exc: Exception) -> EngineError:
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


@frozen_record
class EngineInfo:
    """Which engine answered, where, and its API version."""

    host: str
    name: str  # "docker" | "podman"
    version: str
    api_version: str


class Engine:
    """A connected, version-checked Docker API client."""

    def __init__(self, client: docker.DockerClient | None, info: EngineInfo, *, timeout: int = 120) -> None:
        self._client = client
        self.info = info
        self.timeout = timeout

    @property
    def client(self) -> docker.DockerClient:
        """The docker SDK client, created on first use (pinned to the API version already read)."""
        if self._client is None:
            import docker  # noqa: PLC0415  (slow import; see the module docstring)

            self._client = docker.DockerClient(
                base_url=self.info.host, timeout=self.timeout, version=self.info.api_version
            )
        return self._client

    @classmethod
    def connect(cls, env: Mapping[str, str] | None = None, *, timeout: int = 120) -> Engine:
        """Connect to the first engine that answers; raise :class:`EngineError` saying why none did."""
        env = os.environ if env is None else env
        errors: list[EngineError] = []
        for host in candidate_hosts(env):
            client = None
            try:
                pinged = _ping_version(host, min(timeout, 30))
                answer = (200, pinged) if pinged is not None else api_get(host, "/version", timeout=min(timeout, 30))
                if answer is None:
                    client, version = _sdk_version(host, timeout)
                elif answer[0] != 200 or not isinstance(answer[1], dict):
                    raise ValueError(f"GET /version answered {answer[0]}")
                else:
                    version = answer[1]
            except (OSError, ValueError) as exc:
                errors.append(_diagnose(host, exc))
                if env.get("DOCKER_HOST"):
                    break
                continue
            api = str(version.get("ApiVersion", "0.0"))
            major, minor = (int(p) for p in api.split(".")[:2])
            if (major, minor) < MIN_API_VERSION:
                raise EngineError(
                    f"engine API {api} at {host} is too old (need {MIN_API_VERSION[0]}.{MIN_API_VERSION[1]}+)",
                    hint="upgrade Docker to 19.03+ or Podman to 2.0+",
                )
            components = " ".join(c.get("Name", "") for c in version.get("Components", []) or [])
            name = "podman" if "podman" in components.lower() else "docker"
            info = EngineInfo(host=host, name=name, version=str(version.get("Version", "?")), api_version=api)
            return cls(client, info, timeout=timeout)
        # The default socket's story matters most, unless some socket refused us outright.
        denied = [e for e in errors if "permission denied" in e.message]
        raise (denied or errors or [EngineError("no container engine found")])[0]

    def runtimes(self) -> list[str]:
        """The names of the OCI runtimes the engine can run containers with (``GET /info`` ``Runtimes``)."""
        try:
            answer = api_get(self.info.host, f"/v{self.info.api_version}/info", timeout=self.timeout)
        except (OSError, ValueError) as exc:
            raise EngineError(f"the engine at {self.info.host} stopped answering: {exc}") from None
        if answer is None:
            document: Any = self.client.info()
        elif answer[0] != 200 or not isinstance(answer[1], dict):
            raise EngineError(f"the engine at {self.info.host} answered GET /info with {answer[0]}")
        else:
            document = answer[1]
        return sorted((document.get("Runtimes") or {}).keys())

    def inspect_image(self, reference: str) -> dict[str, Any] | None:
        """The engine's ``image inspect`` document for ``reference``, or None when it has no such image."""
        path = f"/v{self.info.api_version}/images/{_quote(reference)}/json"
        try:
            answer = api_get(self.info.host, path, timeout=self.timeout)
        except (OSError, ValueError) as exc:
            raise EngineError(f"the engine at {self.info.host} stopped answering: {exc}") from None
        if answer is None:
            import docker.errors  # noqa: PLC0415

            try:
                found: dict[str, Any] = self.client.api.inspect_image(reference)
            except docker.errors.ImageNotFound:
                return None
            except docker.errors.APIError as exc:
                raise EngineError(f"the engine cannot look up {reference}: {exc.explanation}") from None
            return found
        status, body = answer
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
        path = f"/v{self.info.api_version}/distribution/{_quote(reference)}/json"
        headers = {}
        if auth:
            import base64  # noqa: PLC0415  (only with credentials)

            headers["X-Registry-Auth"] = base64.urlsafe_b64encode(json.dumps(dict(auth)).encode()).decode()
        try:
            answer = api_get(self.info.host, path, timeout=self.timeout, headers=headers)
        except (OSError, ValueError) as exc:
            raise EngineError(f"the engine at {self.info.host} stopped answering: {exc}") from None
        if answer is None:
            import docker.errors  # noqa: PLC0415

            try:
                body = self.client.api.inspect_distribution(reference, auth_config=dict(auth) if auth else None)
            except docker.errors.APIError as exc:
                answer = (exc.status_code or 500, {"message": exc.explanation})
            else:
                answer = (200, body)
        status, body = answer
        digest = (body.get("Descriptor") or {}).get("digest") if isinstance(body, dict) else None
        if status == 200 and isinstance(digest, str) and is_digest(digest):
            return digest
        message = str(body.get("message") if isinstance(body, dict) else body)
        if status == 404 or "manifest unknown" in message:
            raise RegistryError(f"{reference}: manifest unknown", hint="check the repository and tag")
        if status in (401, 403) or any(word in message.lower() for word in _AUTH_REFUSALS):
            raise RegistryError(
                f"the registry refused {reference}: {message}", hint="log in first (docker login REGISTRY)"
            )
        raise RegistryError(
            f"the engine could not resolve {reference} ({status}): {message}",
            hint="check the registry address and that the engine can reach it",
        )

    def pull_by_digest(self, reference: str, digest: str) -> str:
        """Pull ``reference@digest`` (``reference`` without tag) into the engine; return the image id.

        Only the digest is asked for, so what arrives is exactly the manifest named: a tag
        that moved in between cannot substitute another image.
        """
        import docker.errors  # noqa: PLC0415
        import requests  # noqa: PLC0415

        pinned = f"{reference}@{digest}"
        try:
            self.client.images.pull(reference, tag=digest)
        except docker.errors.APIError as exc:
            message = str(exc.explanation or exc)
            if any(word in message.lower() for word in _AUTH_REFUSALS):
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
        import docker.errors  # noqa: PLC0415
        import requests  # noqa: PLC0415

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
        import requests  # noqa: PLC0415

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


def _sdk_version(host: str, timeout: int) -> tuple[docker.DockerClient, dict[str, Any]]:
    """For hosts the plain socket does not speak (ssh://, TLS): ask through the SDK."""
    import docker  # noqa: PLC0415
    import requests  # noqa: PLC0415

    try:
        client = docker.DockerClient(base_url=host, timeout=timeout, version="auto")
        return client, dict(client.version())
    except (docker.errors.DockerException, requests.RequestException) as exc:
        raise ConnectionError(str(exc)) from None


def _is_debian_root() -> bool:
    return os.geteuid() == 0 and Path("/etc/debian_version").exists() and shutil.which("apt-get") is not None


def _pid_alive(pidfile: Path) -> int | None:
    """The pid in ``pidfile`` if it is a running dockerd (a stale file may name a reused pid)."""
    try:
        pid = int(pidfile.read_text().strip())
        os.kill(pid, 0)
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
    except (OSError, ValueError):
        return None
    return pid if comm == "dockerd" else None


def dockerd_pid() -> int | None:
    """The pid of the local dockerd: one :func:`ensure` started, else the system's (``/var/run/docker.pid``)."""
    return _pid_alive(PIDFILE) or _pid_alive(Path("/var/run/docker.pid"))


def ensure(env: Mapping[str, str] | None = None, *, wait_seconds: float = 90) -> tuple[Engine, list[str]]:
    """Return a working engine, installing and starting dockerd when allowed; report what was done."""
    env = os.environ if env is None else env
    done: list[str] = []
    try:
        return Engine.connect(env), ["engine already answering"]
    except EngineError as first:
        if env.get("DOCKER_HOST") or not _is_debian_root():
            raise EngineError(
                first.message,
                hint=first.hint + " (automatic start is only done as root on Debian/Ubuntu without DOCKER_HOST)",
            ) from None
    import subprocess  # noqa: PLC0415  (only when starting dockerd; launches never do)

    if shutil.which("dockerd") is None:
        subprocess.run(["apt-get", "update", "-qq"], check=True, capture_output=True)
        subprocess.run(
            ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "docker.io"],
            check=True,
            capture_output=True,
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
        )
        done.append("installed Debian's docker.io")
    if _pid_alive(PIDFILE) is None:
        for stale in (PIDFILE, Path("/var/run/docker.pid")):
            if stale.exists() and _pid_alive(stale) is None:
                stale.unlink()
        LOGFILE.parent.mkdir(parents=True, exist_ok=True)
        with LOGFILE.open("ab") as log:
            # No bridge and no iptables: our containers run with --network none.
            subprocess.Popen(
                [
                    "dockerd",
                    "--bridge=none",
                    "--iptables=false",
                    "--ip6tables=false",
                    f"--pidfile={PIDFILE}",
                    f"--host=unix://{DEFAULT_SOCKET}",
                ],
                stdout=log,
                stderr=log,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        done.append(f"started dockerd (pid file {PIDFILE}, log {LOGFILE})")
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            engine = Engine.connect({})
        except EngineError:
            if time.monotonic() > deadline:
                raise EngineError(
                    f"dockerd did not answer within {wait_seconds:.0f} s", hint=f"read {LOGFILE}"
                ) from None
            time.sleep(0.5)
            continue
        done.append(f"docker {engine.info.version} answering at {engine.info.host}")
        return engine, done


def stop() -> str:
    """Stop a dockerd that :func:`ensure` started (never one started by something else)."""
    pid = _pid_alive(PIDFILE)
    if pid is None:
        return "no dockerd started by terminai-sandbox is running"
    os.kill(pid, signal.SIGTERM)
    for _ in range(100):
        if _pid_alive(PIDFILE) is None:
            return f"stopped dockerd (pid {pid})"
        time.sleep(0.1)
    return f"sent SIGTERM to dockerd (pid {pid}); it is still shutting down"
