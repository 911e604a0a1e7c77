#!/usr/bin/env python3
"""Time the cleanup planner on a large generated downloads tree.

Prints files/s and peak memory of `cleanup_downloads` against a same-run baseline: a bare
`os.walk` + `lstat` of the same tree (the least any planner must do). Each measurement
runs in a fresh child process so peak RSS belongs to that measurement alone.

    python benchmarks/cleanup.py [--files 100000] [--dupes 0.05]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NOW = "2026-11-21T12:00:00+00:00"

_CHILD = r"""
import json, os, resource, sys, time
from datetime import datetime
root, mode = sys.argv[1], sys.argv[2]
start = time.perf_counter()
if mode == "baseline":
    count = 0
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames + dirnames:
            os.lstat(os.path.join(dirpath, name))
            count += 1
    entries = count
else:
    from terminai_apts.action.cleanup import cleanup_downloads
    plan = cleanup_downloads(root, scan_limit=10**7, now=datetime.fromisoformat(sys.argv[3]))
    entries = len(plan.entries)
    plan.to_json()
elapsed = time.perf_counter() - start
peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": elapsed, "entries": entries, "peak_mib": peak_kib / 1024}))
"""


def make_tree(root: Path, files: int, dupes: float) -> None:
    rng = random.Random(1234)
    now = 1795780800  # 2026-11-21T12:00:00Z
    for index in range(files):
        folder = root / f"d{index % 200:03}" / f"s{index % 7}"
        if index < 1400:
            folder.mkdir(parents=True, exist_ok=True)
        content = (
            b"dup-content-%d" % (index % 50) if rng.random() < dupes else b"file-%d-%d" % (index, rng.random() * 1e9)
        )
        path = folder / f"file{index:06}.{rng.choice(['pdf', 'jpg', 'zip', 'iso', 'txt', 'part'])}"
        path.write_bytes(content)
        age = rng.randint(0, 800) * 86400 + rng.randint(0, 86400)
        os.utime(path, (now - age, now - age))


def measure(root: Path, mode: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(root), mode, NOW], capture_output=True, text=True, check=True
    )
    result: dict[str, float] = json.loads(out.stdout)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--dupes", type=float, default=0.05, help="share of files that are duplicates")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tapts-bench-") as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        make_tree(root, args.files, args.dupes)
        print(f"generated {args.files} files in {time.perf_counter() - started:.1f} s")
        measure(root, "baseline")  # warm the dentry and inode caches for both runs
        base = measure(root, "baseline")
        plan = measure(root, "planner")
    base_rate = base["entries"] / base["seconds"]
    plan_rate = plan["entries"] / plan["seconds"]
    print(
        f"baseline os.walk+lstat : {base['seconds']:.2f} s  {base_rate:,.0f} files/s  peak {base['peak_mib']:.0f} MiB"
    )
    print(
        f"cleanup_downloads      : {plan['seconds']:.2f} s  {plan_rate:,.0f} files/s  peak {plan['peak_mib']:.0f} MiB"
    )
    print(
        f"ratio planner/baseline : {plan['seconds'] / base['seconds']:.2f}x time, "
        f"{plan['peak_mib'] / base['peak_mib']:.2f}x peak memory"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
