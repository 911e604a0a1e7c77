"""``build --platforms A,B``: every platform from its own pinned inputs, then one index.

Each platform is an ordinary one-platform build (:func:`~.image.build_image`) into
``OUTPUT/<os>-<arch>/`` (its OCI layout and docker archive), so a platform's manifest is
byte for byte what building that platform alone gives. ``OUTPUT/oci-index`` is then one OCI
layout whose image index lists the platform manifests (see :mod:`.index`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from terminai_sandbox._version import __version__
from terminai_sandbox.assemble.image import BuildOptions, BuildResult, build_image, result_from_dict
from terminai_sandbox.assemble.index import write_index_layout

INDEX_DIR = "oci-index"


def platform_dir(platform: str) -> str:
    """``linux/arm64`` -> ``linux-arm64``: the output folder of one platform."""
    return platform.replace("/", "-")


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexResult:
    """What a multi-platform build produced: the index and each platform's build."""

    index_digest: str
    layout: Path  # the OCI layout holding the index
    platforms: tuple[BuildResult, ...]  # in the declared order
    seconds: float

    def by_platform(self) -> dict[str, BuildResult]:
        return {result.platform: result for result in self.platforms}

    def to_dict(self) -> dict[str, Any]:
        return {
            "index_digest": self.index_digest,
            "oci_index": str(self.layout),
            "platforms": {result.platform: result.to_dict() for result in self.platforms},
            "seconds": round(self.seconds, 2),
        }


def index_result_from_dict(data: dict[str, Any]) -> IndexResult:
    """The :class:`IndexResult` that ``build --platforms ... --json`` printed."""
    return IndexResult(
        index_digest=data["index_digest"],
        layout=Path(data["oci_index"]),
        platforms=tuple(result_from_dict(item) for item in data["platforms"].values()),
        seconds=float(data["seconds"]),
    )


def build_platforms(opts: BuildOptions, platforms: Sequence[str]) -> IndexResult:
    """Build each of ``platforms`` (declared order) and write their index layout."""
    started = time.monotonic()
    # Absolute: the T-APTS wheel is built by a process in another working directory.
    output = (opts.output_dir or opts.root / "dist" / __version__).absolute()
    results = []
    for platform in platforms:
        opts.progress(f"{platform}: building")
        one = dataclasses.replace(opts, platform=platform, output_dir=output / platform_dir(platform))
        results.append(build_image(one))
    layout = output / INDEX_DIR
    digest = write_index_layout(layout, [r.oci_layout for r in results], ref_name=__version__)
    opts.progress(f"index {digest} over {', '.join(platforms)}")
    return IndexResult(index_digest=digest, layout=layout, platforms=tuple(results), seconds=time.monotonic() - started)
