"""Restricted executor benchmark (figures measured in one run, printed as ratios).

1. Warm per-run latency of `print(1)` (p50/p95) against spawning a fresh `python3 -c`, and
   against the executor of an earlier commit (`--baseline-ref`, by default the last one
   before the per-run OS boundary), measured interleaved in the same run; likewise a run
   that opens the memory index and queries it (`thermal.search`), whose setup is where
   the run's database access is decided.
2. CPU-bound workloads under the executor against plain CPython `exec` (ratio).
3. The same workloads under smolagents' LocalPythonExecutor, installed only in a separate
   benchmark venv (`.bench/venv`, created on first use; never in the dev lock).

4. Against the baseline in the same run (the paths agents use): warm `print(1)` p50, a
   20-cell session's per-cell latency, the CPU an idle zygote uses over 10 s (clock ticks,
   both measured side by side), and the one-shot path (`terminai-apts exec` in a new
   process, started as pip's console script starts each tree's own entry point; with the
   CPU of that process) against `python -c 'print(1)'` of the bare interpreter (resolved, not
   a `python3` found on PATH: a version manager's shim there costs ~10x the interpreter and
   flatters the ratio) and against that interpreter inside an OS sandbox (bubblewrap with
   every namespace unshared: what any sandboxed one-shot pays), when `bwrap` is installed.

Run: .venv/bin/python benchmarks/executor.py [--runs N] [--no-smolagents] [--baseline-ref REF]
     .venv/bin/python benchmarks/executor.py --only control [--control-ref REF]  (item 4 alone,
     against the previous commit unless REF is given)
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
from pathlib import Path

from terminai_apts.executor import SandboxConfig, execute
from terminai_apts.memory import store
from terminai_apts.memory.records import NewMemory

ROOT = Path(__file__).resolve().parent.parent
BENCH_VENV = ROOT / ".bench" / "venv"
# The last commit whose executor had no namespaces, Landlock or seccomp allowlist.
BASELINE_REF = "52b6727"
_LATENCY_SCRIPT = r"""
import json, sys, time
from terminai_apts.executor import SandboxConfig, execute, thermal_spec
cfg = SandboxConfig(timeout_seconds=10)
code, db = sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None
api = thermal_spec(db) if db else None
execute(code, cfg, api)
samples = []
for _ in range(int(sys.argv[1])):
    t = time.perf_counter()
    result = execute(code, cfg, api)
    assert result.success, result.error
    samples.append((time.perf_counter() - t) * 1000)
print(json.dumps(samples))
"""
_SESSION_SCRIPT = r"""
import json, sys, time
from terminai_apts.executor import ExecutorSession, SandboxConfig
samples = []
for _ in range(int(sys.argv[1])):
    with ExecutorSession(SandboxConfig(timeout_seconds=10)) as session:
        assert session.run("x = 0").success
        for _ in range(20):
            t = time.perf_counter()
            result = session.run("x = x + 1\nprint(x)")
            samples.append((time.perf_counter() - t) * 1000)
            assert result.success, result.error
print(json.dumps(samples))
"""
_IDLE_SCRIPT = r"""
import json, sys, time
from terminai_apts.executor import execute
try:
    from terminai_apts.executor.host import zygote_client
except ImportError:  # a baseline from before the executor's subpackages
    from terminai_apts.executor import zygote_client
assert execute("print(1)").success
pid = zygote_client.shared().proc.pid
def ticks():
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])
time.sleep(1.0)  # the end of that run settles (a sweep is due 50 ms after it)
before = ticks()
time.sleep(float(sys.argv[1]))
print(json.dumps(ticks() - before))
"""
# What pip's console-script wrapper runs (`re` included): the tree's own entry point
# (`[project.scripts]` of its pyproject.toml at that commit) is filled in.
_CLI = "import re\nimport sys\nfrom {module} import {function}\nsys.exit({function}())"
_APTS_PYPROJECT = "packages/terminai-apts/pyproject.toml"
MEMORY_QUERY = "print(thermal.search_results('rollout canary', limit=5).total)"
MEMORY_RECORDS = 5_000
SMOLAGENTS_PIN = "smolagents==1.23.0"

WORKLOADS: dict[str, str] = {
    "loop_sum": "total = 0\nfor i in range(300000):\n    total += i * i\nprint(total)",
    "comprehension": "xs = [i % 7 for i in range(200000)]\nprint(sum(xs))",
    "dict_count": (
        "counts = {}\nfor i in range(150000):\n    k = i % 97\n    counts[k] = counts.get(k, 0) + 1\nprint(len(counts))"
    ),
    "function_calls": ("def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\nprint(fib(20))"),
}

_SMOL_SCRIPT = r"""
import json, sys, time
from smolagents.local_python_executor import LocalPythonExecutor
workloads = json.loads(sys.stdin.read())
out = {}
for name, code in workloads.items():
    ex = LocalPythonExecutor(additional_authorized_imports=[])
    ex.send_tools({})
    best = None
    for _ in range(2):
        t = time.perf_counter()
        ex(code)
        d = time.perf_counter() - t
        best = d if best is None else min(best, d)
    out[name] = best
print(json.dumps(out))
"""


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def warm_latency(runs: int) -> tuple[float, float, float]:
    cfg = SandboxConfig(timeout_seconds=10)
    execute("print(1)", cfg)  # start the zygote
    samples = []
    for _ in range(runs):
        t = time.perf_counter()
        result = execute("print(1)", cfg)
        samples.append((time.perf_counter() - t) * 1000)
        assert result.success
    spawn = []
    for _ in range(max(5, runs // 5)):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "print(1)"], check=True, capture_output=True)
        spawn.append((time.perf_counter() - t) * 1000)
    return _pct(samples, 0.5), _pct(samples, 0.95), statistics.median(spawn)


def _latency_samples(source: Path, runs: int, code: str, db: Path | None) -> list[float]:
    env = {"PYTHONPATH": str(source), "PATH": "/usr/bin:/bin"}
    argv = [sys.executable, "-c", _LATENCY_SCRIPT, str(runs), code] + ([str(db)] if db else [])
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    samples: list[float] = json.loads(done.stdout.splitlines()[-1])
    return samples


def _baseline_source(ref: str, tmp: str) -> Path:
    """``ref``'s ``packages/terminai-apts/src``, extracted under ``tmp``."""
    archive = subprocess.run(
        ["git", "archive", ref, "packages/terminai-apts/src"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(tmp, filter="data")
    return Path(tmp) / "packages/terminai-apts/src"


NEW_SRC = ROOT / "packages/terminai-apts/src"


def against_baseline(
    ref: str, runs: int, rounds: int = 5, *, code: str = "print(1)", db: Path | None = None
) -> tuple[list[float], list[float]]:
    """Per-run latency of ``code`` under this tree's executor and ``ref``'s, in alternating rounds."""
    with tempfile.TemporaryDirectory(prefix="executor-baseline-") as tmp:
        old_src = _baseline_source(ref, tmp)
        new: list[float] = []
        old: list[float] = []
        for _ in range(rounds):
            new += _latency_samples(NEW_SRC, runs // rounds, code, db)
            old += _latency_samples(old_src, runs // rounds, code, db)
    return new, old


def _describe(ref: str) -> str:
    argv = ["git", "log", "-1", "--format=%h %s", ref]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
    return done.stdout.strip()[:72] or "unknown"


def _env(source: Path) -> dict[str, str]:
    return {"PYTHONPATH": str(source), "PATH": "/usr/bin:/bin"}


def session_cells(source: Path, sessions: int) -> list[float]:
    argv = [sys.executable, "-c", _SESSION_SCRIPT, str(sessions)]
    done = subprocess.run(argv, env=_env(source), capture_output=True, text=True, check=True)
    samples: list[float] = json.loads(done.stdout.splitlines()[-1])
    return samples


def idle_ticks(sources: list[Path], seconds: float) -> list[int]:
    """Clock ticks each source's idle zygote uses over ``seconds`` (measured side by side)."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _IDLE_SCRIPT, str(seconds)], env=_env(src), stdout=subprocess.PIPE, text=True
        )
        for src in sources
    ]
    return [int(json.loads(p.communicate()[0].splitlines()[-1])) for p in procs]


def console_script(ref: str | None) -> str:
    """The program pip's `terminai-apts` wrapper runs in ``ref``'s tree (None: this one)."""
    if ref is None:
        text = (ROOT / _APTS_PYPROJECT).read_text()
    else:
        text = subprocess.run(
            ["git", "show", f"{ref}:{_APTS_PYPROJECT}"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
    module, function = tomllib.loads(text)["project"]["scripts"]["terminai-apts"].split(":")
    return _CLI.format(module=module, function=function)


def one_shot(source: Path, script: str) -> tuple[float, float]:
    """One `terminai-apts exec --json` of `print(1)` in a new process, run as pip's
    console-script wrapper runs it (``script``, from ``console_script``): its wall time
    and the CPU time of the command's own process (ms; the zygote it starts is not its
    waited child, so not counted)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    argv = [sys.executable, "-c", script, "exec", "--json"]
    done = subprocess.run(argv, input="print(1)", env=_env(source), capture_output=True, text=True, check=False)
    elapsed = (time.perf_counter() - t) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    assert done.returncode == 0 and json.loads(done.stdout)["stdout"] == "1\n", done.stderr[-2000:]
    return elapsed, cpu


BARE_PYTHON = os.path.realpath(sys.executable)
BWRAP = shutil.which("bwrap")


def python_c(source: Path, sandboxed: bool = False) -> float:
    """A new bare `python -c 'print(1)'` (ms), inside bubblewrap when ``sandboxed``."""
    argv = [BARE_PYTHON, "-c", "print(1)"]
    if sandboxed and BWRAP:
        argv = [
            BWRAP,
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--unshare-all",
            "--die-with-parent",
            *argv,
        ]
    t = time.perf_counter()
    subprocess.run(argv, env=_env(source), capture_output=True, check=True)
    return (time.perf_counter() - t) * 1000


def control(ref: str, runs: int, idle_seconds: float) -> None:
    """Item 4 of the docstring: warm runs, sessions, idle cost and the one-shot path, against ``ref``."""
    print(f"-- against {ref} ({_describe(ref)}), load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="executor-baseline-") as tmp:
        old_src = _baseline_source(ref, tmp)
        new, old = [], []
        for _ in range(5):
            new += _latency_samples(NEW_SRC, runs // 5, "print(1)", None)
            old += _latency_samples(old_src, runs // 5, "print(1)", None)
        print(
            f"warm print(1), a fresh run each, interleaved: this tree p50 {_pct(new, 0.5):.2f} / p95 "
            f"{_pct(new, 0.95):.2f} ms; {ref} p50 {_pct(old, 0.5):.2f} / p95 {_pct(old, 0.95):.2f} ms "
            "(goal p50 <= 5 ms)"
        )
        new, old = [], []
        for _ in range(5):
            new += session_cells(NEW_SRC, 2)
            old += session_cells(old_src, 2)
        print(
            f"20-cell session, per cell: this tree p50 {_pct(new, 0.5):.2f} / p95 {_pct(new, 0.95):.2f} ms; "
            f"{ref} p50 {_pct(old, 0.5):.2f} / p95 {_pct(old, 0.95):.2f} ms (goal p50 <= 5 ms)"
        )
        ticks_new, ticks_old = idle_ticks([NEW_SRC, old_src], idle_seconds)
        print(f"idle zygote over {idle_seconds:g} s: this tree {ticks_new} ticks; {ref} {ticks_old} ticks (goal 0)")
        shots: dict[str, list[float]] = {"new": [], "old": [], "plain": [], "bwrap": []}
        cpu: dict[str, list[float]] = {"new": [], "old": []}
        new_script, old_script = console_script(None), console_script(ref)
        for _ in range(max(5, runs // 10)):
            for key, src, script in (("new", NEW_SRC, new_script), ("old", old_src, old_script)):
                wall, used = one_shot(src, script)
                shots[key].append(wall)
                cpu[key].append(used)
            shots["plain"].append(python_c(NEW_SRC))
            if BWRAP:
                shots["bwrap"].append(python_c(NEW_SRC, sandboxed=True))
        n, o, p = (statistics.median(shots[k]) for k in ("new", "old", "plain"))
        print(
            f"one-shot `terminai-apts exec` (print(1)), median: this tree {n:.1f} ms, {ref} {o:.1f} ms; "
            f"bare `{BARE_PYTHON} -c 'print(1)'` {p:.1f} ms (this tree {n / p:.2f}x, {ref} {o / p:.2f}x)"
        )
        if shots["bwrap"]:
            q = statistics.median(shots["bwrap"])
            print(
                f"  inside bubblewrap (all namespaces unshared) {q:.1f} ms (this tree {n / q:.2f}x, {ref} {o / q:.2f}x)"
            )
        else:
            print("  bubblewrap baseline not measured: install bubblewrap (apt-get install bubblewrap)")
        print(
            f"one-shot, CPU of the command's own process, median: this tree {statistics.median(cpu['new']):.1f} ms, "
            f"{ref} {statistics.median(cpu['old']):.1f} ms"
        )


def _memory_index(path: Path) -> Path:
    records = (
        NewMemory(
            uid=f"m{i}",
            date=f"2026-{i % 12 + 1:02d}-{i % 28 + 1:02d}",
            recorded_at="2026-11-01",
            title=f"{('rollout', 'incident', 'review')[i % 3]} {i}",
            content=f"{('canary deploy', 'postgres failover', 'ticket triage')[i % 3]} note {i}",
        )
        for i in range(MEMORY_RECORDS)
    )
    store.build(path, records)
    return path


def best_of(fn: object, reps: int = 3) -> float:
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - t)
    return min(times)


def plain(code: str) -> None:
    exec(compile(code, "<plain>", "exec"), {"print": lambda *a: None})


def sandboxed(code: str) -> None:
    result = execute(code, SandboxConfig(timeout_seconds=60))
    assert result.success, result.error


def smolagents_times() -> dict[str, float] | None:
    python = BENCH_VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(BENCH_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", SMOLAGENTS_PIN], check=True)
    done = subprocess.run(
        [str(python), "-c", _SMOL_SCRIPT],
        input=json.dumps(WORKLOADS),
        capture_output=True,
        text=True,
        check=False,
        timeout=1800,
    )
    if done.returncode != 0:
        print("smolagents run failed:", done.stderr[-2000:], file=sys.stderr)
        return None
    data: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--no-smolagents", action="store_true")
    parser.add_argument("--baseline-ref", default=BASELINE_REF, help="git ref of the executor to compare with")
    parser.add_argument("--only", choices=("control",), help="only item 4: warm runs, sessions, idle cost, one-shot")
    parser.add_argument("--control-ref", default="HEAD~1", help="git ref item 4 compares with (the previous commit)")
    parser.add_argument("--idle-seconds", type=float, default=10.0)
    args = parser.parse_args()
    if args.only == "control":
        control(args.control_ref, args.runs, args.idle_seconds)
        return 0

    p50, p95, spawn = warm_latency(args.runs)
    print(f"warm print(1): p50 {p50:.2f} ms  p95 {p95:.2f} ms  (goal p50 <= 5 ms)")
    print(f"fresh `python -c`: median {spawn:.2f} ms  -> executor is {spawn / p50:.1f}x faster")
    new, old = against_baseline(args.baseline_ref, args.runs)
    n50, n95, o50, o95 = _pct(new, 0.5), _pct(new, 0.95), _pct(old, 0.5), _pct(old, 0.95)
    print(
        f"same run, interleaved: this tree p50 {n50:.2f} / p95 {n95:.2f} ms; {args.baseline_ref} p50 {o50:.2f} / "
        f"p95 {o95:.2f} ms -> the OS boundary costs {n50 - o50:+.2f} ms at p50 ({n50 / o50:.2f}x)"
    )
    with tempfile.TemporaryDirectory(prefix="executor-memory-") as tmp:
        db = _memory_index(Path(tmp) / "memory.db")
        new, old = against_baseline(args.baseline_ref, args.runs, code=MEMORY_QUERY, db=db)
    n50, n95, o50, o95 = _pct(new, 0.5), _pct(new, 0.95), _pct(old, 0.5), _pct(old, 0.95)
    print(
        f"memory query run ({MEMORY_RECORDS} records), interleaved: this tree p50 {n50:.2f} / p95 {n95:.2f} ms; "
        f"{args.baseline_ref} p50 {o50:.2f} / p95 {o95:.2f} ms ({n50 - o50:+.2f} ms at p50, {n50 / o50:.2f}x)"
    )

    control(args.control_ref, args.runs, args.idle_seconds)

    smol = None if args.no_smolagents else smolagents_times()
    print(f"{'workload':16} {'cpython s':>10} {'executor s':>11} {'ratio':>6} {'smolagents s':>13} {'speedup':>8}")
    for name, code in WORKLOADS.items():
        base = best_of(lambda c=code: plain(c))
        ours = best_of(lambda c=code: sandboxed(c))
        line = f"{name:16} {base:10.4f} {ours:11.4f} {ours / base:6.2f}"
        if smol and name in smol:
            line += f" {smol[name]:13.4f} {smol[name] / ours:7.1f}x"
        print(line)
    print("ratio goal: <= 3x plain CPython (includes the per-run fork and IPC); speedup goal: >= 25x vs smolagents")
    return 0


if __name__ == "__main__":
    sys.exit(main())
