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
from pathlib import Path

import pytest
from terminai_sandbox._version import __version__
from terminai_sandbox.assemble.platforms import IndexResult
from terminai_sandbox.registry import RegistryClient

from tests.fixtures.image import MULTIARCH
from tests.fixtures.registry import RegistryServer
from tests.integration.release.index_release import (
    check_offline,
    check_registry_bytes,
    check_with_cosign,
    release_through_the_command,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.multiarch]

REPO = "terminai/release-multiarch"


def test_release_platforms_publishes_one_signed_index_of_both_platforms(
    multiarch_index: IndexResult, registry: RegistryServer, tmp_path: Path
) -> None:
    target, manifest, stdout = release_through_the_command(registry.host, REPO, MULTIARCH, tmp_path)

    # The release's index is the session's: the same inputs gave the same bytes again.
    assert manifest["index_digest"] == multiarch_index.index_digest
    assert RegistryClient(registry.host).resolve(REPO, __version__) == multiarch_index.index_digest
    built = multiarch_index.by_platform()
    assert list(manifest["platforms"]) == list(MULTIARCH)
    for platform, entry in manifest["platforms"].items():
        assert entry["manifest_digest"] == built[platform].manifest_digest
        assert entry["contracts"]["ok"] is True
        assert entry["contracts"]["summary"].endswith(" passed, 0 failed")
        assert entry["contracts"]["emulation"]["emulated"] is (platform == "linux/arm64")
        sbom = json.loads((target / entry["sbom"]["path"]).read_text())
        arch = platform.split("/")[1]
        debs = [c["purl"] for c in sbom["components"] if c.get("purl", "").startswith("pkg:deb/")]
        assert debs and all(f"arch={arch}" in p or "arch=all" in p for p in debs), platform
        assert f"{platform}" in stdout
    # The arm64 suite names what emulation could not prove, as `contracts` reports it.
    arm = manifest["platforms"]["linux/arm64"]["contracts"]["emulation"]
    assert set(arm["proven_by_simulation"]) == {"executor.seccomp", "executor.landlock"}
    assert {"debian.lock", "debian.arm64.lock"} <= set(manifest["locks"])

    check_registry_bytes(registry.host, REPO, target, manifest)
    for major in (2, 3):
        check_with_cosign(major, registry.host, REPO, target, manifest, tmp_path / f"cosign{major}-home")
    check_offline(registry.host, REPO, target, manifest)
