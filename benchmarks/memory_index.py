"""The memory index on real text, in one run against the seed's own scan.

Two corpora: every entry of the Debian changelogs on this machine
(``/usr/share/doc/*/changelog*.gz``: Debian-format entries, and dated entries of GNU-style
upstream ChangeLogs) and a generated one (``--generated``, 200,000 records by default,
from ``benchmarks/memory.py``). Each is written as an archive in the seed's schema, imported
the way a user does it (``memory index --archive``), and every call of the seed's API is
timed against the seed's statement for it on the archive (``LIKE '%q%'`` scans, ``BETWEEN``,
``ORDER BY date DESC LIMIT``), with the answers compared. Printed: p50/p95 of every call
and of its seed counterpart, relevance top-10 against exhaustive bm25, index size against
the raw text. Usage: ``python benchmarks/memory_index.py [--generated 200000] [--reps 30]``.
"""

from __future__ import annotations

import argparse
import glob
import gzip
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

from terminai_apts.memory import store
from terminai_apts.memory.api import ThermalMemory
from terminai_apts.memory.cli import import_archive
from terminai_apts.memory.records import Memory, Results

sys.path.insert(0, str(Path(__file__).resolve().parent))
from memory import synth  # the generator of benchmarks/memory.py

Row = tuple[str, str, str, str, str, str, str, float]
_HEADER = re.compile(r"^(\S+) \(([^)]+)\) ([^;]*);\s*urgency=(\S+)")
_TRAILER = re.compile(r"^ -- (.*?) <[^>]*>\s+(.+)$")
_GNU = re.compile(r"^(\d{4}-\d{2}-\d{2})\s+(.+?)\s*(<[^>]*>)?\s*$")
GOAL_MS, GOAL_X = 50.0, 20.0


def debian_rows() -> list[Row]:
    """Every changelog entry under /usr/share/doc: ``(id, date, title, content, summary, tags, source, 1.0)``."""
    rows: dict[str, Row] = {}
    for path in sorted(glob.glob("/usr/share/doc/*/changelog*.gz")):
        try:
            with gzip.open(path) as fh:
                text = fh.read().decode("utf-8", "replace")
        except (OSError, EOFError):
            continue
        doc = Path(path).parent.name
        for n, (title, date, body, tags, who) in enumerate(_entries(text, doc)):
            lines = [ln.strip() for ln in body if ln.strip()]
            summary = lines[0][:200] if lines else ""
            uid = f"{doc}/{Path(path).name}/{n}"
            rows[uid] = (uid, date, title, "\n".join(lines), summary, ",".join(tags), who, 1.0)
    return list(rows.values())


def _entries(text: str, doc: str) -> Iterator[tuple[str, str, list[str], list[str], str]]:
    """``(title, YYYY-MM-DD, body lines, tags, author)`` per entry, Debian or GNU format."""
    head: tuple[str, list[str]] | None = None
    body: list[str] = []
    for line in text.splitlines():
        m = _HEADER.match(line)
        if m:
            dist = m.group(3).split()[0] if m.group(3).split() else ""
            head, body = (f"{m.group(1)} ({m.group(2)})", [m.group(1), dist, m.group(4)]), []
            continue
        t = _TRAILER.match(line)
        if t and head is not None:
            try:
                day = parsedate_to_datetime(t.group(2)).strftime("%Y-%m-%d")
            except (TypeError, ValueError, IndexError):
                head = None
                continue
            yield head[0], day, body, [x for x in head[1] if x], t.group(1)
            head = None
            continue
        if head is not None:
            body.append(line)
    # GNU-style upstream ChangeLogs: "2023-01-05  Name  <mail>" starts an entry.
    current: tuple[str, str] | None = None
    body = []
    for line in text.splitlines():
        g = _GNU.match(line)
        if g:
            if current is not None and body:
                yield f"{doc} {current[0]}", current[0], body, [doc, "upstream"], current[1]
            current, body = (g.group(1), g.group(2)), []
        elif current is not None:
            body.append(line)
    if current is not None and body:
        yield f"{doc} {current[0]}", current[0], body, [doc, "upstream"], current[1]


def generated_rows(n: int) -> list[Row]:
    return [
        (r.uid, r.date[:10], r.title, r.content, r.summary, ",".join(r.tags), r.source, r.confidence) for r in synth(n)
    ]


def write_archive(path: Path, rows: list[Row]) -> None:
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(
            "CREATE TABLE memories(id TEXT PRIMARY KEY, date TEXT, title TEXT, content TEXT, summary TEXT,"
            " tags TEXT, source TEXT, confidence REAL)"
        )
        conn.executemany("INSERT INTO memories VALUES (?,?,?,?,?,?,?,?)", rows)
    conn.close()


class Seed:
    """The seed's statements on its archive (the baseline)."""

    def __init__(self, path: Path) -> None:
        self.conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)

    def search(self, q: str, date_range: tuple[str, str] | None = None, tags: list[str] | None = None) -> list[str]:
        sql, p = "SELECT id FROM memories WHERE (title LIKE ? OR content LIKE ?)", [f"%{q}%", f"%{q}%"]
        if date_range:
            sql += " AND date BETWEEN ? AND ?"
            p += list(date_range)
        if tags:
            sql += " AND (" + " OR ".join("(',' || tags || ',') LIKE ?" for _ in tags) + ")"
            p += [f"%,{t},%" for t in tags]
        return [r[0] for r in self.conn.execute(sql + " ORDER BY date DESC, id DESC LIMIT 20", p)]

    def count(self, q: str) -> int:
        sql = "SELECT count(*) FROM memories WHERE title LIKE ? OR content LIKE ?"
        return int(self.conn.execute(sql, (f"%{q}%", f"%{q}%")).fetchone()[0])

    def filter(self, after: str | None, before: str | None, tags: list[str] | None) -> list[str]:
        sql, p = "SELECT id FROM memories WHERE 1=1", list[str]()
        if after:
            sql, p = sql + " AND date >= ?", [*p, after]
        if before:
            sql, p = sql + " AND date <= ?", [*p, before]
        if tags:
            sql += " AND (" + " OR ".join("(',' || tags || ',') LIKE ?" for _ in tags) + ")"
            p += [f"%,{t},%" for t in tags]
        return [r[0] for r in self.conn.execute(sql + " ORDER BY date DESC, id DESC LIMIT 50", p)]

    def grep(self, pattern: str) -> list[str]:
        rx, out = re.compile(pattern, re.IGNORECASE), []
        for uid, title, summary, content in self.conn.execute(
            "SELECT id, title, summary, content FROM memories ORDER BY date DESC, id DESC"
        ):
            if rx.search(f"{title}\n{summary}\n{content}"):
                out.append(uid)
                if len(out) == 50:
                    break
        return out

    def get(self, uid: str) -> str | None:
        row = self.conn.execute("SELECT id FROM memories WHERE id = ?", (uid,)).fetchone()
        return None if row is None else str(row[0])


def timed(fn: Callable[[Any], object], args: list[Any]) -> tuple[float, float, list[object]]:
    samples, answers = [], []
    fn(args[0])  # warm the page cache for this call
    for a in args:
        t = time.perf_counter()
        answers.append(fn(a))
        samples.append((time.perf_counter() - t) * 1000)
    samples.sort()
    return statistics.median(samples), samples[max(0, round(len(samples) * 0.95) - 1)], answers


def _ids(res: Results) -> list[str]:
    return [h.memory.id for h in res]


def _id(memory: Memory | None) -> str | None:
    return None if memory is None else memory.id


def bench(name: str, rows: list[Row], work: Path, queries: list[str], tags: list[str], reps: int) -> None:
    archive, index = work / f"{name}.archive.db", work / f"{name}.index.db"
    write_archive(archive, rows)
    raw = sum(len(x.encode()) for r in rows for x in (r[2], r[3], r[4], r[5]))
    t = time.perf_counter()
    store.build(index, import_archive(archive))
    build = time.perf_counter() - t
    size = index.stat().st_size
    print(
        f"\n## {name}: {len(rows):,} records, {raw / 1e6:.1f} MB of text"
        f" (archive {archive.stat().st_size / 1e6:.0f} MB)"
    )
    print(f"index build {build:.1f} s, {size / 1e6:.1f} MB = {size / raw:.2f}x the raw text (goal <= 3x)")
    qs = [queries[i % len(queries)] for i in range(reps)]
    days = sorted(r[1] for r in rows)
    lo, hi = days[len(days) // 2], days[len(days) * 3 // 4]
    seed = Seed(archive)
    ids = [rows[i * 7919 % len(rows)][0] for i in range(reps)]
    with ThermalMemory(index, budget_ms=60_000) as mem:
        two = [tags[i % 3 : i % 3 + 2] for i in range(reps)]
        cases: list[tuple[str, Callable[[Any], object], Callable[[Any], object], list[Any]]] = [
            ("search(q)", lambda q: _ids(mem.search_results(q)), seed.search, qs),
            (
                "search(q, date_range)",
                lambda q: _ids(mem.search_results(q, (lo, hi))),
                lambda q: seed.search(q, (lo, hi)),
                qs,
            ),
            (
                "search(q, tags=[t])",
                lambda q: _ids(mem.search_results(q, tags=tags[:1])),
                lambda q: seed.search(q, tags=tags[:1]),
                qs,
            ),
            ("count(q)", mem.count, seed.count, qs),
            (
                "filter(tags=[a, b])",
                lambda t: _ids(mem.filter_results(tags=t)),
                lambda t: seed.filter(None, None, t),
                two,
            ),
            (
                "filter(date_after, date_before)",
                lambda _i: _ids(mem.filter_results(lo, hi)),
                lambda _i: seed.filter(lo, hi, None),
                two,
            ),
            (
                "grep(literal)",
                lambda q: _ids(mem.grep_results(re.escape(q))),
                lambda q: seed.grep(re.escape(q)),
                qs[: max(5, reps // 3)],
            ),
            ("get(id)", lambda u: _id(mem.record(u)), seed.get, ids),
            ("summarize(q)", mem.summarize, lambda q: seed.search(q)[:5], qs),
        ]
        print(f"{'call':34} {'p50':>8} {'p95':>8} {'seed p50':>9} {'seed p95':>9} {'x p95':>7}  same  goal")
        for label, ours, theirs, args in cases:
            p50, p95, got = timed(ours, args)
            s50, s95, want = timed(theirs, args)
            same = "yes" if label.startswith("summarize") or got == want else "NO"
            ok = "met" if p95 <= GOAL_MS or s95 / p95 >= GOAL_X else "MISSED"
            print(f"{label:34} {p50:8.2f} {p95:8.2f} {s50:9.2f} {s95:9.2f} {s95 / p95:7.1f}  {same:4}  {ok}")
        equal, overlap, r50, e50 = 0, 0, list[float](), list[float]()
        for q in queries:
            t = time.perf_counter()
            top = _ids(mem.search_results(q, order="relevance", limit=10))
            r50.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            full = _ids(mem.search_results(q, order="relevance", limit=10, exhaustive=True))
            e50.append((time.perf_counter() - t) * 1000)
            equal += top == full
            overlap += len(set(top) & set(full))
        r50.sort()
        print(
            f"relevance top-10 equal to exhaustive bm25 for {equal} of {len(queries)} queries"
            f" ({overlap / max(1, 10 * len(queries)):.0%} of results shared); p50 {statistics.median(r50):.2f} ms,"
            f" max {r50[-1]:.2f} ms; exhaustive p50 {statistics.median(e50):.2f} ms, max {max(e50):.2f} ms"
        )
    seed.conn.close()


DEBIAN_QUERIES = [
    "fix", "test", "update", "the", "upstream", "security", "C++", "python3", "Closes: #10", "ß", "é",
    "go", "memory leak", "CVE-2023", "segfault", "zzyzx", "lintian", "d/control", "50%", "New upstream release",
]  # fmt: skip
GENERATED_QUERIES = ["deploy", "postgres migration", "PROJ-1", "the", "latency", "v2.1", "timeout after", "zzyzx"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--generated", type=int, default=200_000)
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--only", choices=["debian", "generated"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memory-index-") as tmp:
        if args.only in (None, "debian"):
            bench(
                "debian-changelogs", debian_rows(), Path(tmp), DEBIAN_QUERIES, ["unstable", "low", "medium"], args.reps
            )
        if args.only in (None, "generated"):
            bench("generated", generated_rows(args.generated), Path(tmp), GENERATED_QUERIES,
                  ["incident", "db", "security", "perf"], args.reps)  # fmt: skip


if __name__ == "__main__":
    main()
