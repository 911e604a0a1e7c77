"""What pinning a mount source inside rootless podman's namespaces adds to a launch.

Run as a non-root user who has run podman once (its pause process holds the namespaces):

    python benchmarks/mount_pin.py [--rounds 200]

Same run, same source folder: the unpinned path (hold, then walk again right before the
engine starts) against the pinned one (hold, then bind inside podman's namespaces), and
the clean-up after the session (removing the staging folder drops the bind there).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

from terminai_sandbox.launch import held_mounts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    rounds = parser.parse_args().rounds
    namespace = held_mounts.podman_namespace(os.environ)
    if os.geteuid() == 0 or namespace is None:
        print("run as a non-root user with a rootless podman pause process (run any podman command first)")
        return 2
    with tempfile.TemporaryDirectory(prefix="mount-pin-") as tmp:
        source, other = os.path.join(tmp, "d"), os.path.join(tmp, "work")
        os.mkdir(source)
        os.mkdir(other)
        timings: dict[str, list[float]] = {"unpinned": [], "pinned": [], "clean-up (pinned)": []}
        for _ in range(rounds):
            for label, chosen in (("unpinned", None), ("pinned", namespace)):
                staging = held_mounts.Staging("bench", cwd=other, namespace=chosen)
                start = time.perf_counter()
                staging.place(source, "/data/d", read_only=True)
                staging.pin()
                staging.confirm()
                timings[label].append((time.perf_counter() - start) * 1000)
                start = time.perf_counter()
                staging.close()
                if chosen is not None:
                    timings["clean-up (pinned)"].append((time.perf_counter() - start) * 1000)
    for label, values in timings.items():
        ordered = sorted(values)
        p90 = ordered[int(len(ordered) * 0.9)]
        print(f"{label:>18}: median {statistics.median(ordered):7.2f} ms  p90 {p90:7.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
