"""The one wrapper around the Docker API (dockerd, or podman's Docker-compatible socket).

Everything that talks to an engine goes through :class:`Engine`: it checks the API
version with an actionable message, labels every container it creates, and removes them
on every path (:meth:`Engine.container`). :func:`ensure` starts Debian's ``dockerd`` on a
Debian/Ubuntu host where we are root and no engine answers.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import docker.errors
import requests

from terminai_sandbox.errors import EngineError

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


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineInfo:
    host: str
    name: str  # "docker" | "podman"
    version: str
    api_version: str


class Engine:
    """A connected, version-checked Docker API client."""

    def __init__(self, client: docker.DockerClient, info: EngineInfo) -> None:
        self.client = client
        self.info = info

    @classmethod
    def connect(cls, env: Mapping[str, str] | None = None, *, timeout: int = 120) -> Engine:
        """Connect to the first engine that answers; raise :class:`EngineError` saying why none did."""
        env = os.environ if env is None else env
        errors: list[EngineError] = []
        for host in candidate_hosts(env):
            try:
                client = docker.DockerClient(base_url=host, timeout=timeout, version="auto")
                version = client.version()
            except (docker.errors.DockerException, requests.RequestException, OSError) as exc:
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
            components = " ".join(c.get("Name", "") for c in version.get("Components", []))
            name = "podman" if "podman" in components.lower() else "docker"
            info = EngineInfo(host=host, name=name, version=str(version.get("Version", "?")), api_version=api)
            return cls(client, info)
        # The default socket's story matters most, unless some socket refused us outright.
        denied = [e for e in errors if "permission denied" in e.message]
        raise (denied or errors or [EngineError("no container engine found")])[0]

    @contextlib.contextmanager
    def container(self, image: str, command: Sequence[str] | None = None, **kwargs: Any) -> Iterator[Any]:
        """Create a labelled container, yield it, and remove it on every path."""
        labels = {LABEL: "1", **kwargs.pop("labels", {})}
        name = kwargs.pop("name", f"terminai-{uuid.uuid4().hex[:12]}")
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
