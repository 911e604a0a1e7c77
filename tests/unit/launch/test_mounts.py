"""SANDBOX_MOUNTS and SANDBOX_PORTS: paths are followed to their end, with real symlinks, before anything is mounted."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from terminai_sandbox.errors import ConfigError
from terminai_sandbox.launch.config import PROTECTED_TREES, _mount_problem, parse_mounts, parse_ports

HOME = "/home/nobody-here"


def _refused(value: str, message: str, **env: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        parse_mounts(value, home=HOME, env={"HOME": HOME, **env})
    assert caught.value.message.startswith("SANDBOX_MOUNTS item")


@pytest.mark.parametrize("root", ["/", "//", "///", "/./", "//.", "/proc/self/root"])
def test_the_host_root_in_every_spelling(root: str) -> None:
    _refused(root, "host root" if not root.startswith("/proc") else "inside /proc")


@pytest.mark.parametrize(
    "path",
    ["/proc", "/proc/1/root", "/proc/self/cwd", "/sys", "/sys/fs/cgroup", "/dev", "/dev/shm", "/run", "/var/run",
     "/boot", "/var/lib/docker", "/run/docker.sock", "/var/run/docker.sock"],
)  # fmt: skip
def test_the_kernels_and_engines_trees(path: str) -> None:
    _refused(path, "is refused: it")


def test_paths_that_contain_a_protected_tree() -> None:
    _refused("/var", r"contains (the engine socket )?/var/run")
    _refused("/var/lib", r"contains /var/lib/docker")


def test_symlinks_are_followed(tmp_path: Path) -> None:
    links = {
        "root": "/",
        "root-again": str(tmp_path / "root"),  # a chain: root-again -> root -> /
        "proc": "/proc",
        "init-root": "/proc/1/root",
        "sock": "/var/run/docker.sock",
        "shm": "/dev/shm",
        "run": "/run/user",
    }
    for name, target in links.items():
        (tmp_path / name).symlink_to(target)
    _refused(f"{tmp_path}/root", r"host root \(.*/root leads to /\)")
    _refused(f"{tmp_path}/root-again:/x:ro", r"host root")
    _refused(f"{tmp_path}/proc", r"which leads to /proc\), inside /proc")
    _refused(f"{tmp_path}/init-root", r"inside /proc|cannot be resolved|host root")
    _refused(f"{tmp_path}/sock", r"engine socket")
    _refused(f"{tmp_path}/shm", r"inside /dev")
    _refused(f"{tmp_path}/run", r"inside /run")
    # A directory reached through a symlink is fine, and the engine is given where it leads.
    (tmp_path / "data").mkdir()
    (tmp_path / "data-link").symlink_to(tmp_path / "data")
    (mount,) = parse_mounts(f"{tmp_path}/data-link:/data/in", home=HOME)
    assert (mount.source, mount.target) == (os.path.realpath(tmp_path / "data"), "/data/in")


def test_with_resolution_switched_off_a_symlink_to_the_root_passes(tmp_path: Path) -> None:
    # The guard's companion: written as is, the path names nothing protected; only following it shows "/".
    (tmp_path / "innocent").symlink_to("/")
    written = f"{tmp_path}/innocent"
    assert _mount_problem(written, written, {}) is None
    assert "host root" in (_mount_problem(written, os.path.realpath(written), {}) or "")


def test_engine_sockets_by_name_and_where_the_environment_puts_them(tmp_path: Path) -> None:
    engine_dir = tmp_path / "engine"
    engine_dir.mkdir()
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(engine_dir / "podman.sock"))
    try:
        _refused(f"{engine_dir}/podman.sock", "engine socket")
        (tmp_path / "to-sock").symlink_to(engine_dir / "podman.sock")
        _refused(f"{tmp_path}/to-sock", "engine socket")
        # The directory holding the socket the environment names, and any directory above it.
        for host in ("DOCKER_HOST", "CONTAINER_HOST"):
            _refused(str(engine_dir), "contains the engine socket", **{host: f"unix://{engine_dir}/podman.sock"})
            _refused(str(tmp_path), "contains the engine socket", **{host: f"unix://{engine_dir}/podman.sock"})
        _refused(str(tmp_path), "contains the engine socket", XDG_RUNTIME_DIR=str(tmp_path))
        # Docker Desktop's socket under the home directory.
        home = tmp_path / "home"
        (home / ".docker" / "run").mkdir(parents=True)
        with pytest.raises(ConfigError, match="contains the engine socket"):
            parse_mounts(f"{home}/.docker", home=str(home), env={"HOME": str(home)})
        # Without the environment naming it, a folder with some other socket is an ordinary folder.
        assert parse_mounts(str(engine_dir), home=HOME, env={})[0].source == os.path.realpath(engine_dir)
    finally:
        server.close()


def test_the_whole_home_even_through_a_symlink(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "h").symlink_to(home)
    for value in (str(home), f"{tmp_path}/h", f"{home}/"):
        with pytest.raises(ConfigError, match="whole home"):
            parse_mounts(value, home=str(home), env={"HOME": str(home)})
    (home / "project").mkdir()
    assert parse_mounts(f"{home}/project", home=str(home), env={"HOME": str(home)})


def test_every_protected_tree_is_covered() -> None:
    for tree in PROTECTED_TREES:
        _refused(tree, "is refused")
        _refused(tree + "/x", "is refused")


def test_ports_are_ascii_digits_only() -> None:
    assert [(p.host, p.container) for p in parse_ports("8080, 9000:80, 1:65535")] == [
        (8080, 8080),
        (9000, 80),
        (1, 65535),
    ]
    for bad in ("²", "8²", "٣", "80 80", "+80", "0x50", "1_000", "80:", ":80", "008080", "65536", "0", "8080:٣"):
        with pytest.raises(ConfigError, match="SANDBOX_PORTS item"):
            parse_ports(bad)
    assert "²".isdigit()  # the reason for the check: str.isdigit() says yes


def _argv(cwd: str, env: dict[str, str] | None = None) -> list[str]:
    from terminai_sandbox.launch.config import LaunchConfig
    from terminai_sandbox.launch.run import build_argv

    from tests.unit.launch.test_engines_and_trust import _verified

    config = LaunchConfig(engine="docker", engine_from="t", image=None, image_from="t")
    return build_argv(
        "docker", _verified(), config, ["true"], cwd=cwd, tty=False, uid=1000, gid=1000, binary="docker", env=env
    )


def test_the_working_directory_passes_the_same_checks(tmp_path: Path) -> None:
    # Every session mounts its working directory read-write at the same path.
    (tmp_path / "to-run").symlink_to("/run")
    for cwd in ("/", "/run", "/var/run/user", "/proc/self/cwd", "/sys", f"{tmp_path}/to-run"):
        with pytest.raises(ConfigError, match=f"the working directory {cwd} is refused: it"):
            _argv(cwd)
    engine_dir = tmp_path / "engine"
    engine_dir.mkdir()
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(engine_dir / "docker.sock"))
    try:
        with pytest.raises(ConfigError, match="contains the engine socket"):
            _argv(str(tmp_path), {"DOCKER_HOST": f"unix://{engine_dir}/docker.sock"})
    finally:
        server.close()
    # An ordinary project folder, and a home directory with no socket in it, are fine.
    assert f"{tmp_path}:{tmp_path}:rw" in _argv(str(tmp_path), {"HOME": str(tmp_path)})


@pytest.mark.parametrize(
    ("variable", "value", "named"),
    [
        ("SANDBOX_FLAGS", "-v/:/host:ro -u0", "--volume"),
        ("SANDBOX_FLAGS", "-uroot", "--user"),
        ("SANDBOX_FLAGS", "--read-only=false", "--read-only"),
        ("SANDBOX_FLAGS", "--runtime=runc", "--runtime"),
        ("SANDBOX_FLAGS", "--entrypoint=/bin/sh", "--entrypoint"),
        ("SANDBOX_FLAGS", "--volumes-from x", "--volumes-from"),
        ("SANDBOX_FLAGS", "--network=container:x", "--network"),
        ("SANDBOX_FLAGS", "--cgroupns=host", "--cgroupns"),
        ("SANDBOX_FLAGS", "--env-file=/etc/shadow", "--env-file"),
        ("SANDBOX_FLAGS", "--security-opt seccomp=FILE", "--security-opt"),
        ("SANDBOX_FLAGS", "--security-opt=no-new-privileges=false", "--security-opt"),
        ("SANDBOX_FLAGS", "--pids-limit=-1", "--pids-limit"),
        ("SANDBOX_FLAGS", "--group-add=0", "--group-add"),
        ("SANDBOX_FLAGS", "-itu0", "--user"),
        ("SANDBOX_MOUNTS", "//", "host root"),
        ("SANDBOX_MOUNTS", "/proc", "/proc"),
        ("SANDBOX_MOUNTS", "/proc/1/root", "/proc"),
        ("SANDBOX_MOUNTS", "/sys", "/sys"),
        ("SANDBOX_MOUNTS", "/dev", "/dev"),
        ("SANDBOX_MOUNTS", "/run", "/run"),
        ("SANDBOX_MOUNTS", "/var/run", "/run"),
        ("SANDBOX_PORTS", "²", "SANDBOX_PORTS item"),
    ],
)
def test_the_issue_examples_are_refused_at_preflight_step_0(
    variable: str, value: str, named: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Through the launch session itself; the engine is never asked (the refusal comes first),
    # so it need not be installed either.
    from terminai_sandbox.launch import audit, session
    from terminai_sandbox.launch.session import LaunchRequest, prepare

    monkeypatch.setattr(session, "which", lambda name, path=None: f"/usr/bin/{name}")
    env = {"HOME": str(tmp_path), "TERMINAI_SANDBOX": "docker", "PATH": os.environ["PATH"], variable: value}
    said: list[str] = []
    request = LaunchRequest(image="r.example/x:1.0.0", unsafe_skip_verify=True)
    with pytest.raises(ConfigError) as caught:
        prepare(request, env=env, say=said.append)
    assert caught.value.message.startswith("preflight step 0 (configuration) refused: "), caught.value.message
    assert named in caught.value.message and caught.value.exit_code == 3
    assert any(line.startswith("  [FAIL] 0. configuration:") for line in said), said
    ledger = audit.default_path(env)
    assert '"step": 0' in ledger.read_text() and audit.verify(ledger) == 1
