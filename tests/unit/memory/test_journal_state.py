"""Readers answer only from a journal ``verify`` accepts, cheaply; rollbacks leave evidence.

The state record (``.state.json``) says how the journal's writers left each file and how
long each chain was; the outside witness (``TERMINAI_JOURNAL_WITNESS``) keeps the chain
counts where the journal's writer cannot roll them back.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import pytest
from terminai_apts.errors import IntegrityError, UsageError
from terminai_apts.memory import checks, seals, state
from terminai_apts.memory.api import ThermalMemory

from tests.unit.memory.conftest import indexed_journal


def test_an_untouched_journal_is_opened_without_a_full_verify(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    j = indexed_journal(tmp_path / "j")
    calls: list[Path] = []
    real = checks.inspect
    monkeypatch.setattr(checks, "inspect", lambda root: calls.append(root) or real(root))
    with ThermalMemory(j.root) as mem:
        assert mem.count_results("rollout") == 3
    assert calls == []  # fingerprints matched: a stat per file
    (j.root / "warm/decisions/decisions.jsonl").touch()  # changed outside the writers (here: harmlessly)
    with ThermalMemory(j.root) as mem:
        assert mem.count_results("rollout") == 3
    assert calls == [j.root]  # so it was verified whole, and found intact


def test_a_copied_journal_is_verified_whole_and_read(tmp_path: Path) -> None:
    j = indexed_journal(tmp_path / "j")
    copy = tmp_path / "copy"
    shutil.copytree(j.root, copy)  # new inodes and times: nothing matches the record
    with ThermalMemory(copy) as mem:
        assert mem.count_results("rollout") == 3


def test_a_rollback_of_the_chain_and_its_buffer_is_reported_and_refused(tmp_path: Path) -> None:
    j = indexed_journal(tmp_path / "j")
    old = {rel: (j.root / rel).read_bytes() for rel in ("warm/decisions/decisions.jsonl", "hot/recent_decisions.jsonl")}
    j.write_decision("a newer decision", "why", "ok", "agent", True)
    for rel, data in old.items():
        (j.root / rel).write_bytes(data)
    problems = j.verify()
    assert [p.file for p in problems] == ["warm/decisions/decisions.jsonl"]
    assert problems[0].reason.startswith("rolled back: the state record .state.json saw 4 entries")
    with pytest.raises(IntegrityError, match="rolled back"):
        ThermalMemory(j.root)


def test_a_whole_rollback_is_caught_only_by_the_witness(
    tmp_path: Path, witness: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    j = indexed_journal(tmp_path / "j")
    backup = tmp_path / "backup"
    shutil.copytree(j.root, backup)
    j.write_decision("a newer decision", "why", "ok", "agent", True)
    shutil.rmtree(j.root)
    shutil.copytree(backup, j.root)  # every file, the state record included, as it was
    problems = j.verify()
    assert problems and all(p.reason.startswith(f"rolled back: the witness {witness}") for p in problems)
    with pytest.raises(IntegrityError, match="rolled back: the witness"):
        ThermalMemory(j.root)
    monkeypatch.delenv(state.WITNESS_ENV)
    assert j.verify() == []  # without the witness, an earlier state of itself is all there is


def test_a_witness_that_is_not_a_directory_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    j = indexed_journal(tmp_path / "j")
    for value in ("relative/dir", str(tmp_path / "absent")):
        monkeypatch.setenv(state.WITNESS_ENV, value)
        with pytest.raises(UsageError, match=state.WITNESS_ENV):
            j.write_decision("x", "r", "o", "agent", True)


def test_a_reader_waits_for_a_writer_instead_of_failing(tmp_path: Path) -> None:
    j = indexed_journal(tmp_path / "j")
    answers: list[int] = []
    failures: list[BaseException] = []
    inside = threading.Event()

    def writer() -> None:
        with j.lock():  # what `memory index` does: withdraw the seal, write, seal again
            seals.record(j.root, checks.LIVE_INDEX, None, j._torn(str(seals.SEALS)))
            inside.set()
            time.sleep(0.5)
            j.seal(checks.LIVE_INDEX)

    def reader() -> None:
        try:
            with ThermalMemory(j.root) as mem:
                answers.append(mem.count_results("rollout"))
        except BaseException as exc:
            failures.append(exc)

    w = threading.Thread(target=writer)
    w.start()
    inside.wait()
    r = threading.Thread(target=reader)
    r.start()
    w.join()
    r.join()
    assert not failures and answers == [3]


def test_a_file_changed_by_hand_is_not_blessed_by_the_next_write(tmp_path: Path) -> None:
    j = indexed_journal(tmp_path / "j")
    chain = j.root / "warm/decisions/decisions.jsonl"
    lines = chain.read_bytes().splitlines(keepends=True)
    chain.write_bytes(lines[0].replace(b"rollout", b"ROLLOUT") + b"".join(lines[1:]))
    j.update_posture("cautious", "an ordinary write after the edit")
    with pytest.raises(IntegrityError, match=r"decisions\.jsonl:1: entry edited"):
        ThermalMemory(j.root)


def test_the_state_record_is_never_renamed_over_and_a_writer_killed_mid_swap_leaves_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    j = indexed_journal(tmp_path / "j")
    renames: list[tuple[str, str]] = []
    real = os.rename

    def watch(src: str, dst: str) -> None:
        renames.append((Path(str(src)).name, Path(str(dst)).name))
        assert not Path(str(dst)).exists(), f"{dst} renamed over (ext4 flushes {src} first)"
        real(src, dst)

    monkeypatch.setattr(os, "rename", watch)
    j.write_decision("a newer decision", "why", "ok", "agent", True)
    assert (state.STATE, state.PREVIOUS) in renames
    assert not (j.root / state.PREVIOUS).exists()
    saw = (state.load(j.root) or {})["chains"]["decisions"]
    # A writer killed between its two renames: only the record before the newest is there.
    (j.root / state.STATE).rename(j.root / state.PREVIOUS)
    assert (state.load(j.root) or {})["chains"]["decisions"] == saw
    assert j.verify() == []  # a mutable file, not an unexpected one
    old = (j.root / "warm/decisions/decisions.jsonl").read_bytes()
    j.write_decision("newest", "why", "ok", "agent", True)
    (j.root / "warm/decisions/decisions.jsonl").write_bytes(old)
    (j.root / state.STATE).rename(j.root / state.PREVIOUS)
    assert any("rolled back" in p.reason for p in j.verify())  # the fallback is evidence too
