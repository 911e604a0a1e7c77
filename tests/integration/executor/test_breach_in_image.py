"""The executor's attack suites inside the built image: the assume-breach suite
(``tests/breach``), the Python-layer attacks, the callback routes and the reachability
walk, as the image user, read-only root, no capabilities, no network, under the engine's
default seccomp profile (which refuses ``unshare``: the guarantees must hold on the
remaining layers), with the image's own interpreter.

Under gVisor (Debian 12's runsc and trixie's, ``runsc-trixie``) the executor cannot build its
seccomp filter and refuses every run (docs/SECURITY.md, "gVisor"): each attack there would
only meet that refusal, so ``tests/integration/launch/test_gvisor.py`` holds it once per
release (the refusal, its cause, and a program that never runs) instead of 160 times."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from terminai_sandbox.assemble import BuildResult, repo_root
from terminai_sandbox.engine.client import DockerApi

ROOT = repo_root()
TMP_MIB = 256  # the container's /tmp, where the runs' scratch directories live


@pytest.fixture(scope="module")
def pytest_wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The contract suite's pinned pytest, unpacked for the image's interpreter."""
    target = tmp_path_factory.mktemp("breach-pytest")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
         "--only-binary=:all:", "--require-hashes", "-r", str(ROOT / "images/sandbox/requirements-test.lock"),
         "--target", str(target)],
        check=True,
    )  # fmt: skip
    target.chmod(0o755)
    subprocess.run(["chmod", "-R", "a+rX", str(target)], check=True)
    return target


# Test files that need only the in-image toolset (and the memory fixtures' helpers).
SUITES = (
    "tests/breach",
    "tests/unit/executor/test_python_layer_attacks.py",
    "tests/unit/executor/test_reachability.py",
    "tests/unit/executor/test_callback_routes.py",
    "tests/unit/executor/test_attacks_on_match_and_new_modules.py",
    "tests/unit/executor/test_attacks_on_entry_check_and_write_guard.py",
    "tests/unit/executor/test_attacks_on_value_check_shortcuts.py",
    "tests/unit/executor/test_seed_allowlist_attacks.py",
    "tests/unit/executor/test_relaxation_attacks.py",
    # the image's own libseccomp (trixie's, as in the arm64 image) builds the aarch64 program
    "tests/unit/executor/test_seccomp_aarch64.py",
)
MOUNTS = ("tests/__init__.py", "tests/breach", "tests/unit/__init__.py", "tests/unit/executor", "tests/unit/memory")


def _collected() -> int:
    listed = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *SUITES],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
    return sum(1 for line in listed.splitlines() if "::" in line)


@pytest.mark.slow  # the longest test of the suite (about a minute here)
def test_every_breach_test_passes_inside_the_image(
    engine: DockerApi, built_image: BuildResult, pytest_wheels: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    out.chmod(0o777)  # the image user writes the JUnit file here
    # Where the run has no namespaces (Docker's default seccomp refuses unshare), the
    # suite checks the container instead: a host file it must not see, the host's pid
    # namespace it must not share, and the size of the /tmp it fills.
    host_secret = tmp_path / "host-secret"
    host_secret.write_text("host secret")
    container = {
        "BREACH_HOST_SECRET": str(host_secret),
        "BREACH_HOST_PID_NAMESPACE": os.readlink("/proc/self/ns/pid"),
        "BREACH_CONTAINER_TMP_MIB": str(TMP_MIB),
    }
    code, stdout, stderr = engine.run(
        built_image.config_digest,
        ["python3", "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfEs", "--rootdir", "/opt/tb",
         *(f"/opt/tb/{suite}" for suite in SUITES), "--junitxml=/out/breach.xml", "-o", "junit_family=xunit2"],
        network_mode="none",
        read_only=True,
        tmpfs={"/tmp": f"rw,size={TMP_MIB}m"},
        cap_drop=["ALL"],
        security_opt=["no-new-privileges"],
        environment={"PYTHONPATH": "/opt/pytest:/opt/tb", "HOME": "/tmp", **container},
        volumes={
            str(pytest_wheels): {"bind": "/opt/pytest", "mode": "ro"},
            str(out): {"bind": "/out", "mode": "rw"},
            **{str(ROOT / path): {"bind": f"/opt/tb/{path}", "mode": "ro"} for path in MOUNTS},
        },
        timeout=600,
    )  # fmt: skip
    tail = (stdout + stderr).decode(errors="replace")[-4000:]
    assert (out / "breach.xml").exists(), tail
    report = ET.parse(out / "breach.xml").getroot()
    cases = list(report.iter("testcase"))
    # Every test of the suite ran in the image (a test that fails and then errors in teardown has two entries).
    assert len({(c.get("classname"), c.get("name")) for c in cases}) == _collected(), tail
    # A known gap is an xfail(strict=True) test: JUnit files it as skipped with this type.
    skipped = [c.get("name") for c in cases if (m := c.find("skipped")) is not None and m.get("type") != "pytest.xfail"]
    assert not skipped, f"skipped {skipped}\n{tail}"
    failed = [c.get("name") for c in cases if c.find("failure") is not None or c.find("error") is not None]
    assert code == 0 and not failed, f"failed {failed}\n{tail}"


def test_the_image_does_not_contain_the_harness(engine: DockerApi, built_image: BuildResult) -> None:
    code, stdout, _ = engine.run(
        built_image.config_digest,
        ["sh", "-c", "find / -xdev -path '*breach*' 2>/dev/null; python3 -c 'import tests' 2>&1 | tail -1"],
        network_mode="none",
        read_only=True,
        cap_drop=["ALL"],
    )
    assert code == 0 and stdout.decode().strip().endswith("No module named 'tests'"), stdout
