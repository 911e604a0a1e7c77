"""Pinned, lock-free reads (``memory/pinned.py``): a sandboxed run's SQLite takes no lock,
and a commit by the writer meanwhile is a clean error, never a stale or mixed answer."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from urllib.parse import quote

import pytest
from terminai_apts.errors import MemoryStoreError
from terminai_apts.executor import ExecutorSession, SandboxConfig, thermal_spec
from terminai_apts.memory import separator_tokens, store
from terminai_apts.memory.api import ThermalMemory, open_for_run, open_memory
from terminai_apts.memory.pinned import FilePin
from terminai_apts.memory.records import NewMemory


def _fresh(count: int, start: int = 1000) -> list[NewMemory]:
    return [
        NewMemory(uid=f"new{i}", date="2026-11-01", recorded_at="2026-11-01", title=f"rollout {i}", content="canary")
        for i in range(start, start + count)
    ]


def test_a_commit_after_opening_is_a_clean_error(index: Path) -> None:
    with ThermalMemory(index, immutable=True) as mem:
        before = mem.count_results()
        assert mem.count_results("rollout") == mem.count_results("rollout")  # unchanged file: answers as usual
        assert store.append(index, _fresh(50)) == 50
        with pytest.raises(MemoryStoreError, match="changed while this program read it"):
            mem.count_results()
    with ThermalMemory(index, immutable=True) as mem:  # a new run reads the new version
        assert mem.count_results() == before + 50


def test_without_the_pin_an_immutable_reader_answers_stale_data_silently(index: Path) -> None:
    """Why the pin exists: SQLite trusts ``immutable=1`` and keeps answering from its cache."""
    conn = sqlite3.connect(f"file:{quote(str(index))}?mode=ro&immutable=1", uri=True)
    try:
        before = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
        store.append(index, _fresh(50))
        assert conn.execute("SELECT count(*) FROM memories").fetchone()[0] == before  # wrong, no error
    finally:
        conn.close()


def test_the_pinned_reader_takes_no_lock_so_the_writer_never_waits(index: Path) -> None:
    with ThermalMemory(index, immutable=True) as mem:
        mem.count_results()
        writer = sqlite3.connect(index, timeout=0)
        try:
            writer.execute("BEGIN EXCLUSIVE")  # needs every reader's lock gone
            writer.rollback()
        finally:
            writer.close()
        mem.count_results()  # a rolled-back transaction leaves the version as it was


def test_opening_waits_for_a_commit_in_progress_then_pins_the_committed_version(index: Path) -> None:
    writer = sqlite3.connect(index, isolation_level=None, check_same_thread=False)
    separator_tokens.register(writer)  # the index's triggers call it
    writer.execute("BEGIN IMMEDIATE")
    store_rows = store._row(999, _fresh(1)[0], store._Prefixes(writer))  # written by the host's own statement
    writer.execute(store._INSERT, store_rows)
    assert Path(f"{index}-journal").stat().st_size > 0  # half a commit may be in the file
    with pytest.raises(MemoryStoreError, match="is being written"):
        FilePin(index, wait_seconds=0.2)
    timer = threading.Timer(0.3, lambda: writer.execute("COMMIT"))
    timer.start()
    started = time.monotonic()
    try:
        with ThermalMemory(index, immutable=True) as mem:
            assert time.monotonic() - started >= 0.25
            assert mem.require("new1000").title == "rollout 1000"
    finally:
        timer.join()
        writer.close()


def test_a_wal_index_is_refused_with_a_clear_error(index: Path) -> None:
    conn = sqlite3.connect(index)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.close()
    with pytest.raises(MemoryStoreError, match="WAL mode") as caught:
        ThermalMemory(index, immutable=True)
    assert "journal_mode=DELETE" in (caught.value.hint or "")


def test_a_run_opens_every_tier_pinned_and_the_host_still_sees_commits(index: Path, tmp_path: Path) -> None:
    root = tmp_path / "journal"
    (root / "cold" / "2024-Q1").mkdir(parents=True)
    store.build(root / "cold" / "2024-Q1" / "shard.sqlite", _fresh(3, start=1), first_id=store.shard_base("2024-Q1"))
    store.build(root / "index.sqlite", _fresh(2, start=10))
    run_view, host_view = open_for_run(str(root)), open_memory(root)
    try:
        assert run_view.count() == host_view.count() == 5
        store.append(root / "index.sqlite", _fresh(1, start=20))
        assert host_view.count() == 6  # the host's own reader still follows the writer
        with pytest.raises(MemoryStoreError, match="changed while this program read it"):
            run_view.count()
    finally:
        run_view.close()
        host_view.close()


def test_concurrent_commits_never_give_a_wrong_answer(index: Path) -> None:
    """Readers opening and querying while the writer commits: each answer belongs to one
    committed version (counts the writer actually reached, the same in every call of one
    reader), or is the clean error."""
    batch, batches = 20, 15
    base = ThermalMemory(index).count()
    done = threading.Event()

    def write() -> None:
        try:
            for n in range(batches):
                store.append(index, _fresh(batch, start=1000 + n * batch))
                time.sleep(0.005)
        finally:
            done.set()

    def read() -> int | None:
        try:
            with ThermalMemory(index, immutable=True) as mem:
                first = mem.count_results()
                titles = mem.filter_results(limit=100)
                again = mem.count_results()
        except MemoryStoreError as exc:
            assert "changed while" in str(exc) or "is being written" in str(exc), exc
            return None
        assert first == again and (first - base) % batch == 0 and first <= base + batch * batches
        assert len(titles.hits) == min(first, 100)
        return first

    thread = threading.Thread(target=write)
    thread.start()
    try:
        while not done.is_set():
            read()
    finally:
        thread.join()
    assert read() == base + batch * batches  # once the writer is done, the last version


def test_in_a_session_a_commit_between_cells_is_reported_to_the_program(index: Path) -> None:
    with ExecutorSession(SandboxConfig(timeout_seconds=5), thermal_spec(str(index))) as session:
        assert session.run("print(thermal.count())").success
        store.append(index, _fresh(5))
        result = session.run("print(thermal.count())")
        assert not result.success and result.error_type == "ApiError", result
        assert "changed while this program read it" in (result.error or ""), result.error
        assert "run the program again" in (result.error or "")
