"""Memory API benchmark: ThermalMemory calls against the seed's ``LIKE '%q%'`` scan.

Generates a synthetic archive per size in the seed's schema (realistic titles, prose,
tags, sources, dates over three years), imports it as a user does (``import_archive``)
and builds the index (time and size), then times each call and the seed's own ``search``
statement over the archive, in the same run; the seed calls must answer the baseline's
rows (``same rows``). Usage:
``python benchmarks/memory.py --sizes 6700,100000 [--queries 40] [--tiered]``; ``--tiered``
also times the same calls over per-quarter sealed shards plus a live index (a journal directory).
"""

from __future__ import annotations

import argparse
import itertools
import random
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from terminai_apts.memory import store
from terminai_apts.memory.api import ThermalMemory
from terminai_apts.memory.cli import import_archive
from terminai_apts.memory.records import NewMemory
from terminai_apts.memory.tiers import LIVE_INDEX

# English function words head the Zipf ranking; domain words sit at ranks spread
# geometrically from 20 to 5,000, so queries span document frequencies from ~30%
# down to ~0.1% (the df bands of the research method).
FUNCTION_WORDS = (
    "the",
    "a",
    "of",
    "to",
    "and",
    "in",
    "for",
    "with",
    "on",
    "we",
    "they",
    "it",
    "was",
    "is",
    "be",
    "not",
)
DOMAIN_WORDS = (
    "deploy",
    "postgres",
    "migration",
    "timeout",
    "cache",
    "secret",
    "rotation",
    "incident",
    "review",
    "latency",
    "budget",
    "sandbox",
    "image",
    "signature",
    "registry",
    "rollback",
    "schema",
    "index",
    "query",
    "agent",
    "memory",
    "decision",
    "approval",
    "cleanup",
    "downloads",
    "network",
    "policy",
    "quota",
    "container",
    "kernel",
    "build",
    "release",
    "contract",
    "journal",
    "archive",
    "backup",
    "restore",
    "failed",
    "succeeded",
    "slow",
    "fast",
)
TAGS = ("infra", "db", "incident", "decision", "security", "feedback", "release", "perf")
SOURCES = ("planner", "ops", "support", "agent", "lead")
QUERIES = (
    "deploy failed",
    "postgres migration",
    "secret rotation",
    "PROJ-1234",
    "latency budget",
    "the",
    "rollback release",
    "v2.1",
    "cache timeout",
    "signature registry",
    "deploy",
    "incident",
    "kernel",
    "restore",
    "zzyzx",
)


def _vocabulary(rnd: random.Random, size: int = 20_000) -> list[str]:
    syll = ["ka", "lo", "mi", "tre", "son", "vel", "dra", "pu", "ne", "zor", "fi", "gan", "rho", "ex", "ul"]
    made = sorted(
        {"".join(rnd.choice(syll) for _ in range(rnd.randint(2, 4))) for _ in range(size)} - set(DOMAIN_WORDS)
    )
    vocab = [*FUNCTION_WORDS, *made]
    last = len(DOMAIN_WORDS) - 1
    for i, word in enumerate(DOMAIN_WORDS):
        vocab.insert(int(20 * 250 ** (i / last)), word)
    return vocab


def synth(n: int, seed: int = 7) -> list[NewMemory]:
    rnd = random.Random(seed)
    vocab = _vocabulary(rnd)
    # Zipf-like word frequencies: a few very common words, a long tail of rare ones.
    weights = [1.0 / (rank + 1) for rank in range(len(vocab))]
    cum = list(itertools.accumulate(weights))
    start = datetime(2023, 1, 1, tzinfo=UTC)
    out = []
    for i in range(n):
        when = (start + timedelta(seconds=rnd.randrange(3 * 365 * 86400))).strftime("%Y-%m-%dT%H:%M:%SZ")
        body = " ".join(rnd.choices(vocab, cum_weights=cum, k=rnd.randint(30, 120)))
        if rnd.random() < 0.01:
            body += f" PROJ-{rnd.randint(1000, 9999)} timeout after {rnd.randint(10000, 99999)}ms"
        title = " ".join(rnd.choices(vocab, cum_weights=cum, k=rnd.randint(3, 8)))
        out.append(
            NewMemory(
                uid=f"s{i}",
                date=when,
                recorded_at=when,
                title=title,
                content=body,
                summary=body[:80],
                tags=tuple(rnd.sample(TAGS, rnd.randint(1, 3))),
                source=rnd.choice(SOURCES),
                confidence=round(rnd.random(), 2),
                kind="note",
                tier="archive",
                origin=f"synth:{i}",
            )
        )
    return out


def seed_db(path: Path, recs: list[NewMemory]) -> None:
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE memories(id TEXT PRIMARY KEY, date TEXT, title TEXT, content TEXT, summary TEXT,"
        " tags TEXT, source TEXT, confidence REAL)"
    )
    conn.executemany(
        "INSERT INTO memories VALUES (?,?,?,?,?,?,?,?)",
        (
            (
                f"m{i}",
                r.date.replace("T", " ").removesuffix("Z"),
                r.title,
                r.content,
                r.summary,
                ",".join(r.tags),
                r.source,
                r.confidence,
            )
            for i, r in enumerate(recs, 1)
        ),
    )
    conn.commit()
    conn.close()


def timed(
    fn: Callable[[str], object], queries: list[str], clock: Callable[[], float] = time.perf_counter
) -> tuple[float, float, float]:
    samples = []
    for qtext in queries:
        t = clock()
        fn(qtext)
        samples.append((clock() - t) * 1000)
    samples.sort()
    return statistics.median(samples), samples[max(0, int(len(samples) * 0.95) - 1)], samples[-1]


def run(n: int, reps: int, workdir: Path, *, tiered: bool) -> None:
    recs = synth(n)
    db, seed = workdir / f"mem{n}.db", workdir / f"seed{n}.db"
    seed_db(seed, recs)
    t = time.perf_counter()
    steps: list[tuple[str, float]] = []
    store.build(db, import_archive(seed), progress=lambda name, secs: steps.append((name, secs)))
    build_s = time.perf_counter() - t
    longest = max(steps, key=lambda step: step[1])
    raw = sum(len(r.title) + len(r.content) + len(r.summary) for r in recs)
    print(
        f"\n## {n:,} records: build {build_s:.1f} s (longest step: {longest[0]} {longest[1]:.1f} s), "
        f"index {db.stat().st_size / 1e6:.1f} MB ({db.stat().st_size / raw:.1f}x raw text)"
    )
    queries = [QUERIES[i % len(QUERIES)] for i in range(reps)]
    like = sqlite3.connect(f"file:{seed}?mode=ro", uri=True)

    def seed_search(qtext: str) -> list[object]:
        """The seed's ``search`` statement (its SQL, as written), default limit and offset."""
        p = f"%{qtext}%"
        sql = (
            "SELECT id, date, title, content, summary, tags, source, confidence FROM memories"
            " WHERE content LIKE ? OR title LIKE ? ORDER BY date DESC LIMIT ? OFFSET ?"
        )
        return [row[0] for row in like.execute(sql, (p, p, 20, 0))]

    base = timed(seed_search, queries)
    print(f"{'call':40} {'p50 ms':>9} {'p95 ms':>9} {'max ms':>9} {'x LIKE p50':>11}")
    print(f"{'seed LIKE scan (baseline)':40} {base[0]:9.2f} {base[1]:9.2f} {base[2]:9.2f} {1.0:11.1f}")
    with ThermalMemory(db) as mem:
        same = all([m.id for m in mem.search(q)] == seed_search(q) for q in sorted(set(queries)))
        print(f"same rows as the seed's statement, every query: {same}")
        _slowest(mem, sorted(set(queries)), seed_search)
        # CPU time of the calling thread: on a shared machine a query preempted once gains a
        # whole time slice of wall time, which then decides a p95 of 40 samples.
        ours, theirs = timed(mem.search, queries, time.thread_time), timed(seed_search, queries, time.thread_time)
        print(
            f"CPU ms, search (seed) p50 / p95 {ours[0]:.2f} / {ours[1]:.2f}, "
            f"seed LIKE scan {theirs[0]:.2f} / {theirs[1]:.2f} "
            f"(x p50 {theirs[0] / ours[0]:.1f}, x p95 {theirs[1] / ours[1]:.1f})"
        )
        _table(mem, n, queries, base[0])
    if tiered:
        _tiered(recs, n, queries, base[0], workdir)
    like.close()


def _slowest(mem: ThermalMemory, distinct: list[str], seed_search: Callable[[str], object]) -> None:
    """Each query's best of three, ours and the baseline's: which phrases make the p95."""
    best = {q: (timed(mem.search, [q] * 3)[0], timed(seed_search, [q] * 3)[0]) for q in distinct}
    worst = sorted(best.items(), key=lambda item: -item[1][0])[:4]
    shown = ", ".join(f"{q!r} {a:.2f} / {b:.2f}" for q, (a, b) in worst)
    print(f"slowest seed searches (median of 3, ours / LIKE ms): {shown}")


def _table(mem: ThermalMemory, n: int, queries: list[str], baseline_p50: float) -> None:
    some_id = mem.filter_results(order="oldest", limit=1).ids[0]
    calls: dict[str, Callable[[str], object]] = {
        "search (seed)": mem.search,
        "count(query) (seed)": mem.count,
        "grep 'timeout.*ms' (seed)": lambda _qt: mem.grep("timeout.*ms"),
        "filter(source, min_confidence) (seed)": lambda _qt: mem.filter(source="slack", min_confidence=0.9),
        "get(id) (seed)": lambda _qt: mem.get(some_id),
        "search_results (bm25 top 20)": lambda qt: mem.search_results(qt, order="relevance"),
        "search_results since 90d window": lambda qt: mem.search_results(qt, since="2025-10-01"),
        "count_results(query)": mem.count_results,
        "find(substring)": mem.find,
        "grep_results 'timeout after \\d+ms'": lambda _qt: mem.grep_results(r"timeout after \d+ms"),
        "grep_results no literal '\\d{5}ms'": lambda _qt: mem.grep_results(r"\d{5}ms"),
        "filter_results(tags, since)": lambda _qt: mem.filter_results(tags=["incident"], since="2025-01-01"),
    }
    for name, fn in calls.items():
        reps_here = queries if "grep" not in name else queries[: max(5, len(queries) // 4)]
        p50, p95, mx = timed(fn, reps_here)
        print(f"{name:40} {p50:9.2f} {p95:9.2f} {mx:9.2f} {baseline_p50 / p50 if p50 else 0:11.1f}")


def _tiered(recs: list[NewMemory], n: int, queries: list[str], baseline_p50: float, workdir: Path) -> None:
    """The same calls over quarter shards plus a live index, as a compacted journal holds them."""
    root = workdir / f"tiered{n}"
    quarters: dict[str, list[NewMemory]] = {}
    for rec in recs:
        quarters.setdefault(f"{rec.date[:4]}-Q{(int(rec.date[5:7]) - 1) // 3 + 1}", []).append(rec)
    *sealed, live = sorted(quarters)
    longest = ("", 0.0)
    t = time.perf_counter()
    for quarter in sealed:
        shard = root / "cold" / quarter / "shard.sqlite"
        shard.parent.mkdir(parents=True)
        s = time.perf_counter()
        store.build(shard, quarters[quarter], first_id=store.shard_base(quarter) + 1)
        longest = max(longest, (quarter, time.perf_counter() - s), key=lambda step: step[1])
    store.build(root / LIVE_INDEX, quarters[live])
    print(
        f"\n### {n:,} records as {len(sealed)} sealed quarter shards + live index: build "
        f"{time.perf_counter() - t:.1f} s (longest shard: {longest[0]} {longest[1]:.1f} s)"
    )
    print(f"{'call (journal directory)':40} {'p50 ms':>9} {'p95 ms':>9} {'max ms':>9} {'x LIKE p50':>11}")
    with ThermalMemory(root) as mem:
        _table(mem, n, queries, baseline_p50)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="6700,100000,1000000")
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--tiered", action="store_true", help="also time quarter shards + a live index")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="membench-") as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            run(size, args.queries, Path(tmp), tiered=args.tiered)


if __name__ == "__main__":
    main()
