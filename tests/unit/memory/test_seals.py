"""Sealed shards are checked when opened (once per file version), and appends never read the chain."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from datetime import date
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from terminai_apts.errors import IntegrityError, MemoryStoreError
from terminai_apts.memory import checks, seals
from terminai_apts.memory.api import ThermalMemory
from terminai_apts.memory.journal import CHAIN, DECISIONS, GENESIS, MemoryJournal

SHARD = "cold/2024-Q1/shard.sqlite"


@pytest.fixture
def journal(tmp_path: Path) -> MemoryJournal:
    j = MemoryJournal(tmp_path / "journal")
    for i, day in enumerate(["2024-02-10", "2024-03-11", "2024-04-02"]):
        j.write_decision(f"rollout decision {i}", "why", "ok", "agent", True, timestamp=f"{day}T10:00:00Z")
    j.compact(today=date(2024, 4, 3), only="quarterly")
    j.build_index([], rebuild=True)
    return j


def _flip_in_shard(root: Path) -> None:
    shard = root / SHARD
    data = shard.read_bytes()
    at = data.rindex(b"rollout decision 0")
    shard.chmod(0o644)
    shard.write_bytes(data[:at] + b"ROLLOUT" + data[at + 7 :])  # same length: SQLite still reads it


def test_a_sealed_shard_opens_and_answers(journal: MemoryJournal) -> None:
    with ThermalMemory(journal.root, immutable=True) as mem:
        assert mem.count_results("rollout") == 3


def test_a_changed_shard_is_refused_when_opened(journal: MemoryJournal) -> None:
    _flip_in_shard(journal.root)
    for immutable in (True, False):
        with pytest.raises(IntegrityError, match=f"{SHARD}:0: changed since it was sealed"):
            ThermalMemory(journal.root, immutable=immutable)


def test_the_shard_check_holds_without_the_journal_check(
    journal: MemoryJournal, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The journal check runs at open; the shard's own check binds the bytes SQLite reads.
    _flip_in_shard(journal.root)
    monkeypatch.setattr(checks, "refuse_changed", lambda _root: None)
    for immutable in (True, False):
        with pytest.raises(MemoryStoreError, match="does not match its seal"):
            ThermalMemory(journal.root, immutable=immutable)


def test_without_the_open_check_the_changed_text_is_served(
    journal: MemoryJournal, monkeypatch: pytest.MonkeyPatch
) -> None:
    _flip_in_shard(journal.root)
    monkeypatch.setattr(seals, "is_journal", lambda _base: False)
    with ThermalMemory(journal.root) as mem:
        assert mem.find("ROLLOUT decision 0").total == 1  # SQLite's own checks see nothing wrong


def test_a_shard_without_a_seal_is_refused(journal: MemoryJournal, monkeypatch: pytest.MonkeyPatch) -> None:
    seal_file = journal.root / seals.SEALS
    kept = [x for x in seal_file.read_text().splitlines() if SHARD not in x]
    seal_file.write_text("\n".join(kept) + "\n")
    with pytest.raises(IntegrityError, match=r"journal chain broken at warm/seals\.jsonl"):
        ThermalMemory(journal.root)
    monkeypatch.setattr(checks, "refuse_changed", lambda _root: None)
    with pytest.raises(MemoryStoreError, match="has no seal"):
        ThermalMemory(journal.root)


def test_each_version_of_a_shard_is_hashed_once(journal: MemoryJournal, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = hashlib.sha256

    def counting(*args: Any) -> Any:
        calls.append(1)
        return real(*args)

    seals._DIGESTS.clear()
    monkeypatch.setattr(seals, "hashlib", SimpleNamespace(sha256=counting))  # seals' hashing only
    # The shard's own check alone: a journal changed outside its writers (the utime below)
    # would otherwise be verified whole, every sealed file hashed.
    monkeypatch.setattr(checks, "refuse_changed", lambda _root: None)
    for _ in range(3):
        with ThermalMemory(journal.root, immutable=True) as mem:
            assert mem.count_results("rollout") == 3
    assert len(calls) == 1
    os.utime(journal.root / SHARD)  # a new version (its times moved): hashed again, and still intact
    with ThermalMemory(journal.root, immutable=True):
        pass
    assert len(calls) == 2


def test_append_reads_only_the_chain_tail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    j = MemoryJournal(tmp_path / "journal")
    j.write_decision("first", "r", "o", "agent", True, timestamp="2024-01-01T00:00:00Z")
    prev = json.loads((j.root / DECISIONS).read_text())["hash"]
    lines = []
    for i in range(20_000):  # a long chain, written directly: the append below must not care
        entry = CHAIN.seal({"ts": f"2024-01-02T00:00:{i % 60:02d}Z", "kind": "decision", "decision": f"d{i}"}, prev)
        lines.append(json.dumps(entry, sort_keys=True) + "\n")
        prev = str(entry["hash"])
    with open(j.root / DECISIONS, "a") as fh:
        fh.writelines(lines)
    size = (j.root / DECISIONS).stat().st_size
    read: list[int] = []
    real_pread = os.pread

    def counting(fd: int, n: int, offset: int) -> bytes:
        data = real_pread(fd, n, offset)
        read.append(len(data))
        return data

    whole = Path.read_bytes

    def guarded(self: Path) -> bytes:
        assert self.name != DECISIONS.name, "the whole chain was read"
        return whole(self)

    monkeypatch.setattr(os, "pread", counting)
    monkeypatch.setattr(Path, "read_bytes", guarded)
    entry = j.write_decision("next", "r", "o", "agent", True, timestamp="2024-01-03T00:00:00Z")
    assert entry["prev"] == prev and prev != GENESIS
    assert sum(read) < 200_000 < size  # the tail (and the hot buffer's rebuild), not the 20,000 entries


def test_a_changed_journal_is_not_indexed(journal: MemoryJournal) -> None:
    summary = journal.root / "cold/2024-Q1/summary.md"
    summary.write_text(summary.read_text() + "- 2024-03-31 a decision nobody made\n")
    with pytest.raises(IntegrityError, match=r"refusing to index a changed journal: cold/2024-Q1/summary\.md"):
        journal.build_index([], rebuild=True)


def test_seals_agree_with_sha256sum_and_chain_by_the_documented_formula(journal: MemoryJournal) -> None:
    """An oracle this code did not write: coreutils' sha256sum, and the chain formula with hashlib."""
    newest: dict[str, str] = {}
    prev = GENESIS
    for line in (journal.root / seals.SEALS).read_text().splitlines():
        record = json.loads(line)
        body = {k: v for k, v in record.items() if k != "hash"}
        canonical = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
        assert record["prev"] == prev and record["hash"] == hashlib.sha256(canonical).hexdigest()
        prev = record["hash"]
        if record["sha256"] is not None and "size" not in record:
            newest[record["file"]] = record["sha256"]
    assert {"index.sqlite", SHARD, "cold/2024-Q1/summary.md"} <= set(newest)
    out = subprocess.run(
        ["sha256sum", *newest], cwd=journal.root, check=True, capture_output=True, text=True
    ).stdout.splitlines()
    assert {name: digest for digest, name in (row.split(maxsplit=1) for row in out)} == newest


def _as_an_earlier_schema(journal: MemoryJournal) -> None:
    """The sealed shard as an earlier release left it: another schema, sealed as it is."""
    import sqlite3

    shard = journal.root / SHARD
    shard.chmod(0o644)
    conn = sqlite3.connect(shard)
    with conn:
        conn.execute("UPDATE meta SET value='4' WHERE key='schema_version'")
    conn.close()
    shard.chmod(0o444)
    with journal.lock():
        journal.seal(SHARD)


def test_a_rebuild_brings_sealed_shards_of_an_earlier_schema_up_and_seals_them_again(
    journal: MemoryJournal,
) -> None:
    _as_an_earlier_schema(journal)
    assert journal.verify() == []
    with pytest.raises(MemoryStoreError, match="has index schema 4, expected"):
        ThermalMemory(journal.root)
    journal.build_index([], rebuild=True)
    with ThermalMemory(journal.root, immutable=True) as mem:
        assert mem.count_results("rollout") == 3
    assert journal.verify() == []
    assert seals.sealed_digest(journal.root, SHARD) == hashlib.sha256((journal.root / SHARD).read_bytes()).hexdigest()
    assert oct((journal.root / SHARD).stat().st_mode & 0o777) == "0o444"


def test_the_cli_rebuild_names_the_journal(journal: MemoryJournal) -> None:
    _as_an_earlier_schema(journal)
    done = subprocess.run(
        [sys.executable, "-m", "terminai_apts.cli", "memory", "index", "--rebuild", str(journal.root)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    with ThermalMemory(journal.root) as mem:
        assert mem.count_results("rollout") == 3


def test_a_changed_archive_is_not_rebuilt_into_a_fresh_seal(journal: MemoryJournal) -> None:
    _as_an_earlier_schema(journal)
    archive = journal.root / "cold/2024-Q1/decisions.jsonl"
    archive.write_text(archive.read_text().replace("rollout decision 0", "ROLLOUT decision 0"))
    before = (journal.root / SHARD).read_bytes()
    with pytest.raises(IntegrityError, match="refusing to index a changed journal"):
        journal.build_index([], rebuild=True)
    assert (journal.root / SHARD).read_bytes() == before  # the old shard, still refused as it was
