"""``terminai-sandbox release --platforms linux/amd64,linux/arm64``, the command itself, end to end.

Not part of `make test` (marker ``multiarch``; `make image-multiarch` runs it): it needs the
arm64 image, which the session's ``multiarch_index`` builds once under qemu-user for every
``multiarch`` file. The release's own build then finds every stage cached, so what this
adds is the release: both contract suites (arm64 under emulation), an SBOM and a
provenance per platform, every signature and attestation, the tag and release.json.

Checked by what we did not write: skopeo reads back the exact bytes of the index and both
platform manifests, Debian's cosign 2.x and 3.x verify the index, both platforms and both
attestations of each (their predicates must be the release's files), and the release
directory verifies air-gapped under the index rule.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from terminai_sandbox._version import __version__
from terminai_sandbox.assemble import repo_root
from terminai_sandbox.assemble.platforms import IndexResult
from terminai_sandbox.cli import main
from terminai_sandbox.registry import RegistryClient

from tests.fixtures.registry import RegistryServer
from tests.integration.release.index_release import check_registry_bytes, check_with_cosign

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.multiarch]

SANDBOX = str(Path(sys.executable).parent / "terminai-sandbox")
REPO = "terminai/release-multiarch"


def test_release_platforms_publishes_one_signed_index_of_both_platforms(
    multiarch_index: IndexResult, registry: RegistryServer, tmp_path: Path
) -> None:
    keygen = CliRunner().invoke(
        main, ["keygen", "--output-prefix", str(tmp_path / "release")], env={"COSIGN_PASSWORD": "pw"}
    )
    assert keygen.exit_code == 0, keygen.output
    dist = tmp_path / "dist"
    done = subprocess.run(
        [
            SANDBOX,
            "release",
            "--push",
            f"{registry.host}/{REPO}",
            "--key",
            str(tmp_path / "release.key"),
            "--platforms",
            "linux/amd64,linux/arm64",
            "--dist",
            str(dist),
        ],
        cwd=repo_root(),
        env={**os.environ, "COSIGN_PASSWORD": "pw"},
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    target = dist / __version__
    manifest = json.loads((target / "release.json").read_text())

    # The release's index is the session's: the same inputs gave the same bytes again.
    assert manifest["index_digest"] == multiarch_index.index_digest
    assert RegistryClient(registry.host).resolve(REPO, __version__) == multiarch_index.index_digest
    built = multiarch_index.by_platform()
    assert list(manifest["platforms"]) == ["linux/amd64", "linux/arm64"]
    for platform, entry in manifest["platforms"].items():
        assert entry["manifest_digest"] == built[platform].manifest_digest
        assert entry["contracts"]["ok"] is True
        assert entry["contracts"]["summary"].endswith(" passed, 0 failed")
        assert entry["contracts"]["emulation"]["emulated"] is (platform == "linux/arm64")
        sbom = json.loads((target / entry["sbom"]["path"]).read_text())
        arch = platform.split("/")[1]
        debs = [c["purl"] for c in sbom["components"] if c["purl"].startswith("pkg:deb/")]
        assert debs and all(f"arch={arch}" in p or "arch=all" in p for p in debs), platform
    # The arm64 suite names what emulation could not prove, as `contracts` reports it.
    arm = manifest["platforms"]["linux/arm64"]["contracts"]["emulation"]
    assert set(arm["proven_by_simulation"]) == {"executor.seccomp", "executor.landlock"}
    assert {"debian.lock", "debian.arm64.lock"} <= set(manifest["locks"])
    for platform in ("linux/amd64", "linux/arm64"):
        assert f"{platform}" in done.stdout

    check_registry_bytes(registry.host, REPO, target, manifest)
    for major in (2, 3):
        check_with_cosign(major, registry.host, REPO, target, manifest, tmp_path / f"cosign{major}-home")

    # Air-gapped, both platforms and both attestations of each, by the command users run.
    offline = CliRunner().invoke(
        main,
        [
            "verify",
            f"{registry.host}/{REPO}",
            "--key",
            str(target / "cosign.pub"),
            "--offline",
            str(target),
            "--attestation",
            "cyclonedx",
            "--attestation",
            "slsaprovenance1",
            "--json",
        ],
    )
    assert offline.exit_code == 0, offline.output
    result = json.loads(offline.output)
    assert result["digest"] == multiarch_index.index_digest
    assert {p["platform"]: p["digest"] for p in result["platforms"]} == {
        name: entry["manifest_digest"] for name, entry in manifest["platforms"].items()
    }
