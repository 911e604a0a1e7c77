"""The socket side of the engine client: where engines live, connecting, and requests sent early.

Split from :mod:`terminai_sandbox.common.dockerapi` so that a session start can send its
first requests (:func:`ask_early`) after importing only this module and ``_socket``, before
``json``, ``pathlib`` and the rest of the client and the kernel load (~10 ms). The client
(:func:`~terminai_sandbox.common.dockerapi.api_request`) reads those answers in place of
asking again.

Part of the launch kernel: standard library only.
"""

from __future__ import annotations

import _socket

TYPE_CHECKING = False  # not `from typing import ...`: a launch never imports typing (~3 ms)
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

DEFAULT_SOCKET = "/var/run/docker.sock"
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


def connect_socket(host: str, timeout: float) -> _socket.socket:
    """A connected stream socket to ``host``.

    A unix socket is made with ``_socket``, the C module under :mod:`socket`: importing
    :mod:`socket` itself turns the C constants into enums, ~5 ms of every session start.
    """
    if host.startswith("unix://"):
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(host.removeprefix("unix://"))
        except OSError:
            sock.close()
            raise
        return sock
    if host.startswith(("tcp://", "http://")):
        import socket  # noqa: PLC0415  (name resolution: an engine on the network only)

        address = host.split("://", 1)[1].rstrip("/")
        name, _, port = address.rpartition(":")
        return socket.create_connection((name.strip("[]"), int(port)), timeout=timeout)
    raise ValueError(f"{host}: only unix://, tcp:// and http:// engine addresses are spoken here")


def request_head(method: str, path: str, extra: str = "") -> bytes:
    return f"{method} {path} HTTP/1.0\r\nHost: engine\r\nAccept: application/json\r\n{extra}\r\n".encode()


# Requests sent before the launch kernel is imported, by (host, path); each is read once.
_EARLY: dict[tuple[str, str], _socket.socket] = {}


def ask_early(host: str, paths: Sequence[str], *, timeout: float = 5) -> None:
    """Send ``GET`` for each of ``paths`` to the unix socket ``host`` now, and read nothing yet.

    The engine answers while the launcher imports the rest of the kernel (~10 ms); the
    first :func:`~terminai_sandbox.common.dockerapi.api_request` for the same host and path reads that answer instead of
    asking again, so a session start waits on the engine less. Nothing is decided here:
    the answer is read, checked and used exactly as if it had been asked at that moment,
    and a request that cannot be sent is simply asked again then (and fails there, with
    its diagnosis). Only unix sockets: an engine on the network is asked when needed.
    Connecting may take ``timeout`` seconds, the launch's bound for reaching the engine
    (:data:`~.deadlines.ENGINE_PROBE_SECONDS`); the answer is read under the request's own deadline.
    """
    if not host.startswith("unix://"):
        return
    for path in paths:
        if (host, path) in _EARLY:
            continue
        try:
            sock = connect_socket(host, timeout)
        except OSError:
            return
        try:
            sock.sendall(request_head("GET", path))
        except OSError:
            sock.close()
            return
        _EARLY[(host, path)] = sock


def take_early(host: str, path: str) -> _socket.socket | None:
    """The socket of the request :func:`ask_early` sent for ``host`` and ``path``, once; else None."""
    return _EARLY.pop((host, path), None)


def forget_early() -> None:
    """Close the early requests nobody read: an answer is never read by a later, different launch."""
    while _EARLY:
        _EARLY.popitem()[1].close()


def quote_path(text: str) -> str:
    """Percent-encode ``text`` for a URL path (image references rarely need it; urllib.parse is not loaded)."""
    return "".join(c if c in _SAFE_PATH else "".join(f"%{b:02X}" for b in c.encode()) for c in text)


def image_path(reference: str) -> str:
    """The API path (without version) of the local image ``reference``'s inspect document."""
    return f"/images/{quote_path(reference)}/json"


def distribution_path(reference: str) -> str:
    """The API path (without version) of the digest the registry serves for ``reference`` now."""
    return f"/distribution/{quote_path(reference)}/json"
