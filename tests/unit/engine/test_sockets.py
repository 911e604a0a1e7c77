"""One list of engine sockets: every socket the launcher may connect to is one a session may not mount.

The oracle for "may not mount" is the mount check itself (``launch.config.parse_mounts``),
run on each address connecting would try, for the environments a host may have.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from terminai_sandbox.engine.sockets import DEFAULT_SOCKET, candidate_hosts, engine_sockets
from terminai_sandbox.errors import ConfigError
from terminai_sandbox.launch.config import parse_mounts


def _environments(tmp: Path) -> list[dict[str, str]]:
    return [
        {},
        {"XDG_RUNTIME_DIR": f"{tmp}/run-user"},
        {"HOME": f"{tmp}/home", "XDG_RUNTIME_DIR": f"{tmp}/xdg"},
        {"DOCKER_HOST": f"unix://{tmp}/elsewhere/engine.sock"},
        {"CONTAINER_HOST": f"unix://{tmp}/podman/api.sock", "XDG_RUNTIME_DIR": f"{tmp}/xdg"},
    ]


def test_connecting_tries_the_docker_socket_first_then_podman_rootless_then_rootful() -> None:
    assert candidate_hosts({}) == [f"unix://{DEFAULT_SOCKET}", "unix:///run/podman/podman.sock"]
    assert candidate_hosts({"XDG_RUNTIME_DIR": "/run/user/1000"}) == [
        f"unix://{DEFAULT_SOCKET}",
        "unix:///run/user/1000/podman/podman.sock",
        "unix:///run/podman/podman.sock",
    ]
    assert candidate_hosts({"DOCKER_HOST": "tcp://127.0.0.1:2375", "XDG_RUNTIME_DIR": "/x"}) == ["tcp://127.0.0.1:2375"]


def test_every_socket_connecting_may_use_is_in_the_mount_checks_list(tmp_path: Path) -> None:
    for env in _environments(tmp_path):
        listed = set(engine_sockets(env))
        for host in candidate_hosts(env):
            assert host.removeprefix("unix://") in listed, (env, host)


def test_the_mount_check_refuses_the_folder_of_each_socket_connecting_may_use(tmp_path: Path) -> None:
    # A real listening socket at each address under tmp_path, then the folder holding it is
    # offered as a mount: the check must refuse it as containing an engine socket.
    for env in _environments(tmp_path):
        for host in candidate_hosts(env):
            path = Path(host.removeprefix("unix://"))
            if not path.is_relative_to(tmp_path):
                continue  # the host's own /var/run and /run: not ours to create
            path.parent.mkdir(parents=True, exist_ok=True)
            server = socket.socket(socket.AF_UNIX)
            server.bind(str(path))
            try:
                with pytest.raises(ConfigError, match="engine socket"):
                    parse_mounts(str(path.parent), home=str(tmp_path / "nohome"), env=env)
            finally:
                server.close()
                path.unlink()


def test_the_list_has_each_place_once() -> None:
    env = {"DOCKER_HOST": f"unix://{DEFAULT_SOCKET}", "XDG_RUNTIME_DIR": "/run/user/1", "HOME": "/home/u"}
    found = engine_sockets(env)
    assert len(found) == len(set(found))
    assert {"/run/containerd/containerd.sock", "/run/crio/crio.sock", "/home/u/.docker/run/docker.sock"} <= set(found)
