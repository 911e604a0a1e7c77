"""Where container engines' sockets live: the one list that connecting and the mount checks both read.

The launcher connects to the first socket that answers the Docker API (:func:`candidate_hosts`)
and refuses to mount any engine socket into a session (:func:`engine_sockets`, read by
:mod:`terminai_sandbox.launch.config`): a socket there is root on the host. Both come from
:data:`WELL_KNOWN` and the same environment variables, so a socket the launcher may talk to
is always one a session may not be given.

Part of the launch kernel: standard library only.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not `from typing import ...`: a launch never imports typing (~3 ms)
if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

DEFAULT_SOCKET = "/var/run/docker.sock"

# (path, whether it speaks the Docker API and is tried when connecting), in the order
# connecting tries them. `{runtime}` is $XDG_RUNTIME_DIR (the entry is skipped when unset).
WELL_KNOWN: tuple[tuple[str, bool], ...] = (
    (DEFAULT_SOCKET, True),
    ("/run/docker.sock", False),  # the same socket on most hosts (/var/run -> /run)
    ("{runtime}/docker.sock", False),  # rootless dockerd
    ("{runtime}/podman/podman.sock", True),  # rootless podman's API service
    ("/run/podman/podman.sock", True),  # rootful podman's API service
    ("/run/containerd/containerd.sock", False),
    ("/run/crio/crio.sock", False),
    ("{home}/.docker/run/docker.sock", False),  # Docker Desktop
)
# Variables that may name an engine's socket (DOCKER_HOST for docker, CONTAINER_HOST for podman).
HOST_VARIABLES = ("DOCKER_HOST", "CONTAINER_HOST")
# A file of one of these names is an engine socket wherever it is.
SOCKET_NAMES = ("docker.sock", "podman.sock", "containerd.sock", "crio.sock")


def _places(env: Mapping[str, str]) -> Iterator[tuple[str, bool]]:
    """:data:`WELL_KNOWN` with this environment's folders filled in."""
    folders = {"runtime": env.get("XDG_RUNTIME_DIR"), "home": env.get("HOME")}
    for pattern, api in WELL_KNOWN:
        path = pattern
        if "{" in pattern:
            name = pattern[1 : pattern.index("}")]
            if not folders[name]:
                continue
            path = pattern.replace("{" + name + "}", str(folders[name]), 1)
        yield path, api


def candidate_hosts(env: Mapping[str, str]) -> list[str]:
    """Where to look for a Docker API, in order: DOCKER_HOST alone when set, else the well-known sockets."""
    if env.get("DOCKER_HOST"):
        return [env["DOCKER_HOST"]]
    return [f"unix://{path}" for path, api in _places(env) if api]


def engine_sockets(env: Mapping[str, str]) -> tuple[str, ...]:
    """Every engine socket path this host may have: the well-known places and those the environment names.

    Holds every unix address :func:`candidate_hosts` returns for the same ``env``.
    """
    found = [path for path, _ in _places(env)]
    for variable in HOST_VARIABLES:
        value = env.get(variable, "")
        if value.startswith("unix://"):
            found.append(value.removeprefix("unix://"))
    return tuple(dict.fromkeys(found))
