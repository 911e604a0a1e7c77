#!/usr/bin/env python3
"""Image build timings and sizes, against plain mmdebstrap measured in the same run.

1. baseline: plain `mmdebstrap --variant=minbase --include=python3` (merged-usr hook) to a tar;
2. cold build: `build_image` with an empty cache (pinned rootfs, wheels, T-APTS, OCI + docker
   archive, load into the engine);
3. warm rebuild after a T-APTS-only change (a touched docstring in a copy of the package)
   to a runnable image, then `docker run ... true`;
4. sizes: uncompressed layers and gzip blobs.

    python benchmarks/build.py
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from terminai_sandbox.assemble import BuildOptions, build_image, repo_root
from terminai_sandbox.assemble.spec import load_spec
from terminai_sandbox.engine.client import connect


def main() -> int:
    root = repo_root()
    spec = load_spec(root / "images" / "sandbox" / "image.toml")
    subprocess.run([sys.executable, str(root / "scripts" / "ensure-engine")], check=True)
    engine = connect()
    with tempfile.TemporaryDirectory(prefix="bench-build-") as tmp:
        work = Path(tmp)
        started = time.perf_counter()
        subprocess.run(
            [
                "mmdebstrap",
                "--quiet",
                "--variant=minbase",
                "--include=python3",
                "--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr",
                spec.suite,
                str(work / "plain.tar"),
                *spec.mirrors,
            ],
            check=True,
            capture_output=True,
        )
        baseline = time.perf_counter() - started

        started = time.perf_counter()
        cold = build_image(BuildOptions(output_dir=work / "cold", cache_dir=work / "cache", tag="bench/sandbox:cold"))
        cold_s = time.perf_counter() - started

        source = work / "terminai-apts"
        shutil.copytree(
            root / "packages" / "terminai-apts",
            source,
            symlinks=False,
            ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"),
        )
        model = source / "src" / "terminai_apts" / "model.py"
        model.write_text(model.read_text().replace('"""The versioned', '"""The (changed) versioned', 1))
        started = time.perf_counter()
        warm = build_image(
            BuildOptions(
                output_dir=work / "warm", cache_dir=work / "cache", tapts_source=source, tag="bench/sandbox:warm"
            )
        )
        code, _, _ = engine.run(warm.config_digest, ["true"], network_mode="none")
        warm_s = time.perf_counter() - started
        assert code == 0 and warm.diff_ids[:2] == cold.diff_ids[:2] and warm.diff_ids[2] != cold.diff_ids[2]
        for tag in ("bench/sandbox:cold", "bench/sandbox:warm"):
            engine.remove_image(tag, force=True)
    print(f"plain mmdebstrap (baseline)     : {baseline:6.1f} s")
    print(f"cold build (pinned, loaded)     : {cold_s:6.1f} s  ratio {cold_s / baseline:.2f}x")
    print(f"warm rebuild, T-APTS change, run: {warm_s:6.1f} s")
    print(
        f"image size                      : {cold.uncompressed_size / 1e6:.1f} MB uncompressed, "
        f"{cold.compressed_size / 1e6:.1f} MB gzip"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
