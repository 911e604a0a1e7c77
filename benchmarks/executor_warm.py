"""Warm runs, latency and CPU: this tree's executor against another commit's, same run.

Each side runs `execute("print(1)")` in a fresh run per call, in a new host process
(its own zygote), interleaved round by round. Besides the latency (p50/p95) it reports
the CPU one run costs across every process involved: the host's own (``RUSAGE_SELF``) and
the zygote's with everything it forked and reaped (utime + stime + cutime + cstime from
``/proc/PID/stat``), divided by the number of runs. On a shared machine the latency
follows the load, the CPU per run much less: compare the ratios of one run.

Two cadences: back to back (each call right after the previous one: the zygote prepares
the next run while this one runs, so a run's CPU decides the pace on a busy machine) and
with a pause after each call (``--gap``: a prepared run always waits, so the latency is
the caller's path alone).

Run: .venv/bin/python benchmarks/executor_warm.py [--ref REF] [--runs N] [--rounds R] [--gap S]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from executor import NEW_SRC, _baseline_source, _pct  # the other executor benchmark's helpers

_SCRIPT = r"""
import json, os, resource, sys, time
from terminai_apts.executor import SandboxConfig, execute
try:
    from terminai_apts.executor.host import zygote_client
except ImportError:  # a tree from before the executor's subpackages
    from terminai_apts.executor import zygote_client
runs, gap = int(sys.argv[1]), float(sys.argv[2])
cfg = SandboxConfig(timeout_seconds=10)
for _ in range(3):
    assert execute("print(1)", cfg).success
time.sleep(0.3)
pid = zygote_client.shared().proc.pid
def tree_ticks():
    with open(f"/proc/{pid}/stat") as fh:
        return sum(int(f) for f in fh.read().rsplit(")", 1)[1].split()[11:15])
def own():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
ticks, mine, samples = tree_ticks(), own(), []
for _ in range(runs):
    started = time.perf_counter()
    result = execute("print(1)", cfg)
    samples.append((time.perf_counter() - started) * 1000)
    assert result.success and result.stdout == "1\n", result
    if gap:
        time.sleep(gap)
mine = own() - mine
time.sleep(0.3)  # the last runs are reaped (the zygote's cutime counts them then)
tree = (tree_ticks() - ticks) / os.sysconf("SC_CLK_TCK")
print(json.dumps({"samples": samples, "cpu_ms": (mine + tree) * 1000 / runs}))
"""


def _measure(source: Path, runs: int, gap: float) -> tuple[list[float], float]:
    env = {"PYTHONPATH": str(source), "PATH": "/usr/bin:/bin"}
    argv = [sys.executable, "-c", _SCRIPT, str(runs), str(gap)]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    data = json.loads(done.stdout.splitlines()[-1])
    return list(data["samples"]), float(data["cpu_ms"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ref", default="HEAD~1", help="the commit to compare with (default: the previous one)")
    parser.add_argument("--runs", type=int, default=150, help="runs per side and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--gap", type=float, default=0.02, help="pause after each call in the paced cadence (s)")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {args.rounds} x {args.runs} runs a side")
    with tempfile.TemporaryDirectory(prefix="executor-warm-") as tmp:
        old_src = _baseline_source(args.ref, tmp)
        for label, gap in (("back to back", 0.0), (f"{args.gap * 1000:g} ms apart", args.gap)):
            lat: dict[str, list[float]] = {"new": [], "old": []}
            cpu: dict[str, list[float]] = {"new": [], "old": []}
            for _ in range(args.rounds):
                for side, source in (("new", NEW_SRC), ("old", old_src)):
                    samples, cpu_ms = _measure(source, args.runs, gap)
                    lat[side] += samples
                    cpu[side].append(cpu_ms)
            n50, o50 = _pct(lat["new"], 0.5), _pct(lat["old"], 0.5)
            n_cpu, o_cpu = statistics.median(cpu["new"]), statistics.median(cpu["old"])
            print(
                f"{label}: p50 {n50:.2f} / p95 {_pct(lat['new'], 0.95):.2f} ms against {args.ref} "
                f"{o50:.2f} / {_pct(lat['old'], 0.95):.2f} ms ({n50 / o50:.2f}x); CPU per run, all processes: "
                f"{n_cpu:.2f} against {o_cpu:.2f} ms ({n_cpu / o_cpu:.2f}x)"
            )
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
