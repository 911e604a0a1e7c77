#!/usr/bin/env python3
"""Session start time of `terminai-sandbox run` against plain `docker run`, in the same run.

Setup: the image (cached build) pushed to a loopback `docker-registry` and signed with a
throwaway key. Then, N times each, interleaved:

* baseline: `docker run --rm --network none IMAGE@DIGEST true`;
* hardened floor: the exact `docker run` command line the launcher builds (read from its
  audit ledger), run directly: what the hardening flags alone cost;
* launcher, warm verification cache, digest reference (`REPO:TAG@sha256:...`, the form a
  release configures): no registry round trip;
* launcher, warm verification cache, tag reference (`REPO:TAG`): dockerd resolves the tag
  (one registry round trip);
* launcher, first verification: the tag reference with an empty state directory;
* for scale: the launcher's Python interpreter starting and exiting (`python -c pass`);
* gVisor: plain `docker run --runtime runsc` and the launcher with
  `TERMINAI_SANDBOX_RUNTIME=runsc` (warm cache, digest reference), against their runc
  counterparts above (runsc registered by `scripts/ensure-engine`).

    python benchmarks/launch.py [--runs 21]
"""

from __future__ import annotations

import argparse
import json
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
from terminai_sandbox.signing import sign
from terminai_sandbox.signing.formats import keys

CLI = str(Path(sys.executable).with_name("terminai-sandbox"))


def timed(cmd: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def measure(host: str, digest: str, pub: Path, work: Path, runs: int) -> dict[str, list[float]]:
    """Every series, interleaved run by run; the image is already in the engine by digest."""
    pinned = f"{host}/terminai/sandbox@{digest}"
    base_env = {"PATH": os.environ["PATH"], "TERMINAI_SANDBOX": "docker"}
    warm_home, cold_home = work / "warm", work / "cold"
    warm_home.mkdir()
    tag_ref = f"{host}/terminai/sandbox:0.1.0"
    launch_tag = [CLI, "run", "--image", tag_ref, "--key", str(pub), "--", "true"]
    launch_pinned = [CLI, "run", "--image", f"{tag_ref}@{digest}", "--key", str(pub), "--", "true"]
    warm_env = {**base_env, "HOME": str(warm_home)}
    subprocess.run(launch_tag, env=warm_env, check=True, capture_output=True)
    ledger = warm_home / ".local" / "state" / "terminai-sandbox" / "audit.jsonl"
    hardened = next(json.loads(line)["argv"] for line in ledger.read_text().splitlines() if '"event": "run"' in line)
    name = hardened[hardened.index("--name") + 1]
    gvisor_env = {**warm_env, "TERMINAI_SANDBOX_RUNTIME": "runsc"}
    subprocess.run(launch_pinned, env=gvisor_env, check=True, capture_output=True)
    names = ("baseline", "floor", "pinned", "tag", "cold", "python", "runsc_baseline", "runsc_pinned")
    series: dict[str, list[float]] = {k: [] for k in names}
    for run in range(runs):
        series["baseline"].append(timed(["docker", "run", "--rm", "--network", "none", pinned, "true"], base_env))
        fresh = f"{name}-{run}"
        series["floor"].append(timed([a.replace(name, fresh) for a in hardened], base_env))
        series["pinned"].append(timed(launch_pinned, warm_env))
        series["tag"].append(timed(launch_tag, warm_env))
        shutil.rmtree(cold_home, ignore_errors=True)
        cold_home.mkdir()
        series["cold"].append(timed(launch_tag, {**base_env, "HOME": str(cold_home)}))
        series["python"].append(timed([sys.executable, "-c", "pass"], base_env))
        plain_runsc = ["docker", "run", "--rm", "--runtime", "runsc", "--network", "none", pinned, "true"]
        series["runsc_baseline"].append(timed(plain_runsc, base_env))
        series["runsc_pinned"].append(timed(launch_pinned, gvisor_env))
    return series


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    ensure()
    with tempfile.TemporaryDirectory(prefix="bench-launch-") as tmp:
        work = Path(tmp)
        result = build_image(BuildOptions(output_dir=work / "out", load=False))
        with loopback_registry(work / "registry") as registry:
            client = RegistryClient(registry.host)
            digest = client.push_layout(result.oci_layout, "terminai/sandbox", tag="0.1.0").digest
            key = keys.generate()
            sign.sign(client, "terminai/sandbox", digest, key, docker_reference=f"{registry.host}/terminai/sandbox")
            (work / "k.pub").write_bytes(keys.public_pem(key))
            pinned = f"{registry.host}/terminai/sandbox@{digest}"
            subprocess.run(["docker", "pull", pinned], check=True, capture_output=True)
            try:
                series = measure(registry.host, digest, work / "k.pub", work, args.runs)
            finally:
                # Each run's registry has a new port: leave no reference to it in the engine.
                subprocess.run(["docker", "rmi", pinned], check=False, capture_output=True)
    m = {k: statistics.median(v) for k, v in series.items()}
    b = m["baseline"]
    print(f"plain docker run --rm --network none IMAGE true : {b * 1000:7.0f} ms (median of {args.runs})")
    print(
        f"hardened docker run (the launcher's argv) alone  : {m['floor'] * 1000:7.0f} ms  ratio {m['floor'] / b:.2f}x"
    )
    print(
        f"terminai-sandbox run, warm cache, REPO:TAG@sha256: {m['pinned'] * 1000:7.0f} ms  ratio {m['pinned'] / b:.2f}x"
    )
    print(f"terminai-sandbox run, warm cache, REPO:TAG       : {m['tag'] * 1000:7.0f} ms  ratio {m['tag'] / b:.2f}x")
    print(
        f"terminai-sandbox run, first verification         : {m['cold'] * 1000:7.0f} ms  "
        f"+{(m['cold'] - m['tag']) * 1000:.0f} ms over warm (REPO:TAG)"
    )
    print(f"for scale: python -c pass                        : {m['python'] * 1000:7.0f} ms")
    g = m["runsc_baseline"]
    print(
        f"plain docker run --runtime runsc ... IMAGE true  : {g * 1000:7.0f} ms  ratio {g / b:.2f}x "
        "(gVisor against runc)"
    )
    print(
        f"terminai-sandbox run, runsc, warm, REPO:TAG@sha256: {m['runsc_pinned'] * 1000:7.0f} ms  "
        f"ratio {m['runsc_pinned'] / g:.2f}x over plain runsc, {m['runsc_pinned'] / m['pinned']:.2f}x over runc"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
