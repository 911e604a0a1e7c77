"""The Python layer's runtime guard: CPU time of guard-heavy workloads under this tree's
guard against the guard of an earlier commit (``--baseline-ref``), in the same run.

Each side runs in its own process with the restricted globals and compile policy of its
tree (the baseline is extracted with ``git archive``); no child, no OS layer: only the
cost of the guard calls the compiled program makes. Rounds alternate between the two
sides; the figure is the minimum process CPU time over all repetitions.

With ``--corpus`` the agent-program corpus (``tests/corpus/programs``) runs too, against
its memory index, as one figure: the sum over its programs of each one's minimum.

Run: .venv/bin/python benchmarks/guard.py [--baseline-ref REV] [--rounds N] [--corpus]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = "packages/terminai-apts/src"

WORKER = r"""
import json, sys, time
from RestrictedPython.compile import compile_restricted
from terminai_apts.executor import policy
from terminai_apts.executor.python_layer import api_object, module_proxies, output, sandbox_globals
from terminai_apts.executor.python_layer.transform import SandboxTransformer
from terminai_apts.memory.api import open_memory
programs = json.loads(sys.argv[1])
db = sys.argv[3] if len(sys.argv) > 3 else None
real = open_memory(db) if db else None
proxies = module_proxies.build_proxies("high")
found = {}
total = 0.0
for name, code in programs.items():
    byte_code = compile_restricted(code, filename="<sandbox>", mode="exec", policy=SandboxTransformer)
    best = float("inf")
    for _ in range(int(sys.argv[2])):
        injected = {"thermal": api_object.wrap_api(policy.thermal_spec(db), real)} if db else {}
        scope = sandbox_globals.build_globals("high", proxies, output.OutputBuffer(1 << 20), injected)
        start = time.process_time()
        try:
            exec(byte_code, scope)
        except Exception:
            pass  # the same programs fail the same way on both sides
        best = min(best, time.process_time() - start)
    found[name] = best * 1000
    total += best * 1000
if db:
    found = {"corpus": total}
print(json.dumps(found))
"""

PROGRAMS = {
    "600k calls (f(i), list.append, dict.get)": (
        "def f(x):\n    return x + 1\nout = []\nd = {'k': 1}\n"
        "for i in range(200000):\n    out.append(f(i) + d.get('k'))\n"
    ),
    "400k attribute reads on an instance": (
        "class P:\n    def __init__(self):\n        self.v = 1\n"
        "p = P()\nt = 0\nfor i in range(400000):\n    t = t + p.v\n"
    ),
    "iterating 1M list items": "xs = list(range(1000000))\nt = 0\nfor x in xs:\n    t = t + x\n",
    "200k calls of a 3-parameter function": (
        "def f(a, b, c):\n    return a + b + c\nt = 0\nfor i in range(200000):\n    t = f(i, 1, 2)\n"
    ),
    "100k method calls with one argument": (
        "class P:\n    def add(self, x):\n        return x + 1\np = P()\nfor i in range(100000):\n    p.add(i)\n"
    ),
    "sorting 200k items by a lambda key": "xs = list(range(200000, 0, -1))\nys = sorted(xs, key=lambda v: v % 1000)\n",
    "word count over 50k lines": (
        "lines = ['a b c %d' % i for i in range(50000)]\nwords = {}\n"
        "for line in lines:\n    for w in line.split():\n        words[w] = words.get(w, 0) + 1\n"
    ),
}


def _baseline(ref: str, into: Path) -> Path:
    archive = subprocess.run(["git", "archive", ref, SRC], cwd=ROOT, capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / SRC


def _corpus() -> dict[str, str]:
    """The agent-program corpus (``tests/corpus/programs``), run against its memory index."""
    return {path.stem: path.read_text() for path in sorted((ROOT / "tests/corpus/programs").glob("*.py"))}


def _measure(src: Path | None, repeats: int, programs: dict[str, str], db: str | None = None) -> dict[str, float]:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    done = subprocess.run(
        [sys.executable, "-c", WORKER, json.dumps(programs), str(repeats), *([db] if db else [])],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    result: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--baseline-ref", default="2d2154e")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--corpus", action="store_true", help="also the agent-program corpus (sum of minimums)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        old_src = _baseline(args.baseline_ref, Path(tmp))
        db = None
        if args.corpus:
            sys.path.insert(0, str(ROOT))
            from tests.corpus import memory_fixture

            db = str(memory_fixture.build(Path(tmp)))
        best_new: dict[str, float] = {}
        best_old: dict[str, float] = {}
        for _ in range(args.rounds):
            for best, src in ((best_old, old_src), (best_new, None)):
                found = _measure(src, args.repeats, PROGRAMS)
                if db is not None:
                    found.update(_measure(src, args.repeats, _corpus(), db))
                for name, ms in found.items():
                    best[name] = min(best.get(name, float("inf")), ms)
    print(f"| Workload (CPU ms, min) | this tree | `{args.baseline_ref}` | ratio |")
    print("|---|---|---|---|")
    for name, new in best_new.items():
        print(f"| {name} | {new:.1f} | {best_old[name]:.1f} | {new / best_old[name]:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
