"""``terminai-sandbox release --platforms linux/amd64,linux/arm64``, the command itself, end to end.

Not part of `make test` (marker ``multiarch``; `make image-multiarch` runs it): it needs the
arm64 image, which the session's ``multiarch_index`` builds once under qemu-user for every
``multiarch`` file. The release's own build then finds every stage cached, so what this
adds is the release: both contract suites (arm64 under emulation), an SBOM and a
provenance per platform, every signature and attestation, the tag and release.json.

``test_a_two_platform_stand_in_index_is_released_whole`` releases two platforms without
emulation (an arm64 stand-in whose binaries are amd64), for hosts with no qemu-user
registered; it is in the same marker, since each contract run costs its share of `make test`.

Checked by what we did not write: skopeo reads back the exact bytes of the index and both
platform manifests, Debian's cosign 2.x and 3.x verify the index, both platforms and both
attestations of each (their predicates must be the release's files), and the release
directory verifies air-gapped under the index rule.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from terminai_sandbox._version import __version__
from terminai_sandbox.artifacts.oci_layout import IndexLayout, OciLayout
from terminai_sandbox.assemble import BuildResult, repo_root
from terminai_sandbox.assemble.platforms import IndexResult
from terminai_sandbox.engine.client import DockerApi
from terminai_sandbox.errors import EngineError
from terminai_sandbox.registry import RegistryClient
from terminai_sandbox.release import Describe, KeySigner, ReleaseOptions, release
from terminai_sandbox.signing.formats import keys

from tests.fixtures.image import MULTIARCH
from tests.fixtures.registry import RegistryServer
from tests.integration.release.index_release import (
    check_each_blob_stored_once,
    check_offline,
    check_registry_bytes,
    check_with_cosign,
    release_through_the_command,
)
from tests.integration.signing.test_sbom_platforms import _arm64_layout

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
    check_each_blob_stored_once(target)  # both platforms' build layouts and oci/ share each blob
    for major in (2, 3):
        check_with_cosign(major, registry.host, REPO, target, manifest, tmp_path / f"cosign{major}-home")
    check_offline(registry.host, REPO, target, manifest)


@dataclass(frozen=True, slots=True)
class _StandIn:
    """One platform of a hand-made index, as the release reads a platform's build."""

    platform: str
    oci_layout: OciLayout

    @property
    def manifest_digest(self) -> str:
        return self.oci_layout.manifest_digest

    @property
    def config_digest(self) -> str:
        return self.oci_layout.config_digest


@dataclass(frozen=True, slots=True)
class _StandInIndex:
    index_digest: str
    layout: Path
    platforms: tuple[BuildResult | _StandIn, ...]


@pytest.fixture()
def stand_in_index(built_image: BuildResult, engine: DockerApi, tmp_path: Path) -> Iterator[_StandInIndex]:
    """linux/amd64 (the session image) and an arm64 stand-in, loaded into the engine.

    The stand-in is test_sbom_platforms' (the amd64 layers, the dpkg database relabelled
    arm64, an arm64 config); its binaries are amd64, so its contract suite runs natively.
    It exercises the release's loop over two platforms where no arm64 emulation is set up;
    the real arm64 image is the test above.
    """
    root = tmp_path / "stand-in" / "oci"
    root.parent.mkdir()
    singles = _arm64_layout(built_image, root)
    tag = f"terminai/index-stand-in:arm64-{os.getpid()}-{os.urandom(3).hex()}"
    archive = tmp_path / "stand-in-arm64.tar"
    subprocess.run(
        ["skopeo", "copy", "--quiet", f"oci:{singles['linux/arm64'][1]}", f"docker-archive:{archive}:{tag}"],
        check=True,
        timeout=300,
    )
    engine.load_image(archive)
    arm = _StandIn("linux/arm64", OciLayout.open(singles["linux/arm64"][1]))
    try:
        yield _StandInIndex(IndexLayout.open(root).index_digest, root, (built_image, arm))
    finally:
        with contextlib.suppress(EngineError):
            engine.remove_image(tag, prune=False)


def test_a_two_platform_stand_in_index_is_released_whole(
    stand_in_index: _StandInIndex, registry: RegistryServer, engine: DockerApi, tmp_path: Path
) -> None:
    client = RegistryClient(registry.host)
    options = ReleaseOptions(
        repository=f"{registry.host}/{REPO}-stand-in",
        version=__version__,
        dist_root=tmp_path / "dist",
        describe=Describe(image_dir=repo_root() / "images" / "sandbox"),
    )
    key = keys.generate()
    manifest = release(options, build=lambda: stand_in_index, engine=engine, signer=KeySigner(key), client=client)
    target = options.target
    assert manifest["index_digest"] == stand_in_index.index_digest
    assert list(manifest["platforms"]) == ["linux/amd64", "linux/arm64"]
    assert {n: e["manifest_digest"] for n, e in manifest["platforms"].items()} == {
        p.platform: p.manifest_digest for p in stand_in_index.platforms
    }
    assert {"debian.lock", "debian.arm64.lock"} <= set(manifest["locks"])  # each platform's plan
    for name, entry in manifest["platforms"].items():
        sbom = json.loads((target / entry["sbom"]["path"]).read_text())
        arch = name.split("/")[1]
        debs = [c["purl"] for c in sbom["components"] if c.get("purl", "").startswith("pkg:deb/")]
        assert debs and all(f"arch={arch}" in p or "arch=all" in p for p in debs), name
        slsa = json.loads((target / entry["provenance"]["path"]).read_text())
        locks = {d.get("name") or d.get("uri") for d in slsa["buildDefinition"]["resolvedDependencies"]}
        assert any("debian.arm64.lock" in str(n) for n in locks) is (arch == "arm64"), name
    check_registry_bytes(registry.host, f"{REPO}-stand-in", target, manifest)
    for major in (2, 3):
        check_with_cosign(major, registry.host, f"{REPO}-stand-in", target, manifest, tmp_path / f"cosign{major}")
    check_offline(registry.host, f"{REPO}-stand-in", target, manifest)
