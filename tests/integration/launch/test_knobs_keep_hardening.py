"""Every flag the allowlist lets through leaves the session's hardening as the launcher set it.

The session's real command line (``build_argv``) with each harmless SANDBOX_FLAGS spelling
goes to ``docker create`` (the real CLI and daemon; nothing starts), and the container's
inspect document must still show a read-only root, no capabilities, no-new-privileges, no
network, the host user, only the working directory mounted, and the limits. The
companion: the issue's attack, let through with ``--unsafe-allow-flag``, breaks those same
checks, so they can tell.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from terminai_sandbox.engine.client import DockerApi
from terminai_sandbox.launch import flags, preflight
from terminai_sandbox.launch.config import LaunchConfig, parse_flags
from terminai_sandbox.launch.run import build_argv

from tests.fixtures.empty_image import imported
from tests.unit.launch.test_flags import HARMLESS_SAMPLE, spellings

pytestmark = [pytest.mark.integration, pytest.mark.slow]

IMAGE = "localhost/terminai-test/empty:hardening"
DIGEST = "sha256:" + "d" * 64


@pytest.fixture()
def empty_image(engine: DockerApi, tmp_path: Path) -> Iterator[str]:
    with imported("docker", IMAGE, tmp_path) as reference:
        yield reference


def _created(sandbox_flags: str, cwd: Path, allowed: tuple[str, ...] = ()) -> dict[str, Any]:
    image = preflight.VerifiedImage(
        pinned=f"r.example/x@{DIGEST}",
        digest=DIGEST,
        image_id=DIGEST,
        verified_by=("k",),
        skipped_verification=False,
        run_ref=IMAGE,
        _token=preflight._TOKEN,
    )
    config = LaunchConfig(
        engine="docker",
        engine_from="t",
        image=None,
        image_from="t",
        flags=parse_flags(sandbox_flags, allowed=allowed, engine="docker"),
    )
    argv = build_argv("docker", image, config, ["true"], cwd=str(cwd), tty=False, uid=1000, gid=1000, env={})
    assert argv[1] == "run"
    argv[0], argv[1] = shutil.which("docker") or "docker", "create"
    created = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert created.returncode == 0, (sandbox_flags, created.stderr)
    container_id = created.stdout.strip()
    try:
        shown = subprocess.run(
            ["docker", "container", "inspect", container_id], capture_output=True, text=True, check=True
        )
    finally:
        subprocess.run(["docker", "rm", "-f", container_id], capture_output=True, check=False)
    document: dict[str, Any] = json.loads(shown.stdout)[0]
    return document


def _broken(document: dict[str, Any], cwd: Path) -> list[str]:
    """The hardening properties this container lacks."""
    config, host = document["Config"], document["HostConfig"]
    checks = {
        "read-only root": host["ReadonlyRootfs"] is True,
        "all capabilities dropped": "ALL" in (host.get("CapDrop") or []) and not host.get("CapAdd"),
        "no-new-privileges": "no-new-privileges" in (host.get("SecurityOpt") or []),
        "no network": host["NetworkMode"] == "none",
        "not privileged": host["Privileged"] is False,
        "the host user": config["User"] == "1000:1000",
        "no extra groups": not host.get("GroupAdd"),
        "only the working directory mounted": host.get("Binds") == [f"{cwd}:{cwd}:rw"],
        "pids limit": host.get("PidsLimit") == 512,
        "init": host.get("Init") is True,
        "removed at exit": host.get("AutoRemove") is True,
        "the image's entrypoint": not config.get("Entrypoint"),
        "the default runtime": host.get("Runtime") in (None, "", "runc"),
        "the launcher's labels": config["Labels"].get("dev.terminai.verified") == DIGEST,
    }
    return [name for name, ok in checks.items() if not ok]


RUN_ONLY = ("--sig-proxy", "--detach-keys")  # `docker create` lacks them; they act on an attached run only


def _harmless_spellings() -> Iterator[str]:
    for name in flags.HARMLESS:
        if name in RUN_ONLY:
            continue
        value = HARMLESS_SAMPLE.get(name) if flags.DOCKER_RUN.takes_value[name] else None
        for words in spellings(flags.DOCKER_RUN, name, value):
            yield shlex.join(words)
    yield "-e A=1 -l team=red -w /work --tmpfs /mnt/scratch:size=64m -h box -it --init --rm=true --read-only=1"


def test_the_allowlist_keeps_every_hardening_property(empty_image: str, tmp_path: Path) -> None:
    failures = {}
    for sandbox_flags in _harmless_spellings():
        broken = _broken(_created(sandbox_flags, tmp_path), tmp_path)
        if broken:
            failures[sandbox_flags] = broken
    assert not failures, failures


def test_the_attack_let_through_breaks_the_same_checks(empty_image: str, tmp_path: Path) -> None:
    attack = "-v/:/host:ro -u0 --read-only=false --group-add=0 --entrypoint=/bin/sh"
    allowed = ("-v", "--user", "--read-only", "--group-add", "--entrypoint")
    broken = _broken(_created(attack, tmp_path, allowed), tmp_path)
    assert set(broken) == {
        "read-only root",
        "the host user",
        "no extra groups",
        "only the working directory mounted",
        "the image's entrypoint",
    }, broken
