"""The launcher installed from its wheels, run outside any checkout, against a real registry.

The wheels are built from this checkout and installed into a fresh venv in a temporary
directory (tests/fixtures/launcher.py); every command runs from another temporary
directory with its own HOME, so nothing can be read from the repository: not the contract
suite, not the locks, not the sources. The image is the session's build, pushed to a
loopback registry and signed there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from terminai_sandbox.assemble import BuildResult, repo_root
from terminai_sandbox.engine.client import DockerApi

from tests.fixtures.launcher import InstalledLauncher, wheel_names
from tests.fixtures.registry import RegistryServer

PASSWORD = "installed-launcher"  # a throwaway key made for this test
REPO = "installed/sandbox"


@pytest.fixture()
def elsewhere() -> Iterator[Path]:
    """A working directory (with HOME beside it) that is not under the checkout."""
    with tempfile.TemporaryDirectory(prefix="terminai-elsewhere-") as name:
        path = Path(name) / "work"
        assert repo_root() not in path.parents
        path.mkdir()
        (path.parent / "home").mkdir()
        yield path


def _cli(
    launcher: InstalledLauncher, where: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full = {
        "PATH": os.environ["PATH"],
        "HOME": str(where.parent / "home"),
        "TERMINAI_SANDBOX": "docker",
        "COSIGN_PASSWORD": PASSWORD,
        **(env or {}),
    }
    done = subprocess.run(
        [str(launcher.cli), *args],
        cwd=where,
        env=full,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done


def test_the_wheel_carries_the_contract_suite_and_the_locks(installed_launcher: InstalledLauncher) -> None:
    (sandbox_wheel,) = [w for w in installed_launcher.wheels if w.name.startswith("terminai_sandbox-")]
    names = set(wheel_names(sandbox_wheel))
    resources = "terminai_sandbox/resources/"
    for expected in ("requirements-test.lock", "debian.lock", "requirements.lock", "contracts/t-apts/contract.json"):
        assert resources + expected in names, expected
    suite = repo_root() / "contracts" / "tests"
    assert {f"{resources}contracts/tests/{p.name}" for p in suite.glob("*.py")} <= names
    where = subprocess.run(
        [
            str(installed_launcher.python),
            "-c",
            "import terminai_sandbox, terminai_apts; print(terminai_sandbox.__file__)",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=installed_launcher.root,
    ).stdout.strip()
    assert Path(where).is_relative_to(installed_launcher.venv), where


def test_every_command_works_from_the_installed_wheels_outside_the_checkout(
    installed_launcher: InstalledLauncher,
    elsewhere: Path,
    registry: RegistryServer,
    built_image: BuildResult,
    engine: DockerApi,
) -> None:
    launcher, here = installed_launcher, elsewhere
    tag = f"{registry.host}/{REPO}:0.1.0"

    keygen = _cli(launcher, here, "keygen")
    assert keygen.returncode == 0, keygen.stderr
    pushed = _cli(launcher, here, "push", str(built_image.oci_layout.root), tag)
    assert pushed.returncode == 0, pushed.stderr
    digest = pushed.stdout.split("@", 1)[1].split()[0]
    assert digest == built_image.manifest_digest
    signed = _cli(launcher, here, "sign", tag, "--key", "cosign.key")
    assert signed.returncode == 0, signed.stderr

    verified = _cli(launcher, here, "verify", tag, "--key", "cosign.pub")
    assert verified.returncode == 0, verified.stderr
    assert f"verified {registry.host}/{REPO}@{digest}" in verified.stdout

    # contracts: the engine holds the content under another name only, so the reference is
    # resolved to its digest and pulled by digest; the suite and its wheel lock come from the wheel.
    pinned = f"{registry.host}/{REPO}@{digest}"
    assert engine.inspect_image(pinned) is None
    contracts = _cli(launcher, here, "contracts", tag, "--json")
    assert contracts.returncode == 0, contracts.stderr
    report = json.loads(contracts.stdout)
    assert report["ok"] and report["passed"] and not report["failed"], report
    assert engine.inspect_image(pinned) is not None
    assert (here / "dist" / "contracts.junit.xml").is_file()
    # Offline, with the wheels a release carries: no package index is asked.
    shutil.copytree(here.parent / "home" / ".cache" / "terminai-sandbox" / "contract-wheels", here / "wheels")
    offline = {
        "HOME": str(here.parent / "home-offline"),
        "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
        "PIP_NO_INDEX": "1",
    }
    again = _cli(launcher, here, "contracts", tag, "--wheels", "wheels", "--json", env=offline)
    assert again.returncode == 0 and json.loads(again.stdout)["ok"], again.stderr

    deep = _cli(launcher, here, "preflight", "--deep", "--image", tag, "--key", "cosign.pub", "--json")
    assert deep.returncode == 0, deep.stderr
    steps = json.loads(deep.stdout)["steps"]
    assert all(step["ok"] for step in steps), steps
    assert any(step["detail"].startswith("contract suite passed inside the image") for step in steps), steps

    ran = _cli(launcher, here, "run", "--image", tag, "--key", "cosign.pub", "--", "python3", "-c", "print('inside')")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "inside"

    sbom = _cli(launcher, here, "sbom", str(built_image.oci_layout.root), "-o", "sbom.json")
    assert sbom.returncode == 0, sbom.stderr
    components = json.loads((here / "sbom.json").read_text())["components"]
    # The hashes come from the locks shipped in the wheel: without them no component has one.
    assert sum(1 for c in components if c.get("hashes")) > len(components) // 2

    audited = _cli(launcher, here, "audit", "verify")
    assert audited.returncode == 0, audited.stderr
    assert "chain intact" in audited.stdout and " 0 records" not in audited.stdout
