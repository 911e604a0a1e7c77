"""Memory journal benchmark: append latency as the chain grows, and the cost of integrity checks.

Appends: the warm decision chain is grown to each size (entries written directly, chained
as the API chains them, so reaching 100,000 takes seconds, not the half hour 100,000 API
calls with their fsyncs would), then ``--appends`` decisions are written through
``MemoryJournal.write_decision`` at that size: p50/p95 per size and the ratio of each p50
to the first size's. ``old head read`` is what the previous append did before each write
(parse the whole warm chain to find its head), timed on the same file.

Checks: a journal with one sealed quarter shard of ``--shard-records`` records; the time
to open it through the journal directory (first open in a process hashes the shard;
later opens reuse the digest cached by inode, size, mtime and ctime), against an open
with the check switched off, an open after a file was changed outside the journal's
writers (the whole of verify runs first), and ``memory verify`` on the whole journal (chain walk of
the largest size plus every sealed file hashed). Usage:
``python benchmarks/journal.py --sizes 1,1000,10000,100000 --appends 60 --shard-records 100000``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from terminai_apts.memory import checkpoint, checks, seals, store
from terminai_apts.memory.api import ThermalMemory
from terminai_apts.memory.journal import CHAIN, DECISIONS, MemoryJournal
from terminai_apts.memory.journal_files import read_jsonl
from terminai_apts.memory.records import NewMemory


def _grow(j: MemoryJournal, target: int) -> None:
    """Extend the warm decision chain to ``target`` entries (bulk: no fsync per entry)."""
    path = j.root / DECISIONS
    good, _bad = read_jsonl(path, j.root)
    have = len(good)
    prev = str(good[-1].data["hash"]) if good else "0" * 64
    lines = []
    for i in range(have, target):
        body = {
            "ts": f"2025-{1 + i % 12:02d}-{1 + i % 28:02d}T10:00:00.000000Z",
            "source": "agent",
            "kind": "decision",
            "decision": f"decision {i} about PROJ-{i % 5000}: route traffic through the canary first",
            "rationale": "the error budget is spent; a slower rollout costs a day",
            "outcome": "accepted",
            "decision_maker": "agent",
            "human_approval": i % 3 == 0,
            "tags": ["rollout"],
        }
        entry = CHAIN.seal(body, prev)
        lines.append(json.dumps(entry, sort_keys=True) + "\n")
        prev = str(entry["hash"])
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fh.writelines(lines)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def appends(root: Path, sizes: list[int], count: int) -> None:
    """Append p50/p95 per chain size, each against a bare ``write`` + ``fsync`` of one line (the floor).

    The two alternate, so both see the same disk and the same load: the ratio is what the
    journal adds to the one durable write an append cannot do without.
    """
    j = MemoryJournal(root)
    print(
        f"{'chain entries':>14} {'p50 ms':>8} {'p95 ms':>8} {'x first p50':>12} {'old head read ms':>17}"
        f" {'bare fsync p50':>15} {'x bare':>7}"
    )
    first = 0.0
    floor = os.open(root.parent / "bare-fsync.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        for size in sizes:
            _grow(j, size)
            start = time.perf_counter()
            read_jsonl(root / DECISIONS, root)  # the whole-chain read each append used to do
            old = (time.perf_counter() - start) * 1000
            times, bare = [], []
            for i in range(count):
                start = time.perf_counter()
                j.write_decision(f"measured {size}-{i}", "r", "o", "agent", True)
                times.append((time.perf_counter() - start) * 1000)
                line = json.dumps({"decision": f"measured {size}-{i}", "n": i}).encode() + b"\n"
                start = time.perf_counter()
                os.write(floor, line)
                os.fsync(floor)
                bare.append((time.perf_counter() - start) * 1000)
            p50, b50 = statistics.median(times), statistics.median(bare)
            first = first or p50
            print(
                f"{size:>14,} {p50:>8.2f} {_pct(times, 0.95):>8.2f} {p50 / first:>12.2f} {old:>17.1f}"
                f" {b50:>15.2f} {p50 / b50:>7.2f}"
            )
    finally:
        os.close(floor)


def _records(n: int) -> list[NewMemory]:
    return [
        NewMemory(
            uid=f"q{i}",
            date=f"2024-{1 + i % 3:02d}-{1 + i % 28:02d}T{i % 24:02d}:00:00Z",
            recorded_at="2024-04-01T00:00:00Z",
            title=f"decision {i} about PROJ-{i % 5000}",
            content=f"route traffic through the canary first; record {i} of the quarter, error budget spent",
            summary="accepted",
            tags=("rollout",),
            kind="decision",
            tier="cold",
            origin=f"cold/2024-Q1/decisions.jsonl:{i + 1}",
        )
        for i in range(n)
    ]


def opens(root: Path, shard_records: int, reps: int) -> None:
    j = MemoryJournal(root)
    shard = root / "cold/2024-Q1/shard.sqlite"
    shard.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    store.build(shard, _records(shard_records), first_id=store.shard_base("2024-Q1") + 1, meta=seals.SEALED_META)
    build = time.perf_counter() - start
    shard.chmod(0o444)
    with j.lock():
        j.seal("cold/2024-Q1/shard.sqlite")
    (root / "cold/2024-Q1/decisions.jsonl").touch()
    (root / "cold/2024-Q1/posture_history.jsonl").touch()
    j.inspect_and_record()  # what `memory verify` records: the files as checked (the chain was grown directly)
    size_mb = shard.stat().st_size / 1e6
    print(f"\nsealed shard: {shard_records:,} records, {size_mb:.1f} MB (built in {build:.1f} s)")

    def open_once() -> float:
        start = time.perf_counter()
        with ThermalMemory(root, immutable=True) as mem:
            mem.count("canary")
        return (time.perf_counter() - start) * 1000

    seals._DIGESTS.clear()
    cold = open_once()
    cached = [open_once() for _ in range(reps)]
    real = seals.is_journal
    seals.is_journal = lambda _base: False  # the check switched off: the baseline
    try:
        unchecked = [open_once() for _ in range(reps)]
    finally:
        seals.is_journal = real
    print(f"{'open + count (ms)':34} {'p50':>8} {'p95':>8}")
    print(f"{'first open in a process (hashes)':34} {cold:>8.1f} {'':>8}")
    print(f"{'later opens (digest cached)':34} {statistics.median(cached):>8.1f} {_pct(cached, 0.95):>8.1f}")
    print(f"{'check switched off':34} {statistics.median(unchecked):>8.1f} {_pct(unchecked, 0.95):>8.1f}")
    signed = _with_checkpoint(j, open_once, reps)
    print(f"{'with a checkpoint and its key':34} {statistics.median(signed):>8.1f} {_pct(signed, 0.95):>8.1f}")
    (root / DECISIONS).touch()  # changed outside the writers: every open verifies the journal whole
    changed = [open_once() for _ in range(3)]
    print(f"{'changed outside its writers':34} {statistics.median(changed):>8.1f} {max(changed):>8.1f}")
    seals._DIGESTS.clear()
    start = time.perf_counter()
    report = checks.inspect(root)
    verify = time.perf_counter() - start
    entries = len(read_jsonl(root / DECISIONS, root)[0])
    print(
        f"memory verify (fresh process state): {verify:.2f} s for {entries:,} chain entries and every sealed file"
        f" ({len(report.problems)} problems, {len(report.pending)} pending)"
    )


def _with_checkpoint(j: MemoryJournal, open_once: Callable[[], float], reps: int) -> list[float]:
    """Cached opens with an operator checkpoint configured (read and its HMAC checked each open).

    The key is configured before the checkpoint is written, as for a journal whose writers
    hold it: the checkpoint's verify then leaves a state record signed with it. (Readers holding a key
    trust no unsigned record, so under a key set only afterwards every open verifies the
    whole journal until a writer with the key has written.)"""
    outside = j.root.parent / "checkpoint"
    outside.mkdir(exist_ok=True)
    key = bytes(range(32))
    (outside / "key").write_bytes(key)
    os.environ[checkpoint.KEY_ENV] = str(outside / "key")
    try:
        j.checkpoint(outside / "journal.json", key)  # the first one: none configured yet to compare with
        os.environ[checkpoint.CHECKPOINT_ENV] = str(outside / "journal.json")
        return [open_once() for _ in range(reps)]
    finally:
        os.environ.pop(checkpoint.CHECKPOINT_ENV, None)
        del os.environ[checkpoint.KEY_ENV]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1,1000,10000,100000")
    parser.add_argument("--appends", type=int, default=60)
    parser.add_argument("--shard-records", type=int, default=100_000)
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="journalbench-") as tmp:
        root = Path(tmp) / "journal"
        appends(root, [int(s) for s in args.sizes.split(",")], args.appends)
        opens(root, args.shard_records, args.reps)


if __name__ == "__main__":
    main()
