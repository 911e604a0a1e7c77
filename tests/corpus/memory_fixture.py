"""A small, realistic memory index for agent programs: decisions, incidents, cleanup plans,
meeting notes and summaries of a platform team, September 2025 to January 2026
(deterministic: the same records every time)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from terminai_apts.memory import store
from terminai_apts.memory.cli import import_archive
from terminai_apts.memory.records import NewMemory

_TOPICS: tuple[tuple[str, str, str], ...] = (
    ("GPU allocation", "decision", "Allocate the A100 pool by team quota; research gets 40% until the Q1 review."),
    ("GPU allocation review", "meeting", "Training jobs waited 6 hours on average; move inference to the L4 nodes."),
    (
        "Postgres migration",
        "decision",
        "Move the billing database to Postgres 16 with logical replication, cutover on a Sunday.",
    ),
    (
        "Postgres migration rollback",
        "incident",
        "Replication lag reached 40 minutes; rolled back and raised wal_sender_timeout.",
    ),
    (
        "Disk cleanup plan",
        "cleanup",
        "Delete build caches older than 30 days and rotate logs weekly on the CI runners.",
    ),
    ("Docker image cleanup", "cleanup", "Prune dangling images nightly; keep the last five tags of each service."),
    (
        "On-call handover",
        "summary",
        "Two pages this week: certificate expiry on the API gateway and a full /var on db-2.",
    ),
    (
        "Vendor contract renewal",
        "decision",
        "Renew the monitoring vendor for one year; negotiate a 15% discount for prepay.",
    ),
    (
        "Security review of the sandbox",
        "decision",
        "Seccomp allowlist, Landlock and namespaces per run; no network by default.",
    ),
    (
        "Incident: API latency spike",
        "incident",
        "p99 latency went to 4 s after the cache node restarted; warmed the cache first next time.",
    ),
    ("Hiring plan Q1", "decision", "Open two SRE positions and one data engineer; interviews start in January."),
    ("Budget summary", "summary", "Cloud spend is 12% over plan, mostly GPU hours and egress to the analytics vendor."),
    (
        "Kubernetes upgrade",
        "decision",
        "Upgrade clusters to 1.31 one region at a time, staging first, with a freeze window.",
    ),
    ("Backup restore drill", "meeting", "Restored the orders database in 47 minutes; the runbook missed the IAM step."),
    (
        "Log retention",
        "cleanup",
        "Keep application logs 30 days hot, 1 year in cold storage; drop debug logs after 7 days.",
    ),
)
_SOURCES = ("slack", "email", "jira", "notes")


def records() -> list[NewMemory]:
    """60 memories: each topic several times, spread over five months."""
    out: list[NewMemory] = []
    n = 0
    for month, (year, mon) in enumerate(((2025, 9), (2025, 10), (2025, 11), (2025, 12), (2026, 1))):
        for i, (title, kind, content) in enumerate(_TOPICS):
            if (i + month) % 5 == 4:
                continue  # not every topic every month
            day = 1 + (i * 2 + month * 3) % 27
            date = f"{year}-{mon:02d}-{day:02d}T{9 + i % 8:02d}:00:00Z"
            n += 1
            out.append(
                NewMemory(
                    uid=f"m{n}",
                    date=date,
                    recorded_at=date,
                    title=f"{title} ({year}-{mon:02d})",
                    content=f"{content} Follow-up {n}: owner team-{i % 4}, status {'done' if n % 3 else 'open'}.",
                    summary=content[:90],
                    tags=(kind, f"team-{i % 4}", *(("gpu",) if "GPU" in title else ())),
                    source=_SOURCES[n % len(_SOURCES)],
                    confidence=round(0.55 + (n % 9) * 0.05, 2),
                    kind="note",
                    tier="warm",
                    origin=f"fixture:{n}",
                )
            )
    return out


ARCHIVE_SCHEMA = (
    "CREATE TABLE memories(id TEXT PRIMARY KEY, date TEXT, title TEXT, content TEXT, summary TEXT,"
    " tags TEXT, source TEXT, confidence REAL)"
)


def raw() -> list[tuple[object, ...]]:
    """The same memories as the seed's archive holds them (its ``memories`` table): the
    archive id (``m12``), the day as ``YYYY-MM-DD``, tags comma-separated."""
    return [
        (r.uid, r.date[:10], r.title, r.content, r.summary, ",".join(r.tags), r.source, r.confidence) for r in records()
    ]


def fill(conn: sqlite3.Connection) -> sqlite3.Connection:
    """``conn`` with the archive's ``memories`` table written into it."""
    with conn:
        conn.execute(ARCHIVE_SCHEMA)
        conn.executemany("INSERT INTO memories VALUES (?,?,?,?,?,?,?,?)", raw())
    return conn


def build(folder: Path) -> Path:
    """The archive at ``folder/archive.db`` imported as a user imports it (``terminai-apts
    memory build``) into the index ``folder/memory.db``, readable by the sandbox's
    unprivileged user."""
    archive = folder / "archive.db"
    fill(sqlite3.connect(archive)).close()
    path = folder / "memory.db"
    store.build(path, import_archive(archive))
    path.chmod(0o644)
    folder.chmod(0o755)
    return path
