"""The host's folders that decide what the next launch trusts (the launcher's state and
configuration, the settings, the docker CLI's folder), which no session may write; that the
real docker CLI applies a planted folder is shown against docker itself, and the forged
verify cache against a real launch, in tests/integration/launch/test_host_folders.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from terminai_sandbox.errors import ConfigError
from terminai_sandbox.launch import host_folders
from terminai_sandbox.launch.config import load_launch_config


def _refused(cwd: str, writable: tuple[str, ...] = (), *, home: str, **env: str) -> str:
    with pytest.raises(ConfigError) as caught:
        host_folders.check(cwd=cwd, writable=writable, env={"HOME": home, **env}, home=home)
    assert "DOCKER_CONFIG" in caught.value.hint and "XDG_STATE_HOME" in caught.value.hint
    return caught.value.message


def test_the_home_directory_and_its_ancestors_hold_every_folder(tmp_path: Path) -> None:
    home = str(tmp_path / "home")
    # ~/.local/state/terminai-sandbox comes first, existing or not; then ancestors of the home.
    assert f"the working directory {home} holds or lies in {home}/.local/state/terminai-sandbox" in _refused(
        home, home=home
    )
    assert "holds or lies in" in _refused(str(tmp_path), home=home)


@pytest.mark.parametrize(
    ("inside", "holds"),
    [
        (".local/state/terminai-sandbox", "verify cache"),
        (".config/terminai-sandbox", "default trust policy"),
        (".docker/cli-plugins", "docker CLI"),
        (".terminai", "engine, runtime and network"),
    ],
)
def test_each_folder_is_refused_as_a_working_directory_or_read_write_mount(
    inside: str, holds: str, tmp_path: Path
) -> None:
    home = str(tmp_path / "home")
    assert holds in _refused(f"{home}/{inside}", home=home)
    assert "the read-write mount" in _refused(f"{home}/project", (f"{home}/{inside}",), home=home)


def test_the_variables_move_the_folders_even_into_a_project(tmp_path: Path) -> None:
    home, project = str(tmp_path / "home"), str(tmp_path / "home" / "p")
    assert "verify cache" in _refused(project, home=home, XDG_STATE_HOME=f"{project}/state")
    assert "default trust policy" in _refused(project, home=home, XDG_CONFIG_HOME=f"{project}/conf")
    assert f"{project}/conf" in _refused(project, home=home, DOCKER_CONFIG=f"{project}/conf")
    assert f"{project}/.dk" in _refused(project, home=home, DOCKER_CONFIG=".dk")  # the CLI reads it relative
    assert f"{home}/d/cfg" in _refused(project, (f"{home}/d",), home=home, DOCKER_CONFIG=f"{home}/d/cfg")
    # $HOME inside the project: the launcher would read its state and settings there.
    assert "verify cache" in _refused(str(tmp_path), home=home, HOME=f"{tmp_path}/fake-home")


def test_the_docker_folder_is_the_password_databases_home_not_home(tmp_path: Path) -> None:
    home, other = str(tmp_path / "home"), str(tmp_path / "other")
    env = {"HOME": other, "XDG_STATE_HOME": "/var/lib/s", "XDG_CONFIG_HOME": "/etc/c"}
    assert host_folders.check(cwd=f"{other}/project", writable=(), env=env, home=home) == f"{home}/.docker"
    assert host_folders.check(cwd=str(tmp_path), writable=(), env={}, home="") == ""


def test_a_link_to_a_folder_or_from_it_is_the_folder(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".docker").mkdir(parents=True)
    os.symlink(home, tmp_path / "to-home")
    assert "holds or lies in" in _refused(str(tmp_path / "to-home"), home=str(home))
    project = tmp_path / "project"
    (project / "cfg").mkdir(parents=True)
    os.symlink(project / "cfg", tmp_path / "cfg-link")
    assert "holds or lies in" in _refused(str(project), home=str(home), DOCKER_CONFIG=str(tmp_path / "cfg-link"))


def test_an_ordinary_project_and_a_read_only_look_are_fine(tmp_path: Path) -> None:
    home = str(tmp_path / "home")
    env = {"HOME": home}
    assert host_folders.check(cwd=f"{home}/project", writable=(f"{home}/data",), env=env, home=home)
    # A project whose name starts like a folder's is not inside it.
    host_folders.check(cwd=f"{home}/.docker-notes", writable=(f"{home}/.terminai-old",), env=env, home=home)


def test_the_defaults_are_where_the_launcher_reads_them(tmp_path: Path) -> None:
    from terminai_sandbox.launch import audit

    env = {"HOME": str(tmp_path)}
    assert (
        audit.default_path(env).parent
        == Path(host_folders.state_folder(env))
        == tmp_path / ".local/state/terminai-sandbox"
    )
    assert host_folders.config_folder(env) == f"{tmp_path}/.config/terminai-sandbox"
    assert host_folders.state_folder({"XDG_STATE_HOME": "/s"}) == "/s/terminai-sandbox"


@pytest.mark.parametrize("engine", ["docker", "podman"])
def test_the_launch_configuration_refuses_it_for_every_engine(
    engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    env = {"TERMINAI_SANDBOX": engine, "HOME": str(tmp_path / "home"), "DOCKER_CONFIG": str(project / ".docker")}
    with pytest.raises(ConfigError, match=r"the working directory .* holds or lies in .*/project/\.docker"):
        load_launch_config(env, available=["docker", "podman"])
    env["DOCKER_CONFIG"] = str(tmp_path / "docker-config")
    config = load_launch_config(env, available=["docker", "podman"])
    assert (config.engine, config.docker_config) == (engine, str(tmp_path / "docker-config"))
