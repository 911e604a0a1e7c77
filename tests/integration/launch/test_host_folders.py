"""The host folders no session may write, against the real counterparts that trust them.

The verify cache: a forged ``verified.json`` entry makes a real launch skip the signature
check of an unsigned image, so a working directory that holds the launcher's state folder is
refused before anything is read from it. The docker CLI's folder: each docker CLI on this
machine (the one on ``PATH`` and Debian's ``/usr/bin/docker``) runs a planted
``cli-plugins/docker-buildx`` at ``docker buildx`` (and at ``docker build``, which recent CLIs
hand to buildx) and puts ``config.json``'s ``proxies`` into every container it creates; the
launcher refuses a working directory holding ``$DOCKER_CONFIG``, and a session launched with
``$HOME`` pointed at a planted folder does not get its proxies. The rules themselves:
``launch/host_folders.py`` (tests/unit/launch/test_host_folders.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from terminai_sandbox.assemble import BuildResult
from terminai_sandbox.engine.client import DockerApi

from tests.fixtures.empty_image import imported
from tests.fixtures.registry import RegistryServer
from tests.integration.launch.test_launch import Site

pytestmark = [pytest.mark.integration]

CLIS = sorted({path for path in (shutil.which("docker"), "/usr/bin/docker") if path and os.access(path, os.X_OK)})
LAUNCHER = str(Path(sys.executable).with_name("terminai-sandbox"))
IMAGE = f"localhost/terminai-test/empty:docker-config-{os.getpid()}"
PLUGIN = """#!/bin/sh
if [ "$1" = docker-cli-plugin-metadata ]; then
  echo '{"SchemaVersion":"0.1.0","Vendor":"planted","Version":"v0.0.1","ShortDescription":"planted"}'
  exit 0
fi
echo "$*" > "$(dirname "$0")/../ran"
"""


def _plant(folder: Path) -> Path:
    plugins = folder / "cli-plugins"
    plugins.mkdir(parents=True)
    (plugins / "docker-buildx").write_text(PLUGIN)
    (plugins / "docker-buildx").chmod(0o755)
    proxies = {"default": {"httpProxy": "http://planted.invalid:3128", "noProxy": "*"}}
    (folder / "config.json").write_text(json.dumps({"proxies": proxies}))
    return folder


@pytest.fixture(scope="module")
def empty_image(engine: DockerApi, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with imported("docker", IMAGE, tmp_path_factory.mktemp("docker-config")) as reference:
        yield reference


@pytest.mark.parametrize("cli", CLIS)
def test_a_planted_plugin_runs_on_the_host(cli: str, tmp_path: Path) -> None:
    folder = _plant(tmp_path / "docker-config")
    env = {**os.environ, "DOCKER_CONFIG": str(folder)}
    done = subprocess.run([cli, "buildx", "version"], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert (folder / "ran").read_text() == "buildx version\n"


@pytest.mark.parametrize("cli", CLIS)
def test_planted_proxies_reach_every_container_the_cli_creates(cli: str, empty_image: str, tmp_path: Path) -> None:
    env = {**os.environ, "DOCKER_CONFIG": str(_plant(tmp_path / "docker-config"))}
    created = subprocess.run(
        [cli, "create", empty_image, "true"], env=env, capture_output=True, text=True, timeout=60, check=True
    )
    container = created.stdout.strip()
    try:
        shown = subprocess.run(
            [cli, "inspect", "--format", "{{json .Config.Env}}", container],
            capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip
    finally:
        subprocess.run([cli, "rm", "-f", container], capture_output=True, timeout=60, check=False)
    assert "HTTP_PROXY=http://planted.invalid:3128" in json.loads(shown.stdout)


def test_the_launcher_refuses_a_working_directory_holding_docker_config(tmp_path: Path) -> None:
    project = tmp_path / "project"
    _plant(project / ".docker")
    env = {**os.environ, "DOCKER_CONFIG": str(project / ".docker"), "TERMINAI_SANDBOX": "docker"}
    done = subprocess.run(
        [LAUNCHER, "run", "--", "true"], cwd=project, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 3, done.stderr
    assert f"the working directory {project} holds or lies in {project}/.docker" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (project / ".docker" / "ran").exists()


def test_a_launch_reads_the_checked_folder_not_the_one_home_names(
    registry: RegistryServer, tmp_path: Path, built_image: BuildResult
) -> None:
    os.chmod(tmp_path, 0o755)
    site = Site(registry, tmp_path)
    _plant(site.home / ".docker")  # $HOME is the environment's say; the password database's home is checked
    site.push(built_image.oci_layout.root, "0.1.0")
    done = site.launch("0.1.0", "env")
    assert done.returncode == 0, done.stderr
    assert "planted.invalid" not in done.stdout
    assert not (site.home / ".docker" / "ran").exists()


def test_a_forged_verify_cache_is_never_read_from_a_folder_a_session_writes(
    registry: RegistryServer, tmp_path: Path, built_image: BuildResult
) -> None:
    os.chmod(tmp_path, 0o755)
    site = Site(registry, tmp_path)  # HOME is tmp/home: the working directory tmp holds it
    project = site.project
    signed = site.push(built_image.oci_layout.root, "0.1.0")
    unsigned = site.push(built_image.oci_layout.root, "0.1.0", sign=False, repo="terminai/unsigned")
    first = site.cli("run", "--image", site.ref("0.1.0"), "--key", str(site.pub), "--", "true", cwd=project)
    assert first.returncode == 0, first.stderr
    cache = site.home / ".local/state/terminai-sandbox/verified.json"
    entries = json.loads(cache.read_text())
    passed = [key for key, value in entries.items() if key.startswith(f"{signed}|") and value is True]
    assert passed, entries
    # What a session that could write the folder would add: the unsigned digest "verified earlier".
    entries[passed[0].replace(signed, unsigned)] = True
    cache.write_text(json.dumps(entries))
    unsigned_ref = f"{site.ref('0.1.0', repo='terminai/unsigned')}@{unsigned}"
    # From a folder that holds the state (the session's own working directory): refused first.
    refused = site.cli("run", "--image", unsigned_ref, "--key", str(site.pub), "--", "true", cwd=tmp_path)
    assert refused.returncode == 3, refused.stderr
    assert f"holds or lies in {site.home}/.local/state/terminai-sandbox" in refused.stderr
    assert "verified earlier" not in refused.stderr
    # Why: read from where it is, the forged entry does skip the check (the cache has no key).
    trusted = site.cli("run", "--image", unsigned_ref, "--key", str(site.pub), "--", "true", cwd=project)
    assert "signature: verified earlier for this digest" in trusted.stderr, trusted.stderr
