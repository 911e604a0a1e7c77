"""Red-team attacks on the journal's state record, keyed chains and witness.

Each test asserts a documented guarantee (docs/MEMORY_API.md: "What readers check",
"Rollback evidence", "Forgery"). A failing test is a hole found.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from terminai_apts import errors, ledger
from terminai_apts.memory import seals, state
from terminai_apts.memory.api import ThermalMemory
from terminai_apts.memory.chainfile import CHAIN
from terminai_apts.memory.journal import DECISIONS
from terminai_apts.memory.journal_files import fingerprint

from tests.unit.memory.conftest import indexed_journal

pytestmark = pytest.mark.slow  # in `make test`, not in `make test-fast`


def _read_outcome(root: Path, word: str = "rollout") -> str:
    """What a reader does: 'refused' (a project error) or the answer it gave."""
    try:
        with ThermalMemory(root) as mem:
            return f"answered {mem.count_results(word)}"
    except errors.AptsError:
        return "refused"


# ---------------------------------------------------------------- attacks that once got through


def test_an_append_to_an_edited_chain_does_not_bless_the_edit(tmp_path: Path) -> None:
    """Guarantee 5/2: the edited file is the one the next write appends to."""
    j = indexed_journal(tmp_path / "j")
    chain = j.root / DECISIONS
    lines = chain.read_bytes().splitlines(keepends=True)
    chain.write_bytes(lines[0].replace(b"rollout", b"ROLLOUT") + b"".join(lines[1:]))
    j.write_decision("an ordinary later decision", "why", "ok", "agent", True)
    assert j.verify(), "verify must reject the edited line"
    assert _read_outcome(j.root) == "refused"


def test_a_symlinked_chain_cannot_be_rolled_back_behind_the_readers_back(tmp_path: Path) -> None:
    """Guarantee 2/3: lstat fingerprints of a symlink do not change when its target does."""
    j = indexed_journal(tmp_path / "j")
    chain = j.root / DECISIONS
    outside = tmp_path / "outside.jsonl"
    shutil.copy2(chain, outside)
    chain.unlink()
    os.symlink(outside, chain)
    j.write_decision("rollout step 3", "why", "ok", "agent", True, timestamp="2026-11-05T10:00:00Z")
    outside.write_bytes(b"".join(outside.read_bytes().splitlines(keepends=True)[:2]))  # rollback 4 -> 2
    assert any(p.reason.startswith("rolled back") for p in j.verify())
    assert _read_outcome(j.root) == "refused"


def test_a_keyed_journal_never_serves_an_index_sealed_by_a_forged_seal(key_file: Path, tmp_path: Path) -> None:
    """Guarantee 4/2: no READ returns text no writer wrote from a keyed journal.

    First attempt: index.sqlite and warm/seals.jsonl made symlinks to byte-identical copies
    (so that a later swap of the targets would not change what was recorded): refused at
    once. Second: the other journal's index copied in, with a seal record for it that has
    a correct hash (and stat) but no mac.
    """
    j = indexed_journal(tmp_path / "j")
    other = indexed_journal(tmp_path / "other", word="FORGED")
    outside = tmp_path / "outside"
    outside.mkdir()
    saved = {}
    for rel in ("index.sqlite", "warm/seals.jsonl"):
        path = j.root / rel
        saved[rel] = path.read_bytes()
        shutil.copy2(path, outside / path.name)
        path.unlink()
        os.symlink(outside / path.name, path)
    assert {p.file for p in j.inspect_and_record().problems} >= {"index.sqlite", "warm/seals.jsonl"}
    assert _read_outcome(j.root, "rollout") == "refused"
    for rel, data in saved.items():
        (j.root / rel).unlink()
        (j.root / rel).write_bytes(data)
    index = j.root / "index.sqlite"
    shutil.copyfile(other.root / "index.sqlite", index)
    last = json.loads((j.root / "warm/seals.jsonl").read_bytes().splitlines()[-1])
    body = {"kind": "seal", "file": "index.sqlite", "sha256": seals.digest_file(index), "ts": last["ts"]}
    body["stat"] = fingerprint(index)
    with open(j.root / "warm/seals.jsonl", "ab") as fh:
        fh.write(ledger.encode(CHAIN.seal(body, str(last["hash"]))))
    assert any("not signed with the journal key" in p.reason for p in j.verify())
    assert _read_outcome(j.root, "FORGED") == "refused"
    assert seals.index_problem(j.root, "index.sqlite") is not None  # the index check alone refuses it too


def test_the_witness_is_not_dragged_back_by_an_edited_state_record(
    tmp_path: Path, witness: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Guarantee 3: edit .state.json's count, let one ordinary write copy it to the witness, roll back."""
    j = indexed_journal(tmp_path / "j")
    backup = tmp_path / "backup"
    shutil.copytree(j.root, backup)
    for i in range(3, 6):
        j.write_decision(f"rollout step {i}", "why", "ok", "agent", True, timestamp=f"2026-11-0{i + 1}T10:00:00Z")
    first = json.loads((j.root / DECISIONS).read_bytes().splitlines()[0])["hash"]
    record = json.loads((j.root / state.STATE).read_bytes())
    record["chains"]["decisions"] = [1, first]  # the agent edits the bookkeeping
    (j.root / state.STATE).write_text(json.dumps(record))
    j.write_decision("rollout step 6", "why", "ok", "agent", True, timestamp="2026-11-08T10:00:00Z")
    shutil.rmtree(j.root)
    shutil.copytree(backup, j.root)  # whole-directory rollback: 7 entries -> 3
    assert any("rolled back: the witness" in p.reason for p in j.verify())
    assert _read_outcome(j.root) == "refused"


def test_a_negative_count_in_the_state_record_is_not_a_crash(tmp_path: Path) -> None:
    j = indexed_journal(tmp_path / "j", decisions=1)
    record = json.loads((j.root / state.STATE).read_bytes())
    record["chains"]["decisions"] = [-1, "x"]
    (j.root / state.STATE).write_text(json.dumps(record))
    (j.root / "hot/recent_decisions.jsonl").touch()  # any mismatch: the full verify runs
    try:
        j.verify()
        _read_outcome(j.root)
    except errors.AptsError:
        pass  # a project error is fine; IndexError is not


def test_a_non_numeric_count_with_a_witness_is_not_a_crash(
    tmp_path: Path, witness: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    j = indexed_journal(tmp_path / "j")
    record = json.loads((j.root / state.STATE).read_bytes())
    record["chains"]["decisions"] = ["a", "b"]  # files untouched: the fast path compares with the witness
    (j.root / state.STATE).write_text(json.dumps(record))
    _read_outcome(j.root)  # TypeError would escape here


def _reader_in_subprocess(root: Path, timeout: float) -> subprocess.CompletedProcess[str] | None:
    code = textwrap.dedent(f"""
        from terminai_apts.memory.api import ThermalMemory
        try:
            ThermalMemory({str(root)!r}).close()
            print("answered")
        except Exception as exc:
            print("refused", type(exc).__name__)
    """)
    try:
        return subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return None


def test_a_state_record_that_is_a_fifo_does_not_hang_readers(tmp_path: Path) -> None:
    j = indexed_journal(tmp_path / "j")
    (j.root / state.STATE).unlink()
    os.mkfifo(j.root / state.STATE)
    assert _reader_in_subprocess(j.root, timeout=20) is not None, "reader hung on .state.json"


def test_a_lock_that_is_a_fifo_does_not_hang_readers(tmp_path: Path) -> None:
    j = indexed_journal(tmp_path / "j")
    (j.root / ".lock").unlink()
    os.mkfifo(j.root / ".lock")
    (j.root / "hot/recent_decisions.jsonl").touch()  # a mismatch: the reader looks at the lock
    assert _reader_in_subprocess(j.root, timeout=40) is not None, "reader hung on .lock (bound is 30 s)"


# ---------------------------------------------------------------- attacks that held when written


def test_an_edit_with_restored_mtime_and_size_is_refused(tmp_path: Path) -> None:
    j = indexed_journal(tmp_path / "j")
    chain = j.root / DECISIONS
    info = chain.stat()
    chain.write_bytes(chain.read_bytes().replace(b"rollout step 0", b"ROLLOUT step 0"))
    os.utime(chain, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert chain.stat().st_size == info.st_size
    assert _read_outcome(j.root) == "refused"


def test_a_sealed_index_replaced_by_a_hard_link_is_refused(tmp_path: Path) -> None:
    j = indexed_journal(tmp_path / "j")
    other = indexed_journal(tmp_path / "other", word="FORGED")
    (j.root / "index.sqlite").unlink()
    os.link(other.root / "index.sqlite", j.root / "index.sqlite")
    assert _read_outcome(j.root, "FORGED") == "refused"


@pytest.mark.parametrize(
    "respell",
    [
        lambda line: line.replace(b"\n", b"\r\n"),
        lambda line: line.replace(b'"decision": ', b'"decision": "x", "decision": ', 1),
        lambda line: line.replace(b"rollout", b"r\\u006fllout", 1),
    ],
    ids=["crlf", "duplicate-key", "escape"],
)
def test_respelled_lines_are_refused(tmp_path: Path, respell) -> None:  # type: ignore[no-untyped-def]
    j = indexed_journal(tmp_path / "j")
    chain = j.root / DECISIONS
    lines = chain.read_bytes().splitlines(keepends=True)
    chain.write_bytes(respell(lines[0]) + b"".join(lines[1:]))
    assert j.verify()
    assert _read_outcome(j.root) == "refused"


def test_a_forged_state_record_matching_an_edit_is_refused(tmp_path: Path) -> None:
    """Rewrite .state.json so the fingerprints match an edited chain: the index is what answers."""
    j = indexed_journal(tmp_path / "j")
    other = indexed_journal(tmp_path / "other", word="FORGED")
    shutil.copyfile(other.root / "index.sqlite", j.root / "index.sqlite")
    record = json.loads((j.root / state.STATE).read_bytes())
    record["files"] = state.snapshot(j.root)
    (j.root / state.STATE).write_text(json.dumps(record))
    assert _read_outcome(j.root, "FORGED") == "refused"
