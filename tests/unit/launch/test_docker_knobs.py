"""The docker CLI's folder (``$DOCKER_CONFIG``, ``~/.docker``), which no session may write; that
the real CLI applies a planted ``config.json`` to the containers it creates is shown against
docker itself in tests/integration/launch/test_docker_config.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from terminai_sandbox.errors import ConfigError
from terminai_sandbox.launch import docker_knobs
from terminai_sandbox.launch.config import load_launch_config


def _refused(cwd: str, writable: tuple[str, ...] = (), *, home: str, **env: str) -> str:
    with pytest.raises(ConfigError) as caught:
        docker_knobs.check(cwd=cwd, writable=writable, env=env, home=home)
    assert "DOCKER_CONFIG" in caught.value.hint
    return caught.value.message


def test_no_folder_a_session_writes_may_hold_the_docker_clis_own(tmp_path: Path) -> None:
    home = str(tmp_path / "home")
    # The home directory holds ~/.docker, existing or not; so does an ancestor of it.
    assert f"the working directory {home} holds or lies in {home}/.docker" in _refused(home, home=home)
    assert "holds or lies in" in _refused(str(tmp_path), home=home)
    assert "holds or lies in" in _refused(f"{home}/.docker/cli-plugins", home=home)
    assert "the read-write mount" in _refused(f"{home}/project", (f"{home}/.docker",), home=home)
    # The password database's home counts, not $HOME (the launch's CLI is pointed at the checked folder).
    other = str(tmp_path / "other")
    assert docker_knobs.check(cwd=other, writable=(), env={"HOME": other}, home=home) == f"{home}/.docker"
    # DOCKER_CONFIG moves the folder, even into a project; a relative one is the working directory's.
    assert f"{home}/p/conf" in _refused(f"{home}/p", home=home, DOCKER_CONFIG=f"{home}/p/conf")
    assert f"{home}/p/.dk" in _refused(f"{home}/p", home=home, DOCKER_CONFIG=".dk")
    assert f"{home}/d/cfg" in _refused(f"{home}/p", (f"{home}/d",), home=home, DOCKER_CONFIG=f"{home}/d/cfg")


def test_a_link_to_the_folder_or_from_it_is_the_folder(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".docker").mkdir(parents=True)
    os.symlink(home, tmp_path / "to-home")
    assert "holds or lies in" in _refused(str(tmp_path / "to-home"), home=str(home))
    # DOCKER_CONFIG naming a link into a project: the link's target is the folder the CLI reads.
    project = tmp_path / "project"
    (project / "cfg").mkdir(parents=True)
    os.symlink(project / "cfg", tmp_path / "cfg-link")
    assert "holds or lies in" in _refused(str(project), home=str(home), DOCKER_CONFIG=str(tmp_path / "cfg-link"))


def test_an_ordinary_project_and_a_read_only_look_are_fine(tmp_path: Path) -> None:
    home = str(tmp_path / "home")
    docker_knobs.check(cwd=f"{home}/project", writable=(f"{home}/data",), env={"HOME": home}, home=home)
    docker_knobs.check(cwd=f"{home}/project", writable=(), env={"DOCKER_CONFIG": f"{home}/.dockercfg"}, home=home)
    # A project whose name starts like the folder's is not inside it.
    docker_knobs.check(cwd=f"{home}/.docker-notes", writable=(), env={}, home=home)


@pytest.mark.parametrize("engine", ["docker", "podman"])
def test_the_launch_configuration_refuses_it_for_every_engine(
    engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A planted plugin or credential helper runs at the user's next docker command, whatever
    # engine the session itself used.
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    env = {"TERMINAI_SANDBOX": engine, "DOCKER_CONFIG": str(project / ".docker")}
    with pytest.raises(ConfigError, match=r"the working directory .* holds or lies in .*/project/\.docker"):
        load_launch_config(env, available=["docker", "podman"])
    env["DOCKER_CONFIG"] = str(tmp_path / "docker-config")
    config = load_launch_config(env, available=["docker", "podman"])
    assert (config.engine, config.docker_config) == (engine, str(tmp_path / "docker-config"))


def test_without_a_home_or_docker_config_there_is_no_folder_to_check(tmp_path: Path) -> None:
    assert docker_knobs.check(cwd=str(tmp_path), writable=(), env={"HOME": str(tmp_path)}, home="") == ""
