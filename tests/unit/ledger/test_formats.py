"""Ledgers written before the shared chain module still verify, extend and fail on tampering.

The fixtures in ``tests/fixtures/ledgers`` were written by the previous, separate
implementations; each test recomputes hashes by the documented formula with ``hashlib``
alone, so a change of on-disk format fails here even if reader and writer change together.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from terminai_apts.errors import IntegrityError
from terminai_apts.executor.host import audit as executor_audit
from terminai_apts.memory.journal import MemoryJournal
from terminai_sandbox.errors import AuditError
from terminai_sandbox.launch import audit as launcher_audit

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "ledgers"
GENESIS = "0" * 64


def _canonical(record: dict[str, object]) -> bytes:
    return json.dumps({k: v for k, v in record.items() if k != "hash"}, sort_keys=True, separators=(",", ":")).encode()


def _plain(record: dict[str, object]) -> str:
    """Launcher audit and memory journal: sha256 of the canonical record without ``hash``."""
    return hashlib.sha256(_canonical(record)).hexdigest()


def _prefixed(record: dict[str, object]) -> str:
    """Executor audit: sha256 of ``prev`` followed by the canonical record without ``hash``."""
    return hashlib.sha256(str(record["prev"]).encode() + _canonical(record)).hexdigest()


def _check_format(
    path: Path, formula: Callable[[dict[str, object]], str], *, first_prev: str | None = GENESIS
) -> list[bytes]:
    """Every line is ``json.dumps(record, sort_keys=True)`` and chains by ``formula``."""
    lines = path.read_bytes().splitlines()
    prev = first_prev
    for line in lines:
        record = json.loads(line)
        assert line == json.dumps(record, sort_keys=True).encode()
        assert record["hash"] == formula(record)
        if prev is not None:
            assert record["prev"] == prev
        prev = record["hash"]
    return lines


@pytest.fixture
def copies(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURES, tmp_path / "ledgers")
    return tmp_path / "ledgers"


def test_the_fixtures_are_in_the_documented_formats() -> None:
    assert len(_check_format(FIXTURES / "launcher-audit.jsonl", _plain)) == 4
    assert len(_check_format(FIXTURES / "executor-audit.jsonl", _prefixed)) == 3
    for name in ("decisions", "posture_history"):
        cold = _check_format(FIXTURES / f"journal/cold/2026-Q1/{name}.jsonl", _plain)
        anchor = (FIXTURES / f"journal/warm/{'decisions/' if name == 'decisions' else ''}{name}.anchor").read_text()
        assert anchor == json.loads(cold[-1])["hash"]
        warm = FIXTURES / f"journal/warm/{'decisions/' if name == 'decisions' else ''}{name}.jsonl"
        _check_format(warm, _plain, first_prev=anchor)


def test_old_ledgers_verify_with_the_shared_chain() -> None:
    assert launcher_audit.verify(FIXTURES / "launcher-audit.jsonl") == 4
    assert executor_audit.verify(FIXTURES / "executor-audit.jsonl") == 3
    assert MemoryJournal(FIXTURES / "journal").verify() == []


def test_extending_old_ledgers_keeps_the_format(copies: Path) -> None:
    launcher = launcher_audit.Ledger(copies / "launcher-audit.jsonl")
    launcher.extend([("preflight", {"image": "r/x"}), ("run", {"code": 0})])
    assert launcher_audit.verify(launcher.path) == 6
    assert len(_check_format(launcher.path, _plain)) == 6

    entry = executor_audit.AuditEntry(
        caller="c", code="x = 1", mode="strict", verdict="ok", guard=None, limits_hit=(), duration_ms=0.5
    )
    executor_audit.record(copies / "executor-audit.jsonl", entry)
    assert executor_audit.verify(copies / "executor-audit.jsonl") == 4
    lines = _check_format(copies / "executor-audit.jsonl", _prefixed)
    assert [json.loads(line)["seq"] for line in lines] == [1, 2, 3, 4]

    journal = MemoryJournal(copies / "journal")
    journal.write_decision("keep going", "fine", "ok", "carol", True, timestamp="2026-04-05T09:00:00.000000Z")
    journal.update_posture("cautious", "again", timestamp="2026-04-06T09:00:00.000000Z")
    assert journal.verify() == []
    anchor = (copies / "journal/warm/decisions/decisions.anchor").read_text()
    assert len(_check_format(copies / "journal/warm/decisions/decisions.jsonl", _plain, first_prev=anchor)) == 3


def _rewrite(path: Path, number: int, change: Callable[[bytes], bytes]) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    lines[number - 1] = change(lines[number - 1])
    path.write_bytes(b"".join(lines))


def _drop(path: Path, number: int) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[: number - 1] + lines[number:]))


def test_tampered_launcher_ledger_fails_with_the_same_messages(copies: Path) -> None:
    path = copies / "launcher-audit.jsonl"
    original = path.read_bytes()
    cases = [
        (lambda: _rewrite(path, 2, lambda b: b.replace(b'"ok": true', b'"ok": false')), "line 2 was edited"),
        (lambda: _drop(path, 2), "line 2 does not follow line 1: a record was removed, inserted or reordered"),
        (lambda: _rewrite(path, 3, lambda b: b[:20] + b"\n"), "line 3 is not valid JSON"),
        # Python keeps the second "event", so the hash matches; a person or grep reads the first.
        (
            lambda: _rewrite(path, 2, lambda b: b'{"event": "exit", ' + b[1:]),
            "line 2 was edited: the key 'event' appears twice",
        ),
        (lambda: _rewrite(path, 2, lambda b: b.replace(b'": ', b'":  ', 1)), "line 2 was edited: not the canonical"),
    ]
    tamper: Callable[[], None]
    for tamper, message in cases:
        path.write_bytes(original)
        tamper()
        with pytest.raises(AuditError, match=message) as caught:
            launcher_audit.verify(path)
        assert caught.value.exit_code == 15
    # A corrupt tail is never extended.
    path.write_bytes(original + b"{cut\n")
    with pytest.raises(AuditError, match=r"last line .* is corrupt; refusing to extend"):
        launcher_audit.Ledger(path).append("run")


def test_tampered_executor_log_fails_with_the_same_messages(copies: Path) -> None:
    path = copies / "executor-audit.jsonl"
    original = path.read_bytes()
    cases = [
        (
            lambda: _rewrite(path, 2, lambda b: b.replace(b'"refused"', b'"ok"')),
            r"audit line 2 was edited \(its hash does not match its content\)",
        ),
        (lambda: _drop(path, 2), "audit chain broken at line 2"),
        (lambda: _rewrite(path, 3, lambda b: b[:20] + b"\n"), "audit line 3 is not a valid entry"),
        (
            lambda: _rewrite(path, 2, lambda b: b'{"caller": "operator", ' + b[1:]),
            "audit line 2 was edited: the key 'caller' appears twice",
        ),
        (lambda: _rewrite(path, 2, lambda b: b.replace(b"agent", b"\\u0061gent", 1)), "audit line 2 was edited: not"),
    ]
    tamper: Callable[[], None]
    for tamper, message in cases:
        path.write_bytes(original)
        tamper()
        with pytest.raises(IntegrityError, match=message) as caught:
            executor_audit.verify(path)
        assert caught.value.exit_code == 23  # IntegrityError (docs/EXIT_CODES.md)


def test_tampered_journal_fails_with_the_same_messages(copies: Path) -> None:
    root = copies / "journal"
    warm = root / "warm/decisions/decisions.jsonl"
    cold = root / "cold/2026-Q1/posture_history.jsonl"
    original_warm, original_cold = warm.read_bytes(), cold.read_bytes()
    cases = [
        (
            lambda: _rewrite(warm, 2, lambda b: b.replace(b'"bob"', b'"eve"')),
            2,
            "entry edited (its hash does not match its content)",
        ),
        (lambda: _drop(warm, 1), 1, "entry removed or reordered before this one"),
        (
            lambda: _rewrite(warm, 1, lambda b: b"not json\n"),
            1,
            "corrupt line (not JSON: expecting value at column 1): `terminai-apts memory compact` quarantines it",
        ),
    ]
    tamper: Callable[[], None]
    for tamper, line, reason in cases:
        warm.write_bytes(original_warm)
        tamper()
        problems = MemoryJournal(root).verify()
        assert [(p.file, p.line, p.reason) for p in problems] == [("warm/decisions/decisions.jsonl", line, reason)]
        with pytest.raises(IntegrityError, match=f"journal chain broken at warm/decisions/decisions.jsonl:{line}"):
            MemoryJournal(root).verify_or_raise()
    # The chain runs across files: the warm file must follow the archived cold file.
    warm.write_bytes(original_warm)
    cold.write_bytes(original_cold + original_cold.splitlines(keepends=True)[0])
    problems = MemoryJournal(root).verify()
    assert [(p.file, p.line) for p in problems] == [("cold/2026-Q1/posture_history.jsonl", 2)]
