"""Both engines report the platform the launcher picks from an index, and agree with the kernel.

Independent witnesses: ``uname -m`` (the kernel's machine name, mapped to OCI's spelling by
hand here) and ``docker version``/``podman info`` run as the user would run them.
"""

from __future__ import annotations

import os
import platform
import subprocess

import pytest
from terminai_sandbox.engine.client import DockerApi
from terminai_sandbox.engine.podman import PodmanEngine
from terminai_sandbox.signing.verify.platforms import Platform

pytestmark = pytest.mark.integration

KERNEL = {"x86_64": "amd64", "aarch64": "arm64"}[platform.machine()]


def _cli(*args: str) -> str:
    done = subprocess.run(list(args), capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_dockerd_reports_the_hosts_platform() -> None:
    reported = DockerApi.connect(os.environ).platform()
    assert str(Platform.of(*reported)) == f"linux/{KERNEL}"
    assert reported == tuple(_cli("docker", "version", "--format", "{{.Server.Os}}/{{.Server.Arch}}").split("/"))


def test_podman_reports_the_hosts_platform() -> None:
    reported = PodmanEngine.connect(os.environ).platform()
    assert str(Platform.of(*reported)) == f"linux/{KERNEL}"
    assert reported == tuple(_cli("podman", "info", "--format", "{{.Host.OS}}/{{.Host.Arch}}").split("/"))
