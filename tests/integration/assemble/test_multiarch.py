"""linux/amd64 and linux/arm64 from their own pinned inputs into one OCI index; each
platform's contract suite inside its own image (arm64 under qemu-user).

Not part of `make test` (marker ``multiarch``; `make image-multiarch` runs it): the arm64
base is built under emulation. The layout is read back with skopeo, and the arm64 suite's
report must name, by the image's own answer, what emulation could not prove.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from terminai_sandbox._version import __version__
from terminai_sandbox.assemble import BuildOptions, build_image
from terminai_sandbox.assemble.platforms import IndexResult
from terminai_sandbox.contracts import run_contracts
from terminai_sandbox.emulation import GUARANTEES, PROBE
from terminai_sandbox.engine.client import DockerApi

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.multiarch]

PLATFORMS = ("linux/amd64", "linux/arm64")
SKOPEO = shutil.which("skopeo") or "skopeo"
SANDBOX = str(Path(sys.executable).parent / "terminai-sandbox")


@pytest.fixture()
def index(multiarch_index: IndexResult) -> IndexResult:
    """The session's two-platform index (tests/fixtures/image.py), shared with the release test."""
    return multiarch_index


def _skopeo(*args: str) -> bytes:
    return subprocess.run([SKOPEO, *args], capture_output=True, check=True, timeout=120).stdout


def test_skopeo_reads_one_index_that_resolves_each_platform_to_its_image(index: IndexResult) -> None:
    reference = f"oci:{index.layout}:{__version__}"
    raw = _skopeo("inspect", "--raw", reference)
    assert "sha256:" + hashlib.sha256(raw).hexdigest() == index.index_digest
    listed = json.loads(raw)
    assert listed["mediaType"] == "application/vnd.oci.image.index.v1+json"
    assert [(m["platform"]["os"], m["platform"]["architecture"], m["digest"]) for m in listed["manifests"]] == [
        ("linux", r.platform.split("/")[1], r.manifest_digest) for r in index.platforms
    ]
    for result in index.platforms:
        arch = result.platform.split("/")[1]
        config = _skopeo("--override-os", "linux", "--override-arch", arch, "inspect", "--config", "--raw", reference)
        assert json.loads(config)["architecture"] == arch
        assert "sha256:" + hashlib.sha256(config).hexdigest() == result.config_digest


def test_each_platform_in_the_index_is_what_building_that_platform_alone_gives(
    index: IndexResult, tmp_path: Path
) -> None:
    for result in index.platforms:
        alone = build_image(
            BuildOptions(platform=result.platform, output_dir=tmp_path / result.platform.split("/")[1], load=False)
        )
        assert (alone.platform, alone.manifest_digest) == (result.platform, result.manifest_digest)


def test_the_probe_is_granted_both_guarantees_natively(engine: DockerApi, index: IndexResult) -> None:
    """The control: what the arm64 run reports as refused, the same probe gets on amd64."""
    amd64 = index.by_platform()["linux/amd64"]
    code, out, err = engine.run(
        amd64.config_digest, ["python3", "-I", "-c", PROBE], network_mode="none", read_only=True,
        tmpfs={"/tmp": "rw,size=16m"}, cap_drop=["ALL"], security_opt=["no-new-privileges"], timeout=300,
    )  # fmt: skip
    assert code == 0, err
    answer = json.loads(out.decode().strip().splitlines()[-1])
    assert answer["executor.seccomp"] == "held" and answer["executor.landlock"].startswith("held (ABI ")


def test_the_amd64_suite_runs_natively_and_proves_everything_there(engine: DockerApi, index: IndexResult) -> None:
    report = run_contracts(engine, index.by_platform()["linux/amd64"])
    assert report.ok and report.emulation is not None
    assert not report.emulation.emulated and report.emulation.by_simulation() == ()


def test_the_arm64_suite_passes_under_emulation_and_names_what_simulation_proves(
    engine: DockerApi, index: IndexResult, tmp_path: Path
) -> None:
    arm64 = index.by_platform()["linux/arm64"]
    done = subprocess.run(
        [SANDBOX, "contracts", arm64.config_digest, "--wheels", str(arm64.contract_wheels), "--output", str(tmp_path)],
        capture_output=True, text=True, timeout=1800, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr + done.stdout
    lines = done.stdout.splitlines()
    assert lines[0].startswith("contracts: ") and " 0 failed" in lines[0]
    assert "linux/arm64 ran under qemu-user emulation" in lines
    named = {line.split(": ", 1)[1].split(" ", 1)[0] for line in lines if line.startswith("proven by simulation: ")}
    # The image's own executor was refused both under qemu-user: each is named, none skipped.
    assert named == {g.name for g in GUARANTEES}
    assert any("test_seccomp_aarch64.py" in line for line in lines)
