"""How the two-platform reproducibility check tells two builds apart: the first platform whose
manifest differs is named, a missing platform is named, and an index that differs over the
same manifests is named as the index."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import cast

from terminai_sandbox.artifacts.oci_layout import OciLayout
from terminai_sandbox.assemble.image import BuildResult
from terminai_sandbox.assemble.platforms import IndexResult
from terminai_sandbox.assemble.reproduce import index_difference


def _result(platform: str, manifest: str, config: str) -> BuildResult:
    return BuildResult(
        reference="terminai/sandbox:1.2.3", config_digest=config, manifest_digest=manifest,
        oci_layout=cast(OciLayout, None), archive=Path("image.tar"), output_dir=Path("."), source_date_epoch=1,
        labels={}, diff_ids=("sha256:" + "1" * 64,), uncompressed_size=1, compressed_size=1, seconds=1.0,
        loaded=False, contract_wheels=Path("."), platform=platform,
    )  # fmt: skip


def _index(digest: str, *results: BuildResult) -> IndexResult:
    return IndexResult(index_digest=digest, layout=Path("oci-index"), platforms=results, seconds=1.0)


AMD64 = _result("linux/amd64", "sha256:" + "a" * 64, "sha256:" + "c" * 64)
ARM64 = _result("linux/arm64", "sha256:" + "b" * 64, "sha256:" + "d" * 64)


def test_the_same_index_and_manifests_are_no_difference() -> None:
    assert index_difference(_index("sha256:i", AMD64, ARM64), _index("sha256:i", AMD64, ARM64)) == ""


def test_a_differing_platform_is_named_before_the_index() -> None:
    other = dataclasses.replace(ARM64, config_digest="sha256:" + "e" * 64, manifest_digest="sha256:" + "f" * 64)
    found = index_difference(_index("sha256:i", AMD64, ARM64), _index("sha256:j", AMD64, other))
    assert found.startswith("linux/arm64: config differs: ")


def test_a_platform_the_second_build_lacks_is_named() -> None:
    found = index_difference(_index("sha256:i", AMD64, ARM64), _index("sha256:j", AMD64))
    assert found == "the second build has no linux/arm64 image"


def test_an_index_that_differs_over_the_same_manifests_is_named() -> None:
    found = index_difference(_index("sha256:i", AMD64, ARM64), _index("sha256:j", AMD64, ARM64))
    assert found == "the index differs: sha256:i vs sha256:j (same platform manifests)"
