"""A session created through the Docker API is configured exactly as ``docker run`` configures it.

The oracle is dockerd itself: for each session the launcher builds (``launch.run.build_argv``,
the real hardening), ``docker create`` makes a container from the argv, then
``engine.run_document.create_document`` makes one from the same argv through the API client,
and the two ``docker inspect`` documents must have the same ``HostConfig`` (capabilities,
seccomp and no-new-privileges, read-only root, tmpfs, limits, binds and mounts, runtime,
network, ports) and the same process configuration. Containers are created, never started.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from terminai_sandbox.engine.client import DockerApi
from terminai_sandbox.engine.run_document import create_document
from terminai_sandbox.engine.transport import quote_path
from terminai_sandbox.launch import preflight
from terminai_sandbox.launch.config import EnvItem, LaunchConfig, Port
from terminai_sandbox.launch.held_mounts import Placed
from terminai_sandbox.launch.run import build_argv

from tests.fixtures.empty_image import imported

pytestmark = pytest.mark.integration

# A tag of this process's own (xdist workers may run this file at once).
IMAGE = f"localhost/terminai-test/empty:run-document-engine-{os.getpid()}"
CONFIG_FIELDS = (
    "Image",
    "Cmd",
    "Labels",
    "User",
    "WorkingDir",
    "Tty",
    "OpenStdin",
    "StdinOnce",
    "AttachStdin",
    "AttachStdout",
    "AttachStderr",
    "ExposedPorts",
    "Entrypoint",
)


@pytest.fixture(scope="module")
def empty_image(engine: DockerApi, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with imported("docker", IMAGE, tmp_path_factory.mktemp("empty")) as reference:
        yield reference


def _verified(image: str) -> preflight.VerifiedImage:
    digest = "sha256:" + "b" * 64
    return preflight.VerifiedImage(
        pinned=f"r.example/x@{digest}",
        digest=digest,
        image_id="sha256:" + "c" * 64,
        verified_by=("k",),
        skipped_verification=False,
        run_ref=image,
        _token=preflight._TOKEN,
    )


def _inspect(name: str) -> dict[str, Any]:
    done = subprocess.run(["docker", "inspect", name], capture_output=True, text=True, check=True, timeout=60)
    document: dict[str, Any] = json.loads(done.stdout)[0]
    return document


def _remove(name: str) -> None:
    subprocess.run(["docker", "rm", "-f", name], capture_output=True, check=False, timeout=60)


def _sessions(tmp_path: Path) -> dict[str, dict[str, Any]]:
    (tmp_path / "work").mkdir()
    (tmp_path / "data").mkdir()
    (tmp_path / "odd, name").mkdir()
    (tmp_path / "bashrc").write_text("true\n")
    return {
        "plain": {},
        "tty": {"tty": True},
        "mounts": {
            "mounts": [
                Placed(source=str(tmp_path / "data"), target="/data", read_only=True),
                Placed(source=str(tmp_path / "odd, name"), target="/rw", read_only=False),
            ],
            "bashrc": str(tmp_path / "bashrc"),
        },
        "ports and env": {
            "config": {"ports": (Port(host=18080, container=80),), "env": (EnvItem(name="A", value="1 2"),)}
        },
        "gVisor": {"config": {"runtime": "runsc"}, "runsc": "/usr/bin/runsc"},
        "host identity": {"uid": 1000, "gid": 1000},
        "root on the host": {"uid": 0, "gid": 0},
    }


def test_an_api_created_session_has_the_cli_created_sessions_configuration(
    engine: DockerApi, empty_image: str, tmp_path: Path
) -> None:
    for label, case in _sessions(tmp_path).items():
        config = LaunchConfig(
            engine="docker", engine_from="test", image=None, image_from="test", **case.get("config", {})
        )
        name = f"terminai-engine-doc-{os.urandom(5).hex()}"
        argv = build_argv(
            "docker",
            _verified(empty_image),
            config,
            ["sh", "-c", "echo hi"],
            cwd=str(tmp_path / "work"),
            tty=case.get("tty", False),
            uid=case.get("uid", 1000),
            gid=case.get("gid", 1000),
            name=name,
            bashrc=case.get("bashrc"),
            runsc=case.get("runsc"),
            mounts=case.get("mounts", []),
            env={},
        )
        made = create_document(argv)
        assert made is not None, (label, argv)
        assert made.name == name
        try:
            subprocess.run(["docker", "create", *argv[2:]], capture_output=True, check=True, timeout=60)
            by_cli = _inspect(name)
        finally:
            _remove(name)
        try:
            status, body = engine._raw(
                "POST",
                f"/containers/create?name={quote_path(name)}",
                body=json.dumps(made.document).encode(),
            )
            assert status == 201, (label, body)
            by_api = _inspect(name)
        finally:
            _remove(name)
        differing = {
            key: (by_api["HostConfig"].get(key), by_cli["HostConfig"].get(key))
            for key in set(by_api["HostConfig"]) | set(by_cli["HostConfig"])
            if by_api["HostConfig"].get(key) != by_cli["HostConfig"].get(key)
        }
        assert not differing, (label, sorted(differing))
        for field in CONFIG_FIELDS:
            assert by_api["Config"].get(field) == by_cli["Config"].get(field), (label, field)
        # Docker's CLI (28.x) does not keep the order of --env words; with each name once,
        # the order means nothing, so the two are compared as sets of distinct names.
        api_env, cli_env = by_api["Config"]["Env"], by_cli["Config"]["Env"]
        assert len({item.split("=", 1)[0] for item in api_env}) == len(api_env), (label, api_env)
        assert sorted(api_env) == sorted(cli_env), (label, "Env")
        # The hardening is really in both (a comparison of two empty documents proves nothing).
        host = by_api["HostConfig"]
        assert host["CapDrop"] == ["ALL"] and "no-new-privileges" in host["SecurityOpt"], label
        assert host["ReadonlyRootfs"] and host["NetworkMode"] == "none" and host["PidsLimit"] > 0, label
        assert host["Memory"] > 0 and host["NanoCpus"] > 0 and host["Init"] and host["AutoRemove"], label
