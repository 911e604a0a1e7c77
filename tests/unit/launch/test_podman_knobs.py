"""What podman reads besides its flags: the variables that replace its files or engine, and a
rootless user's own folders, which no session may write (the attacks themselves run against
real podman in tests/integration/launch/test_hostile_workspace_podman.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from terminai_sandbox.errors import ConfigError
from terminai_sandbox.launch import podman_knobs
from terminai_sandbox.launch.config import load_launch_config


@pytest.mark.parametrize("name", sorted(podman_knobs.REFUSED_VARIABLES))
def test_each_variable_that_replaces_podmans_files_or_engine_is_refused_by_name(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    env = {"TERMINAI_SANDBOX": "podman", name: "/tmp/anything"}
    with pytest.raises(ConfigError, match=f"^{name} is set: for podman it ") as caught:
        load_launch_config(env, available=["docker", "podman"])
    assert f"unset {name}" in caught.value.hint
    # Docker does not read it: the same environment launches on docker.
    assert load_launch_config({**env, "TERMINAI_SANDBOX": "docker"}, available=["docker", "podman"]).engine == "docker"


def test_the_registries_files_are_left_to_the_user() -> None:
    # Pulls are by a verified digest, which no mirror or registry setting can change.
    podman_knobs.refuse_variables({"CONTAINERS_REGISTRIES_CONF": "/x", "REGISTRIES_CONFIG_PATH": "/x"})


def test_no_folder_a_rootless_session_writes_may_hold_podmans_own(tmp_path: Path) -> None:
    home = str(tmp_path / "home")
    env = {"HOME": home, "XDG_RUNTIME_DIR": str(tmp_path / "rt")}

    def refused(cwd: str, writable: tuple[str, ...] = (), **extra: str) -> str:
        with pytest.raises(ConfigError) as caught:
            podman_knobs.refuse_writable(cwd, writable, {**env, **extra}, home)
        return caught.value.message

    # The home directory holds ~/.config/containers and ~/.local/share/containers, existing or not.
    assert f"the working directory {home} holds or lies in {home}/.config/containers" in refused(home)
    assert "lies in" in refused(f"{home}/.local/share/containers/storage")
    assert f"{home}/.local/share/containers" in refused(f"{home}/.local")
    assert "the read-write mount" in refused(f"{home}/project", (f"{home}/.config",))
    assert str(tmp_path / "rt") in refused(str(tmp_path / "rt" / "x"))
    # Moved by XDG_*: the moved folders count, even inside a project.
    assert "/project/conf/containers" in refused(f"{home}/project", XDG_CONFIG_HOME=f"{home}/project/conf")
    assert "/data/containers" in refused(f"{home}/p", (f"{home}/d",), XDG_DATA_HOME=f"{home}/d/data")
    # A link to the home directory is the home directory.
    os.makedirs(home)
    os.symlink(home, tmp_path / "to-home")
    assert "holds or lies in" in refused(str(tmp_path / "to-home"))
    # An ordinary project and a read-only look at podman's files are fine.
    podman_knobs.refuse_writable(f"{home}/project", (f"{home}/data",), env, home)
    podman_knobs.check("docker", cwd=home, writable=(), env=env, home=home)  # docker reads none of it
