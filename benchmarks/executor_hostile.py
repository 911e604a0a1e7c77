"""The host's own work on hostile programs: CPU seconds of one `terminai-apts exec
--json` process (and what it reaped: its zygote and the run) per generated hostile
program, this tree against an earlier commit (``--baseline-ref``), in the same run.

Each program is near the 200 KB source limit (giant f-strings, deep nesting of
expressions, many names, long strings of operators), plus the output a program of
control characters makes the CLI print under ``--max-output 65536``. Each figure is the
minimum over ``--rounds`` rounds that alternate between the two trees; the ratio column
divides by ``print(1)`` run the same way by the same tree (the start-up a hostile
program cannot avoid), and the last column this tree against the baseline.

Run: .venv/bin/python benchmarks/executor_hostile.py [--baseline-ref REV] [--rounds N]
"""

from __future__ import annotations

import argparse
import io
import os
import resource
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = "packages/terminai-apts/src"
LIMIT = 200_000
TIMEOUT = "10"


def _fstring(n: int) -> str:
    return 'a = 1\nx = f"' + "{a}" * n + '"\n'


GENERATORS: dict[str, Callable[[int], str]] = {
    "one f-string, many fields": _fstring,
    "f-strings of 20 fields each": lambda n: "a = 1\n" + 'x = f"{a}{a}{a}{a}{a}{a}{a}{a}{a}{a}"\n' * n,
    "unary minus chain": lambda n: "x = " + "-" * n + "1\n",
    "1 + 1 + ...": lambda n: "x = " + "1 + " * n + "1\n",
    "1 < 1 < ...": lambda n: "x = " + "1 < " * n + "1\n",
    "1 and 1 and ... (valid)": lambda n: "x = " + "1 and " * n + "1\n",
    "many names in a list": lambda n: "a = 1\nx = [" + ", ".join(f"a{i}" for i in range(n)) + "]\n",
    "many assignments": lambda n: "".join(f"v{i} = {i}\n" for i in range(n)),
    "attribute chain": lambda n: "x = a" + ".b" * n + "\n",
}


def _largest(generator: Callable[[int], str]) -> str:
    low, high = 1, LIMIT
    while low < high:
        middle = (low + high + 1) // 2
        if len(generator(middle).encode()) <= LIMIT:
            low = middle
        else:
            high = middle - 1
    return generator(low)


def _baseline(ref: str, into: Path) -> Path:
    archive = subprocess.run(["git", "archive", ref, SRC], cwd=ROOT, capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / SRC


def _run(src: Path | None, code: str, *extra: str) -> tuple[float, int]:
    """CPU seconds of one CLI process (with what it reaped) and the bytes it printed."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(src if src is not None else ROOT / SRC)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, "-m", "terminai_apts.cli", "exec", "--json", "--timeout", TIMEOUT, *extra],
        input=code.encode(),
        capture_output=True,
        env=env,
        check=False,
        timeout=120,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), len(done.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--baseline-ref", default="main")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    programs = {"print(1)": "print(1)\n", **{name: _largest(gen) for name, gen in GENERATORS.items()}}
    control = "print(chr(1) * 70000, end='')\n"
    with tempfile.TemporaryDirectory() as tmp:
        old_src = _baseline(args.baseline_ref, Path(tmp))
        best: dict[tuple[str, str], float] = {}
        printed: dict[str, int] = {}
        for _ in range(args.rounds):
            for side, src in (("old", old_src), ("new", None)):
                for name, code in programs.items():
                    cpu, _ = _run(src, code)
                    best[side, name] = min(best.get((side, name), float("inf")), cpu)
                _, printed[side] = _run(src, control, "--max-output", "65536")
    print(
        f"| Program (near {LIMIT:,} bytes) | `{args.baseline_ref}` CPU s | this tree CPU s"
        " | this tree / its print(1) | this tree / baseline |"
    )
    print("|---|---|---|---|---|")
    for name in programs:
        old, new = best["old", name], best["new", name]
        print(f"| {name} | {old:.3f} | {new:.3f} | {new / best['new', 'print(1)']:.2f}x | {new / old:.2f}x |")
    print()
    print(
        f"`print(chr(1) * 70000)` under `--max-output 65536`: {printed['old']:,} bytes printed by"
        f" `{args.baseline_ref}`, {printed['new']:,} by this tree"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
