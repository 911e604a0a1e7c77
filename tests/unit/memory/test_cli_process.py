"""``terminai-apts memory ...`` and ``exec --db`` run as real processes: clear errors, no tracebacks."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from terminai_apts.memory import ThermalMemory, store

from tests.unit.memory.conftest import make_records

CLI = Path(sys.executable).with_name("terminai-apts")


def _run(*argv: str | bytes, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [str(CLI), *argv],
        check=False,
        input=stdin,
        capture_output=True,
        text=True,
        errors="replace",
        env=env,
        timeout=120,
    )


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "m.db"
    store.build(path, make_records())
    return path


HOSTILE = [
    ("find", "{db}", b"ab\xff\xfecd"),
    ("grep", "{db}", b"x\xffy"),
    ("filter", "{db}", "--source", b"\xff"),
    ("filter", "{db}", "--kind", b"n\xc3"),
    ("search", "{db}", b"de\xffploy"),
    ("get", "{db}", str(2**70)),
    ("get", "{db}", "-1"),
    ("search", "{db}", "deploy", "--offset", str(2**64)),
    ("search", "{db}", "deploy", "--limit", str(2**64)),
    ("search", "{db}", "deploy", "--until", "10000-01-01"),
    ("count", "{db}", "deploy", "--since", "999999d"),
    ("grep", "{db}", "deploy", "--since", "999999d"),
    ("find", "{db}", "deploy", "--until", "9999-12-32"),
    ("filter", "{db}", "--min-confidence", "abc"),
    ("filter", "{db}", "--min-confidence", "nan"),
    ("filter", "{db}", "--tags", b"\xff"),
    ("grep", "{db}", "(unclosed"),
    ("get", "{db}", "999"),
]


@pytest.mark.parametrize("argv", HOSTILE, ids=[" ".join(map(repr, a)) for a in HOSTILE])
def test_hostile_arguments_give_a_clear_error(db: Path, argv: tuple[str | bytes, ...]) -> None:
    args = [a.replace("{db}", str(db)) if isinstance(a, str) else a for a in argv]
    proc = _run("memory", *args)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith(("error: ", "usage: ")), proc.stderr


def test_a_missing_id_is_named(db: Path) -> None:
    proc = _run("memory", "get", str(db), "999")
    assert proc.returncode == 24 and "no memory with id '999'" in proc.stderr


def test_grep_and_find_cross_field_boundaries(db: Path) -> None:
    # Record 1: title "Postgres migration plan", then "\n", then its summary "We move PROJ-1234 ...".
    proc = _run("memory", "grep", str(db), "plan\\nwe move", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["total"] == 1 and not out["truncated"] and out["hits"][0]["id"] == "u0"
    proc = _run("memory", "find", str(db), "plan\nWE MOVE", "--json")
    assert json.loads(proc.stdout)["total"] == 1


def test_pathological_patterns_finish(db: Path) -> None:
    for pattern in ["(-|--)+>", "(.|\\s|\\w)*Q", "(a+)+b"]:
        proc = _run("memory", "grep", str(db), pattern, "--json")
        assert proc.returncode == 0 and json.loads(proc.stdout)["plan"].endswith("re2"), proc.stderr


def test_rebuild_without_a_source_keeps_the_index(db: Path, tmp_path: Path) -> None:
    before = db.read_bytes()
    proc = _run("memory", "index", str(db), "--rebuild")
    assert proc.returncode == 2 and "no source" in proc.stderr and "Traceback" not in proc.stderr
    empty = tmp_path / "empty-journal"
    (empty / "warm").mkdir(parents=True)  # a journal that holds no records yet
    proc = _run("memory", "index", str(db), "--rebuild", "--journal", str(empty))
    assert proc.returncode == 2 and "would drop all 5" in proc.stderr
    plain = tmp_path / "plain"
    plain.mkdir()
    proc = _run("memory", "index", str(db), "--rebuild", "--journal", str(plain))
    assert proc.returncode == 22 and "not a journal directory" in proc.stderr
    proc = _run("memory", "index", str(db), "--rebuild", "--journal", str(tmp_path / "typo-in-path"))
    assert proc.returncode == 22 and "does not exist" in proc.stderr
    assert db.read_bytes() == before
    with ThermalMemory(db) as mem:
        assert mem.count_results() == 5


@pytest.mark.parametrize("action", ["verify", "compact"])
def test_verify_and_compact_need_a_journal_directory(db: Path, tmp_path: Path, action: str) -> None:
    missing = tmp_path / "no-such-journal"
    proc = _run("memory", action, str(missing))
    assert proc.returncode == 22 and "does not exist" in proc.stderr
    assert "intact" not in proc.stdout and not missing.exists()
    proc = _run("memory", action, str(db))
    assert proc.returncode == 22 and "is a memory index file, not a journal directory" in proc.stderr
    assert "intact" not in proc.stdout


def test_exec_on_a_legacy_archive_says_how_to_import_it(seed_archive: Path) -> None:
    program = "print(thermal.count())"
    proc = _run("exec", "--db", str(seed_archive), stdin=program)
    assert proc.returncode == 24 and "Traceback" not in proc.stderr
    assert "archive in the original schema" in proc.stderr and "injected API unavailable" not in proc.stderr
    hint = proc.stderr.split("hint: ", 1)[1].strip()
    importing, running = hint.split("import it once, then pass the index: ", 1)[1].split(" && ")
    words = shlex.split(importing)
    assert words[:3] == ["terminai-apts", "memory", "index"]
    assert _run(*words[1:]).returncode == 0
    words = shlex.split(running)
    proc = _run(*words[1:], stdin=program)
    assert proc.returncode == 0 and proc.stdout.strip() == "2", proc.stderr


def test_backtracking_fallback_is_time_limited_inside_the_sandbox(tmp_path: Path) -> None:
    from terminai_apts.memory.records import NewMemory

    path = tmp_path / "dashes.db"
    store.build(
        path,
        [
            NewMemory(
                uid=f"d{i}",
                date=f"2024-01-01T00:00:{i:02d}Z",
                recorded_at="2024-01-01T00:00:00Z",
                title="a",
                content="-" * 60,
            )
            for i in range(20)
        ],
    )
    program = 'r = thermal.grep_results("(-|--)+(?=>)", budget_ms=300)\nprint(r.truncated, r.total, r.elapsed_ms)\n'
    proc = _run("exec", "--db", str(path), "--mode", "standard", "--timeout", "20", stdin=program)
    assert proc.returncode == 0, proc.stderr
    truncated, total, elapsed = proc.stdout.split()
    assert truncated == "True" and total == "-1" and 290 <= float(elapsed) < 1500


def test_the_import_hint_avoids_a_read_only_directory(seed_archive: Path) -> None:
    import tempfile

    from terminai_apts.memory.preflight import index_path

    assert index_path(seed_archive) == seed_archive.with_name("seed.index.sqlite")
    # A read-only mount (as in the container) cannot take the index: the temp directory can.
    elsewhere = index_path(seed_archive, writable=lambda _folder: False)
    assert elsewhere == Path(tempfile.gettempdir()) / "seed.index.sqlite"
