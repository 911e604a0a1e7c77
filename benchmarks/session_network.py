#!/usr/bin/env python3
"""Session start with a network policy against the same start without one, in the same run.

Setup as in ``benchmarks/launch.py``: the image (cached build) pushed to a loopback
``docker-registry``, signed with a throwaway key, verified once (warm cache), launched by
digest. Then, N times each, interleaved:

* ``off``: ``terminai-sandbox run ... -- true`` (no policy: today's session);
* ``allow``: the same with ``SANDBOX_NETWORK=allow:pypi.org``: the launcher starts the
  egress proxy and waits until it listens, the session mounts its socket and the
  entrypoint starts the bridge; the proxy is stopped after the session;
* ``allow`` + a request: the session sends one proxied request to the bridge (refused by
  the proxy, as ``denied.test`` is not allowed), so the bridge and the proxy are on the
  path, and nothing leaves the machine.

The goal (issue #38): ``allow`` within 1.2× of ``off``. Prints medians and the ratio.

    python benchmarks/session_network.py [--runs 11]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from terminai_sandbox.artifacts.oci_layout import OciLayout
from terminai_sandbox.assemble import BuildOptions, build_image
from terminai_sandbox.registry import RegistryClient
from terminai_sandbox.signing import sign
from terminai_sandbox.signing.formats import keys
from terminai_sandbox_dev.localregistry import loopback_registry

CLI = str(Path(sys.executable).with_name("terminai-sandbox"))
REQUEST = (
    "import urllib.request, urllib.error\n"
    "try:\n    urllib.request.urlopen('http://denied.test/', timeout=10)\n"
    "except urllib.error.HTTPError as exc:\n    assert exc.code == 403, exc.code\n"
)


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=cwd, check=False, capture_output=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{cmd[-3:]} exited {done.returncode}: {done.stderr.decode()[-800:]}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=11)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-network-") as tmp:
        work = Path(tmp)
        os.chmod(work, 0o755)
        built = build_image(BuildOptions(output_dir=work / "build"))
        with loopback_registry(work / "registry") as registry:
            client = RegistryClient(registry.host)
            digest = client.push_layout(OciLayout.open(built.oci_layout.root), "terminai/sandbox", tag="0.1.0").digest
            key = keys.generate()
            pub = work / "cosign.pub"
            pub.write_bytes(keys.public_pem(key))
            sign.sign(client, "terminai/sandbox", digest, key, docker_reference=f"{registry.host}/terminai/sandbox")
            home = work / "home"
            home.mkdir()
            env = {"PATH": os.environ["PATH"], "HOME": str(home), "TERMINAI_SANDBOX": "docker"}
            image = f"{registry.host}/terminai/sandbox:0.1.0@{digest}"
            base = [CLI, "run", "--image", image, "--key", str(pub), "--"]
            allow = {**env, "SANDBOX_NETWORK": "allow:pypi.org"}
            timed([*base, "true"], env, work)  # verify once: the warm cache from here on
            timed([*base, "true"], allow, work)
            series: dict[str, list[float]] = {"off": [], "allow": [], "allow_request": []}
            for _ in range(args.runs):
                series["off"].append(timed([*base, "true"], env, work))
                series["allow"].append(timed([*base, "true"], allow, work))
                series["allow_request"].append(timed([*base, "python3", "-c", REQUEST], allow, work))
    median = {name: statistics.median(values) for name, values in series.items()}
    print(f"session start, median of {args.runs} interleaved runs (warm cache, digest reference)")
    for name, value in median.items():
        print(f"  {name:14} {value * 1000:8.0f} ms  {value / median['off']:.2f}x off")
    ratio = median["allow"] / median["off"]
    print(f"allow / off = {ratio:.2f} (goal <= 1.20)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
