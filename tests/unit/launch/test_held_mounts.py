"""Mount what was checked: no-follow holds, type checks, staging, the bashrc copy, the read-only overlays."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from terminai_sandbox.errors import ConfigError
from terminai_sandbox.launch import held_mounts, targets
from terminai_sandbox.launch.config import Mount
from terminai_sandbox.launch.held_mounts import Staging, hold, overlays, read_bashrc, stage_session

ROOT = os.geteuid() == 0


@pytest.fixture()
def unix_socket(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "engine.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    yield path
    server.close()


def test_directories_and_regular_files_are_held(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "f").write_text("x")
    for name, directory in (("d", True), ("f", False)):
        held = hold(str(tmp_path / name), what="the mount source")
        try:
            assert held.directory is directory and held.inode == os.stat(tmp_path / name).st_ino
        finally:
            os.close(held.fd)


def test_sockets_fifos_devices_and_hard_links_to_sockets_are_refused(tmp_path: Path, unix_socket: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    os.link(unix_socket, tmp_path / "hard-link-to-the-socket")
    cases = {"engine.sock": "a socket", "hard-link-to-the-socket": "a socket", "fifo": "a FIFO"}
    if ROOT:
        os.mknod(tmp_path / "null", 0o666 | 0o020000, os.makedev(1, 3))
        os.mknod(tmp_path / "disk", 0o600 | 0o060000, os.makedev(8, 0))
        cases |= {"null": "a character device", "disk": "a block device"}
    for name, kind in cases.items():
        with pytest.raises(ConfigError, match=f"is {kind}: only directories and regular files"):
            hold(str(tmp_path / name), what="the mount source")


def test_a_link_anywhere_on_the_checked_path_means_it_changed(tmp_path: Path) -> None:
    (tmp_path / "real" / "d").mkdir(parents=True)
    os.symlink(tmp_path / "real", tmp_path / "link")
    with pytest.raises(ConfigError, match=r"changed after it was checked: .*/link is now a symbolic link"):
        hold(str(tmp_path / "link" / "d"), what="the mount source")
    os.symlink("/var/run", tmp_path / "leaf")
    with pytest.raises(ConfigError, match="leaf is now a symbolic link"):
        hold(str(tmp_path / "leaf"), what="the mount source")


def test_without_privilege_a_source_the_session_writes_is_refused_and_a_swap_is_caught(tmp_path: Path) -> None:
    work, outside = tmp_path / "work", tmp_path / "outside"
    (work / "d").mkdir(parents=True)
    outside.mkdir()
    with Staging("s", cwd=str(work), privileged=False) as staging:
        with pytest.raises(ConfigError, match=r"lies inside .*work, which a session writes"):
            staging.place(str(work / "d"), "/data/d", read_only=True)
        with pytest.raises(ConfigError, match="which a session writes"):
            staging.place(str(outside), "/data/o", read_only=True, writable=(str(tmp_path),))
        placed = staging.place(str(outside), "/data/o", read_only=True)
        assert placed.source == str(outside)
        staging.confirm()
        outside.rename(tmp_path / "moved")
        os.symlink("/var/run", outside)
        with pytest.raises(ConfigError, match="changed after it was checked"):
            staging.confirm()


@pytest.mark.skipif(not ROOT, reason="staging bind mounts need root; the unprivileged path is tested above")
def test_as_root_the_engine_mounts_the_held_object_whatever_the_path_becomes(tmp_path: Path) -> None:
    """The racing swapper: a thread swaps the source for a link to /var/run as fast as it can."""
    source = tmp_path / "d"
    source.mkdir()
    (source / "mine").write_text("x")
    (tmp_path / "other").mkdir()
    stop = threading.Event()

    def swap() -> None:
        while not stop.is_set():
            for step in (
                lambda: source.rename(tmp_path / "aside"),
                lambda: os.symlink("/var/run", source),
                lambda: os.unlink(source),
                lambda: (tmp_path / "aside").rename(source),
            ):
                with contextlib.suppress(OSError):
                    step()
            stop.wait(0.0005)  # the directory stands for a moment, as between real swaps

    swapper = threading.Thread(target=swap)
    swapper.start()
    staged = refused = 0
    try:
        for round_ in range(2000):
            with Staging(f"race{round_}", cwd=str(tmp_path / "other"), privileged=True) as staging:
                try:
                    placed = staging.place(str(source), "/data/d", read_only=True)
                except ConfigError:
                    refused += 1  # caught mid-swap: refused, never followed
                    continue
                names = set(os.listdir(placed.source))
                assert names == {"mine"}, names  # never /var/run's docker.sock
                staged += 1
    finally:
        stop.set()
        swapper.join()
    assert staged > 0 and refused > 0, (staged, refused)
    assert not os.listdir(held_mounts.STAGING_ROOT) or all(
        not name.startswith("race") for name in os.listdir(held_mounts.STAGING_ROOT)
    )
    with open("/proc/self/mountinfo") as mounts:
        # Only this test's mounts: parallel integration tests hold sessions of their own.
        assert f"{held_mounts.STAGING_ROOT}/race" not in mounts.read()


def test_the_bashrc_is_read_not_followed(tmp_path: Path) -> None:
    assert read_bashrc(str(tmp_path)) is None
    (tmp_path / ".terminai").mkdir()
    assert read_bashrc(str(tmp_path)) is None
    bashrc = tmp_path / ".terminai" / "sandbox.bashrc"
    bashrc.write_text("alias ll='ls -l'\n")
    assert read_bashrc(str(tmp_path)) == b"alias ll='ls -l'\n"
    bashrc.unlink()
    os.symlink("/etc/shadow", bashrc)
    with pytest.raises(ConfigError, match="cannot be read without following links"):
        read_bashrc(str(tmp_path))
    bashrc.unlink()
    os.mkfifo(bashrc)
    with pytest.raises(ConfigError, match="is a FIFO, not a regular file"):
        read_bashrc(str(tmp_path))
    bashrc.unlink()
    (tmp_path / ".terminai").rmdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "sandbox.bashrc").write_text("echo planted\n")
    os.symlink(tmp_path / "elsewhere", tmp_path / ".terminai")
    with pytest.raises(ConfigError, match=r"\.terminai is not a folder of the project"):
        read_bashrc(str(tmp_path))


def test_overlays_cover_what_runs_later_and_leave_no_placeholder_behind(tmp_path: Path) -> None:
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    (tmp_path / ".git" / "config").write_text("[core]\n")
    (tmp_path / ".envrc").write_text("")
    found = overlays(str(tmp_path))
    paths = {os.path.relpath(o.path, tmp_path): o.created for o in found}
    assert paths[".git/hooks"] is False and paths[".git/config"] is False and paths[".envrc"] is False
    for created in (".terminai", ".git/modules", ".git/worktrees", ".vscode", ".devcontainer"):
        assert paths[created] is True and (tmp_path / created).is_dir()
    for created in (".npmrc", ".yarnrc.yml", ".git/config.worktree"):
        assert paths[created] is True and (tmp_path / created).read_bytes() == b""
    # git refuses an empty commondir: its placeholder names the repository's own folder
    assert paths[".git/commondir"] is True and (tmp_path / ".git" / "commondir").read_bytes() == b".\n"
    # An existing repository is not covered; the shells' files are protected only when present.
    assert ".git" not in paths and ".bashrc" not in paths
    held_mounts.remove_placeholders(found)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".envrc", ".git"]
    assert sorted(p.name for p in (tmp_path / ".git").iterdir()) == ["config", "hooks"]


def test_without_a_repository_an_empty_git_is_held_read_only(tmp_path: Path) -> None:
    found = overlays(str(tmp_path))
    assert any(o.path == str(tmp_path / ".git") and o.created for o in found)
    assert not any(o.path.startswith(str(tmp_path / ".git") + "/") for o in found)
    held_mounts.remove_placeholders(found)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("entry", [".git/hooks", ".terminai", ".envrc", ".vscode"])
def test_a_symlinked_overlay_is_refused(tmp_path: Path, entry: str) -> None:
    (tmp_path / ".git").mkdir()
    os.symlink("/etc", tmp_path / entry)
    with pytest.raises(ConfigError, match=f"{entry} is a symbolic link"):
        overlays(str(tmp_path))


def test_a_session_is_staged_and_everything_is_undone(tmp_path: Path) -> None:
    work, data = tmp_path / "work", tmp_path / "data"
    (work / ".terminai").mkdir(parents=True)
    (work / ".terminai" / "sandbox.bashrc").write_text("export X=1\n")
    data.mkdir()
    with Staging("unit", cwd=str(work)) as staging:
        placed, bashrc = stage_session(staging, (Mount(source=str(data), target="/data/in"),), str(work))
        assert bashrc is not None and Path(bashrc).read_bytes() == b"export X=1\n"
        assert not Path(bashrc).is_relative_to(work) and Path(bashrc).stat().st_mode & 0o777 == 0o644
        assert next(p.target for p in placed) == "/data/in" and all(p.read_only for p in placed[1:])
        assert {p.target for p in placed[1:]} >= {str(work / ".terminai"), str(work / ".git")}
    assert not Path(bashrc).exists()
    assert sorted(p.name for p in work.iterdir()) == [".terminai"]


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("/usr/local/lib/python3.13/dist-packages/terminai_apts", "lies in /usr"),
        ("/etc/ld.so.preload", "lies in /etc"),
        ("/usr/local/bin", "lies in /usr"),
        ("/./proc", "lies in /proc"),
        ("//sys/fs", "lies in /sys"),
        ("/lib64", "lies in /lib64"),
        ("/var/run", "lies in /var"),
        ("/", "replace the whole image"),
        ("/tmp", "the session's own tmpfs"),
        ("/home/sandbox", "the session's own tmpfs"),
        ("/work", "is the working directory"),
        ("/elsewhere", "outside the places"),
        ("relative", "not an absolute path"),
        ("/data/../etc", "not an absolute path without '..'"),
    ],
)
def test_targets_off_the_allowlist_are_refused(target: str, message: str) -> None:
    problem = targets.problem(target, cwd="/work")
    assert problem is not None and message in problem, problem


@pytest.mark.parametrize("target", ["/workspace", "/downloads/x", "/mnt/a", "/data", "/home/sandbox/in", "/work/sub"])
def test_targets_on_the_allowlist_pass(target: str) -> None:
    assert targets.problem(target, cwd="/work") is None
    assert targets.problem("/srv/in", cwd=None, source="/srv/in") is None
    assert targets.problem("/opt/x", cwd=None, source="/opt/x") is None  # its own path, as the launcher we replace
    assert targets.problem("/usr/x", cwd=None, source="/usr/x") is not None


def test_the_commondir_placeholder_leaves_git_where_it_was(tmp_path: Path) -> None:
    """Real git (gitrepository-layout(5)): with the placeholder, the common folder is the
    repository's own and its own hooks run; the placeholder is removed afterwards, and a
    commondir someone changed is kept."""
    git = shutil.which("git")
    assert git, "this test needs git"
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    repo = tmp_path / "repo"
    subprocess.run([git, "init", "-q", str(repo)], check=True, env=env)
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho own hook ran\n")
    hook.chmod(0o755)
    found = overlays(str(repo))
    common = subprocess.run(
        [git, "rev-parse", "--git-common-dir"], cwd=repo, env=env, capture_output=True, text=True, check=True
    )
    assert Path(repo, common.stdout.strip()).resolve() == (repo / ".git").resolve()
    done = subprocess.run(
        [git, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "m"],
        cwd=repo, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "own hook ran" in done.stdout + done.stderr
    held_mounts.remove_placeholders(found)
    assert not (repo / ".git" / "commondir").exists()
    found = overlays(str(repo))
    (repo / ".git" / "commondir").write_text("../elsewhere\n")  # changed while the session ran
    held_mounts.remove_placeholders(found)
    assert (repo / ".git" / "commondir").read_text() == "../elsewhere\n"


def test_rootless_podmans_namespaces_are_found_only_where_podman_keeps_them(tmp_path: Path) -> None:
    env = {"XDG_RUNTIME_DIR": str(tmp_path)}
    assert held_mounts.podman_namespace(env) is None  # no pause.pid: the unpinned path
    pid_file = tmp_path / "libpod" / "tmp" / "pause.pid"
    pid_file.parent.mkdir(parents=True)
    for text in ("", "x1", "-1", str(2**40)):
        pid_file.write_text(text)
        assert held_mounts.podman_namespace(env) is None, text
    # A process in our own user namespace is not podman's (it would pin nothing).
    pid_file.write_text(str(os.getpid()))
    assert held_mounts.podman_namespace(env) is None
    # A link in podman's place is not followed.
    pid_file.unlink()
    (tmp_path / "elsewhere").write_text(str(os.getpid()))
    pid_file.symlink_to(tmp_path / "elsewhere")
    assert held_mounts.podman_namespace(env) is None
    # With root the launcher stages on the host: a namespace given is not used.
    staging = Staging("ns", cwd=str(tmp_path), privileged=True, namespace=held_mounts.Namespace(pid=1, runtime="/"))
    assert staging.namespace is None and staging.pins
