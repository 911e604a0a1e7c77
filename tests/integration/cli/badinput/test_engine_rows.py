"""The bad-input rows that need a container engine: ``contracts`` on an image that cannot
hold the contract, and a report location that cannot be written (refused before the suite)."""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest
from terminai_sandbox.engine.client import DockerApi

pytestmark = [pytest.mark.integration]

CLI = str(Path(sys.executable).with_name("terminai-sandbox"))
NO_PYTHON = "terminai-cli-test/nopython:1"


@pytest.fixture(scope="module")
def no_python_image(engine: DockerApi) -> Iterator[str]:
    """A one-file image with no interpreter at all (imported from a tar, nothing pulled)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        info = tarfile.TarInfo("etc/hostname")
        info.size = 4
        tar.addfile(info, io.BytesIO(b"box\n"))
    docker.from_env().api.import_image_from_data(raw.getvalue(), repository=NO_PYTHON.rsplit(":", 1)[0], tag="1")
    yield NO_PYTHON
    engine.remove_image(NO_PYTHON, force=True)


def test_contracts_on_an_image_without_python3_fail_the_contract(no_python_image: str, tmp_path: Path) -> None:
    started = time.monotonic()
    done = subprocess.run(
        [CLI, "contracts", no_python_image, "--output", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 8, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "has no python3" in errors[0] and "Traceback" not in done.stderr
    assert time.monotonic() - started < 60


def test_contracts_refuse_an_unwritable_report_location_before_the_suite() -> None:
    started = time.monotonic()
    done = subprocess.run(
        [CLI, "contracts", "terminai/sandbox:0.1.0", "--output", "/proc/1/not-here"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 3, done.stderr
    assert done.stderr.startswith("error: /proc/1/not-here") and "Traceback" not in done.stderr
    assert time.monotonic() - started < 10  # refused up front, not after the suite
