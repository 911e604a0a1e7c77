#!/usr/bin/env python3
"""What gVisor costs a session: runc against Debian 12's runsc and trixie's (``runsc-trixie``).

Setup: the image (cached build). Then, N rounds, each runtime in turn (the order reversed
every other round, so drift falls on all alike), the hardened session command line
(``--network none --read-only --tmpfs /tmp --cap-drop ALL --security-opt no-new-privileges``):

* session start: ``docker run --rm ... IMAGE true``;
* the image's interpreter: ``... IMAGE python3 -c pass``;
* an executor cell from cold: ``... IMAGE sh -c "echo 'print(1)' | terminai-apts exec --json"``
  (the zygote starts, prepares its hardening and runs one cell; under gVisor it refuses,
  docs/SECURITY.md, so that figure is the time to refuse);
* inside one session per runtime: a ``python3 -c pass`` child, an ``os.stat`` and a
  ``fork``/``waitpid`` (system calls served by the Sentry under gVisor).

Runtimes dockerd does not list are left out (``scripts/ensure-engine`` registers both).
On a loaded machine only the same-run ratios compare.

    python benchmarks/gvisor.py [--runs 7]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from terminai_sandbox.assemble import BuildOptions, build_image
from terminai_sandbox.engine.client import connect

RUNTIMES = ("runc", "runsc", "runsc-trixie")
HARDENED = (
    "--network", "none", "--read-only", "--tmpfs", "/tmp:rw,size=64m",
    "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
)  # fmt: skip
CASES = {
    "session start (`true`)": ["true"],
    "`python3 -c pass`": ["python3", "-c", "pass"],
    "executor cell from cold (`print(1)`)": ["sh", "-c", "echo 'print(1)' | terminai-apts exec --json"],
}
INSIDE = """
import json, os, statistics, subprocess, time
def median(fn, n):
    times = []
    for _ in range(n):
        start = time.perf_counter(); fn(); times.append(time.perf_counter() - start)
    return statistics.median(times)
def fork():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
print(json.dumps({
    "python3 -c pass child (ms)": median(lambda: subprocess.run(["python3", "-c", "pass"]), 7) * 1e3,
    "os.stat (us)": median(lambda: os.stat("/"), 20000) * 1e6,
    "fork + waitpid (ms)": median(fork, 200) * 1e3,
}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    image = build_image(BuildOptions(output_dir=Path(tempfile.mkdtemp(prefix="bench-gvisor-")))).config_digest
    runtimes = [r for r in RUNTIMES if r in connect().runtimes()]
    times: dict[tuple[str, str], list[float]] = {(c, r): [] for c in CASES for r in runtimes}
    codes: dict[tuple[str, str], set[int]] = {(c, r): set() for c in CASES for r in runtimes}
    inside: dict[str, list[dict[str, float]]] = {r: [] for r in runtimes}
    for round_ in range(args.runs):
        order = runtimes if round_ % 2 == 0 else runtimes[::-1]
        for case, command in CASES.items():
            for runtime in order:
                start = time.perf_counter()
                done = subprocess.run(
                    ["docker", "run", "--rm", "--runtime", runtime, *HARDENED, image, *command],
                    capture_output=True,
                    check=False,
                )
                times[(case, runtime)].append(time.perf_counter() - start)
                codes[(case, runtime)].add(done.returncode)
        for runtime in order:
            done = subprocess.run(
                ["docker", "run", "--rm", "--runtime", runtime, *HARDENED, image, "python3", "-c", INSIDE],
                capture_output=True,
                check=True,
            )
            inside[runtime].append(json.loads(done.stdout))
    print(f"{args.runs} rounds; load average {os.getloadavg()[0]:.1f} at the end")
    print("| measurement (median) | " + " | ".join(runtimes) + " |")
    print("|---" * (len(runtimes) + 1) + "|")
    for case in CASES:
        base = statistics.median(times[(case, "runc")])
        cells = []
        for runtime in runtimes:
            median = statistics.median(times[(case, runtime)])
            exits = ",".join(str(c) for c in sorted(codes[(case, runtime)]))
            cells.append(f"{median * 1e3:.0f} ms ({median / base:.2f}x, exit {exits})")
        print(f"| {case} | " + " | ".join(cells) + " |")
    for key in inside[runtimes[0]][0]:
        cells = [f"{statistics.median(row[key] for row in inside[r]):.2f}" for r in runtimes]
        print(f"| inside: {key} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
