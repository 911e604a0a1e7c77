#!/usr/bin/env python3
"""Session start time of `terminai-sandbox run` against plain `docker run`, in the same run.

Setup: the image (cached build) pushed to a loopback `docker-registry` and signed with a
throwaway key. Then, N times each, interleaved:

* baseline: `docker run --rm --network none IMAGE@DIGEST true`;
* launcher, warm verification cache: `terminai-sandbox run --image REF --key K -- true`;
* launcher, first verification: the same with an empty state directory (cache cold).

    python benchmarks/launch.py [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from terminai_sandbox.build import BuildOptions, build_image
from terminai_sandbox.engine import ensure
from terminai_sandbox.localregistry import loopback_registry
from terminai_sandbox.registry import RegistryClient
from terminai_sandbox.signing import cosign, keys

CLI = str(Path(sys.executable).with_name("terminai-sandbox"))


def timed(cmd: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    ensure()
    with tempfile.TemporaryDirectory(prefix="bench-launch-") as tmp:
        work = Path(tmp)
        result = build_image(BuildOptions(output_dir=work / "out", load=False))
        with loopback_registry(work / "registry") as registry:
            host = registry.host
            client = RegistryClient(host)
            digest = client.push_layout(result.oci_layout, "terminai/sandbox", tag="0.1.0").digest
            key = keys.generate()
            cosign.sign(client, "terminai/sandbox", digest, key, docker_reference=f"{host}/terminai/sandbox")
            (work / "k.pub").write_bytes(keys.public_pem(key))
            pinned = f"{host}/terminai/sandbox@{digest}"
            subprocess.run(["docker", "pull", pinned], check=True, capture_output=True)
            base_env = {"PATH": os.environ["PATH"], "TERMINAI_SANDBOX": "docker"}
            warm_home, cold_home = work / "warm", work / "cold"
            warm_home.mkdir()
            launch = [
                CLI,
                "run",
                "--image",
                f"{host}/terminai/sandbox:0.1.0",
                "--key",
                str(work / "k.pub"),
                "--",
                "true",
            ]
            subprocess.run(launch, env={**base_env, "HOME": str(warm_home)}, check=True, capture_output=True)
            baseline, warm, cold = [], [], []
            for _ in range(args.runs):
                baseline.append(timed(["docker", "run", "--rm", "--network", "none", pinned, "true"], base_env))
                warm.append(timed(launch, {**base_env, "HOME": str(warm_home)}))
                shutil.rmtree(cold_home, ignore_errors=True)
                cold_home.mkdir()
                cold.append(timed(launch, {**base_env, "HOME": str(cold_home)}))
    b, w, c = (statistics.median(x) for x in (baseline, warm, cold))
    print(f"plain docker run --rm --network none IMAGE true : {b * 1000:7.0f} ms (median of {args.runs})")
    print(f"terminai-sandbox run, warm verification cache    : {w * 1000:7.0f} ms  ratio {w / b:.2f}x")
    print(f"terminai-sandbox run, first verification         : {c * 1000:7.0f} ms  +{(c - w) * 1000:.0f} ms over warm")
    return 0


if __name__ == "__main__":
    sys.exit(main())
