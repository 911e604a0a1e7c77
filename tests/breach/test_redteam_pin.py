"""Red team: make a run read stale or mixed data from the memory index without an error.

The host is the one who acts here (it is the test's writer); the run only reads, through
the production executor and the injected ``thermal`` API. A run opens the index
``immutable=1`` and pinned (``memory/pinned.py``): whatever the host does to the file
between or during cells, each answer must be one version of the index, the version the
run opened, or the clean "changed while this program read it" error.

Each change below leaves the header's change counter, the size and the modification time
as they were, or leaves them on a file the run no longer reads: a full rebuild renamed
over the path (``store.build``, as ``memory index --rebuild`` does), ``VACUUM INTO`` then
a rename, a rewrite in place that restores the modification time (``cp -p``, ``rsync -t``,
``touch -r``), and a rename between the pin and SQLite's own open.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from terminai_apts.errors import MemoryStoreError
from terminai_apts.executor import ExecutorSession, SandboxConfig, thermal_spec
from terminai_apts.memory import pinned, store, tiers
from terminai_apts.memory.api import ThermalMemory, open_for_run
from terminai_apts.memory.records import NewMemory
from terminai_apts.memory.shard import Shard
from terminai_apts.memory.tiers import LIVE_INDEX

CHANGED = "changed while this program read it"
COUNT = "print(thermal.count('alpha'), thermal.count('bravo'))"


def _records(word: str, count: int) -> list[NewMemory]:
    return [
        NewMemory(uid=f"{word}{i}", date="2026-01-01", recorded_at="2026-01-01", title=f"{word} {i}", content=word)
        for i in range(count)
    ]


@pytest.fixture
def folder() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="terminai-breach-pin-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _index(path: Path, word: str, count: int = 3) -> Path:
    store.build(path, _records(word, count))
    path.chmod(0o644)  # readable by the run's unprivileged uid
    return path


def _rebuild(db: Path) -> None:
    _index(db, "bravo", 7)


def _vacuum_into_then_rename(db: Path) -> None:
    """The index grown in a working copy, compacted by SQLite into a new file, and that
    renamed over the path: the file the run opened is never written."""
    work, copy = db.with_name("work.db"), db.with_name("compacted.db")
    shutil.copyfile(db, work)
    store.append(work, _records("bravo", 7))
    writer = sqlite3.connect(work)
    try:
        writer.execute("VACUUM INTO ?", (str(copy),))
    finally:
        writer.close()
    work.unlink()
    copy.chmod(0o644)
    os.replace(copy, db)


def _rewrite_in_place_keeping_mtime(db: Path) -> None:
    """Another index of the same size and change counter copied over the same inode,
    its modification time put back, as ``cp -p``/``rsync --inplace -t`` of a same-aged
    file or ``touch -r`` leave it."""
    other = _index(db.with_name("other.db"), "bravo", 3)
    before = db.stat()
    assert (other.stat().st_size, other.read_bytes()[24:28]) == (before.st_size, db.read_bytes()[24:28])
    with open(db, "r+b") as fh:
        fh.write(other.read_bytes())
        fh.truncate()
    os.utime(db, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = db.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)


# Each change and the counts of "alpha" and "bravo" records in the index it leaves.
CHANGES: dict[str, tuple[Callable[[Path], None], tuple[int, int]]] = {
    "rebuild-renamed-over": (_rebuild, (0, 7)),
    "vacuum-into-renamed-over": (_vacuum_into_then_rename, (3, 7)),
    "rewritten-in-place-mtime-kept": (_rewrite_in_place_keeping_mtime, (0, 3)),
}


@pytest.mark.parametrize("layout", ["file", "journal-directory"])
@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_session_never_reads_a_replaced_index_silently(folder: Path, change: str, layout: str) -> None:
    db = _index(folder / LIVE_INDEX, "alpha")
    target = str(db if layout == "file" else folder)
    with ExecutorSession(SandboxConfig(timeout_seconds=5), thermal_spec(target)) as session:
        first = session.run(COUNT)
        assert first.success and first.stdout.split() == ["3", "0"], first
        act, now = CHANGES[change]
        act(db)
        result = session.run(COUNT)
    assert not result.success and result.error_type == "ApiError", result
    assert CHANGED in (result.error or ""), result.error
    with ExecutorSession(SandboxConfig(timeout_seconds=5), thermal_spec(target)) as session:
        again = session.run(COUNT)  # a new run reads the new index
    assert again.success and tuple(map(int, again.stdout.split())) == now, again


def _replaced_between_pin_and_open(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rename a new index over the path after the pin opened the file, before SQLite does."""
    original = sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> Any:
        monkeypatch.setattr(sqlite3, "connect", original)  # once: the rebuild connects too
        _rebuild(db)
        return original(*args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect)


def test_a_rename_between_the_pin_and_sqlites_open_is_a_clean_error(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite would read the new file while the pin watched the old one: a later commit
    to the new file would then go unseen. The pinned file lost its link: a clean error."""
    db = _index(folder / "memory.db", "alpha")
    _replaced_between_pin_and_open(db, monkeypatch)
    with pytest.raises(MemoryStoreError, match=CHANGED), ThermalMemory(db, immutable=True) as mem:
        mem.count()  # (opening already reads the index: its first statement fails)


def _version_without_ctime_and_links(fd: int) -> tuple[pinned.Version, bytes]:
    """The pin as it was: change counter, size and modification time only."""
    version, header = _READ_VERSION(fd)
    return pinned.Version(
        change_counter=version.change_counter, size=version.size, mtime_ns=version.mtime_ns, ctime_ns=0, links=1
    ), header


_READ_VERSION = pinned._read_version


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_the_pin_misses_each_change_without_ctime_and_link_count(
    folder: Path, change: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The companion: with the check narrowed to what it was, every change above is read
    silently, stale (the old file) or mixed (old cached pages, new pages from disk)."""
    monkeypatch.setattr(pinned, "_read_version", _version_without_ctime_and_links)
    db = _index(folder / "memory.db", "alpha")
    with ThermalMemory(db, immutable=True) as mem:
        assert (mem.count("alpha"), mem.count("bravo")) == (3, 0)
        act, now = CHANGES[change]
        act(db)
        assert (mem.count("alpha"), mem.count("bravo")) == (3, 0)  # the old answer, no error
    with ThermalMemory(db, immutable=True) as mem:
        assert (mem.count("alpha"), mem.count("bravo")) == now


def test_a_rename_between_pin_and_open_goes_unseen_without_the_link_count(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pinned, "_read_version", _version_without_ctime_and_links)
    db = _index(folder / "memory.db", "alpha")
    _replaced_between_pin_and_open(db, monkeypatch)
    with ThermalMemory(db, immutable=True) as mem:
        assert mem.count("bravo") == 7  # SQLite reads the new file, the pin watches the old one
        assert pinned.os.fstat(mem._shards[0]._conn.pin._fd).st_nlink == 0  # type: ignore[attr-defined]
        store.append(db, _records("charlie", 5))
        mem.count(), mem.count("charlie")  # a commit under SQLite's cache, and no error


def _commit_in_persist_mode(db: Path, value: str) -> None:
    writer = sqlite3.connect(db)
    try:
        assert writer.execute("PRAGMA journal_mode = PERSIST").fetchone()[0] == "persist"
        writer.execute("INSERT INTO meta(key, value) VALUES (?, ?)", (f"note-{value}", value))
        writer.commit()  # committed: nothing is in progress, the journal's zeroed header says so
    finally:
        writer.close()
    assert Path(f"{db}-journal").read_bytes()[:28] == bytes(28)


def test_an_index_written_in_persist_journal_mode_stays_readable_and_pinned(folder: Path) -> None:
    """A host writer in ``journal_mode=PERSIST`` leaves its journal behind after each
    commit. Runs must still open the index (not wait out the writer and fail), and a
    later commit must still be the clean error."""
    db = _index(folder / "memory.db", "alpha")
    _commit_in_persist_mode(db, "first")
    with ExecutorSession(SandboxConfig(timeout_seconds=5), thermal_spec(str(db))) as session:
        first = session.run(COUNT)
        assert first.success and first.stdout.split() == ["3", "0"], first  # not "is being written"
        _commit_in_persist_mode(db, "second")
        result = session.run(COUNT)
    assert not result.success and CHANGED in (result.error or ""), result


def test_a_persistent_journal_refuses_every_run_when_taken_for_a_commit(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The companion: judged by its size alone, the retired journal looks like a commit in
    progress for ever, and opening fails after the whole wait."""
    monkeypatch.setattr(pinned, "_writer_active", lambda target: Path(f"{target}-journal").stat().st_size > 0)
    db = _index(folder / "memory.db", "alpha")
    _commit_in_persist_mode(db, "first")
    with pytest.raises(MemoryStoreError, match="is being written"):
        pinned.FilePin(db, wait_seconds=0.3)


def _compaction(root: Path, sealed: list[NewMemory], kept: list[NewMemory]) -> None:
    """Compaction as the host runs it: the closed quarter sealed into its shard first,
    then the live index rebuilt from what stays open (``memory index ROOT --rebuild``)."""
    shard = root / "cold" / "2026-Q1" / "shard.sqlite"
    shard.parent.mkdir(parents=True)
    store.build(shard, sealed, first_id=store.shard_base("2026-Q1") + 1)
    shard.chmod(0o444)
    _build_live(root, kept)


def _build_live(root: Path, records: list[NewMemory]) -> None:
    store.build(root / LIVE_INDEX, records)
    (root / LIVE_INDEX).chmod(0o644)


def _quarters() -> tuple[list[NewMemory], list[NewMemory]]:
    def record(uid: str, day: str) -> NewMemory:
        return NewMemory(uid=uid, date=day, recorded_at=day, title=f"decision {uid}", content="rollout")

    return [record(f"q1-{i}", "2026-02-01") for i in range(4)], [record(f"q4-{i}", "2026-11-01") for i in range(3)]


def _compact_when_the_live_index_opens(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The host compacts after the run listed the sealed shards, before it opens the live index."""
    sealed, kept = _quarters()
    original = Shard

    def opening(path: Path, **kwargs: Any) -> Shard:
        monkeypatch.setattr(tiers, "Shard", original)
        _compaction(root, sealed, kept)
        return original(path, **kwargs)

    monkeypatch.setattr(tiers, "Shard", opening)


def test_a_compaction_while_the_tiers_open_never_loses_a_quarter(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Opened between the two steps, the run saw no shard and a live index without the
    sealed quarter: four records gone without an error. Every answer must count the seven
    records the journal holds in every state, or fail cleanly."""
    sealed, kept = _quarters()
    _build_live(folder, sealed + kept)
    _compact_when_the_live_index_opens(folder, monkeypatch)
    with open_for_run(str(folder)) as mem:
        assert mem.count("rollout") == 7


def test_the_tiers_lose_a_quarter_without_the_second_listing(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The companion: with the shard listing taken once, before the files are opened."""
    listing, first = tiers.sealed_shards, list[list[Path]]()

    def listed_once(base: Path) -> list[Path]:
        if not first:
            first.append(listing(base))
        return first[0]

    monkeypatch.setattr(tiers, "sealed_shards", listed_once)
    sealed, kept = _quarters()
    _build_live(folder, sealed + kept)
    _compact_when_the_live_index_opens(folder, monkeypatch)
    with open_for_run(str(folder)) as mem:
        assert mem.count("rollout") == 3  # the sealed quarter is in neither file the run opened
