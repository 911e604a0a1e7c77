#!/usr/bin/env python3
"""The arm64 image build under qemu-user emulation, against plain mmdebstrap of arm64 in the same run.

1. baseline: plain `mmdebstrap --architectures=arm64 --variant=minbase --include=python3`
   (merged-usr hook) to a tar: its maintainer scripts run under qemu-user too;
2. cold build: `build_image` of linux/arm64 with an empty stage cache (pinned rootfs, lock
   verification, wheels by hash with google-re2's aarch64 wheel, T-APTS, byte-compiled by the
   image's arm64 python3 under qemu-user, OCI layout and docker archive; not loaded);
3. the same two for amd64 (native), so the cost of emulation is the ratio of the ratios.

    python benchmarks/build_arm64.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from terminai_sandbox.assemble import BuildOptions, build_image, repo_root
from terminai_sandbox.assemble.spec import load_spec


def _plain(spec_path: Path, architecture: str, out: Path) -> float:
    spec = load_spec(spec_path)
    started = time.perf_counter()
    subprocess.run(
        [
            "mmdebstrap", "--quiet", "--variant=minbase", f"--architectures={architecture}", "--include=python3",
            "--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr", spec.suite, str(out), *spec.mirrors,
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return time.perf_counter() - started


def _cold(platform: str, work: Path) -> float:
    started = time.perf_counter()
    build_image(BuildOptions(platform=platform, output_dir=work / "out", cache_dir=work / "cache", load=False))
    return time.perf_counter() - started


def main() -> int:
    spec_path = repo_root() / "images" / "sandbox" / "image.toml"
    rows = []
    for platform in ("linux/amd64", "linux/arm64"):
        architecture = platform.split("/")[1]
        with tempfile.TemporaryDirectory(prefix=f"bench-build-{architecture}-") as tmp:
            work = Path(tmp)
            baseline = _plain(spec_path, architecture, work / "plain.tar")
            cold = _cold(platform, work)
        rows.append((platform, baseline, cold))
        print(f"{platform}: plain mmdebstrap {baseline:6.1f} s, cold build {cold:6.1f} s, ratio {cold / baseline:.2f}x")
    (_, native_plain, native_cold), (_, emulated_plain, emulated_cold) = rows
    plain_ratio, cold_ratio = emulated_plain / native_plain, emulated_cold / native_cold
    print(f"emulation: plain mmdebstrap {plain_ratio:.2f}x native, cold build {cold_ratio:.2f}x native")
    return 0


if __name__ == "__main__":
    sys.exit(main())
