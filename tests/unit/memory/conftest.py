"""A small index and a seed-schema archive shared by the memory tests."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from terminai_apts.memory import keyed, state, store
from terminai_apts.memory.journal import MemoryJournal
from terminai_apts.memory.records import NewMemory

ROWS = [
    (
        "2024-01-05T09:00:00Z",
        "Postgres migration plan",
        "We move PROJ-1234 to postgres v2.1 next week.",
        "db,infra",
        "planner",
        0.9,
    ),
    (
        "2024-02-10T10:00:00Z",
        "user's feedback on search",
        "Users said search is slow; timeout after 30000ms seen.",
        "feedback",
        "support",
        0.6,
    ),
    (
        "2024-03-15T11:00:00Z",
        "Deploy failed",
        "The deploy failed because of a missing secret.",
        "infra,incident",
        "ops",
        0.8,
    ),
    (
        "2024-03-16T11:00:00Z",
        "Deploy fixed",
        "Deploy fixed after rotating the secret; postgres untouched.",
        "infra",
        "ops",
        0.95,
    ),
    (
        "2024-05-01T00:00:00Z",
        "Deploy failed",
        "The deploy failed because of a missing secret.",
        "infra,incident",
        "ops",
        0.8,
    ),
]


def make_records() -> list[NewMemory]:
    return [
        NewMemory(
            uid=f"u{i}",
            date=d,
            recorded_at=d,
            title=t,
            content=c,
            summary=c[:30],
            tags=tuple(g.split(",")),
            source=s,
            confidence=conf,
            kind="note",
            tier="warm",
            origin=f"test:{i}",
        )
        for i, (d, t, c, g, s, conf) in enumerate(ROWS)
    ]


@pytest.fixture
def index(tmp_path: Path) -> Path:
    path = tmp_path / "mem.db"
    store.build(path, make_records())
    return path


@pytest.fixture
def seed_archive(tmp_path: Path) -> Path:
    path = tmp_path / "seed.db"
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE memories(id INTEGER PRIMARY KEY, date TEXT, title TEXT, content TEXT, summary TEXT,"
        " tags TEXT, source TEXT, confidence REAL)"
    )
    conn.executemany(
        "INSERT INTO memories VALUES (?,?,?,?,?,?,?,?)",
        [
            (1, "2023-12-01", "Old decision", "We chose SQLite.", "sqlite chosen", "db, decision", "lead", 0.7),
            (2, "2023-12-02 08:00:00", "Kubernetes", "Not now.", "", "infra", "lead", None),
        ],
    )
    conn.commit()
    conn.close()
    return path


def indexed_journal(root: Path, word: str = "rollout", decisions: int = 3) -> MemoryJournal:
    """A journal of ``decisions`` decisions ("WORD step N") with its live index built and sealed."""
    j = MemoryJournal(root)
    for i in range(decisions):
        j.write_decision(f"{word} step {i}", "why", "ok", "agent", True, timestamp=f"2026-11-0{i + 1}T10:00:00Z")
    j.build_index([], rebuild=True)
    return j


@pytest.fixture
def key_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A journal key in ``TERMINAI_JOURNAL_KEY_FILE`` for the test."""
    path = tmp_path / "journal.key"
    path.write_bytes(bytes(range(32)))
    monkeypatch.setenv(keyed.KEY_ENV, str(path))
    return path


@pytest.fixture
def witness(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An outside witness directory in ``TERMINAI_JOURNAL_WITNESS`` for the test."""
    path = tmp_path / "witness"
    path.mkdir()
    monkeypatch.setenv(state.WITNESS_ENV, str(path))
    return path
