"""No ledger seals a lone surrogate: every line is strict UTF-8 whose JSON strings are valid text.

A lone surrogate reaches a string from non-UTF-8 bytes (``os.fsdecode`` of an argument or a
path) or from a JSON ``\\udcff`` escape. ``json.dumps`` would write it as that escape: ASCII,
yet a string no strict reader accepts. Each of the three ledgers is written through its
own writer and read back strictly.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from terminai_apts import ledger
from terminai_apts.executor.host import audit
from terminai_sandbox.launch import audit as launch_audit

NOT_UTF8 = os.fsdecode(b"agent-\xff\xfe")  # what a non-UTF-8 argument becomes


def _strict(value: object) -> None:
    if isinstance(value, str):
        value.encode("utf-8")  # strict: a lone surrogate raises
    elif isinstance(value, dict):
        for key, item in value.items():
            _strict(key)
            _strict(item)
    elif isinstance(value, list):
        for item in value:
            _strict(item)


def read_strictly(path: Path) -> list[dict[str, object]]:
    """Every line: strict UTF-8, JSON, and every string in it valid text."""
    records = []
    for line in path.read_bytes().decode("utf-8", "strict").splitlines():
        record = json.loads(line)
        _strict(record)
        records.append(record)
    return records


def _executor_entry(caller: str, code: str) -> audit.AuditEntry:
    return audit.AuditEntry(
        caller=caller, code=code, mode="high", verdict="ok", guard=None, limits_hit=(), duration_ms=1.0
    )


def test_the_executor_audit_log_escapes_lone_surrogates(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    audit.record(log, _executor_entry(NOT_UTF8, "x = '\udcff'\nprint(x)"))
    audit.record(log, _executor_entry("cli", "print(1)"))
    first, second = read_strictly(log)
    assert first["caller"] == "agent-\\udcff\\udcfe"  # the escape, readable, six characters each
    assert first["preview"] == "x = '\\udcff'\nprint(x)"
    assert second["caller"] == "cli"
    assert audit.verify(log) == 2  # the chain covers what was written


def test_the_launcher_ledger_escapes_lone_surrogates(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    launch_audit.Ledger(path).append("start", command=["sh", "-c", NOT_UTF8], **{NOT_UTF8: 1})
    (record,) = read_strictly(path)
    assert record["command"] == ["sh", "-c", "agent-\\udcff\\udcfe"]
    assert record["agent-\\udcff\\udcfe"] == 1
    assert launch_audit.verify(path) == 1


def test_without_the_escape_the_log_would_hold_what_strict_readers_refuse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ledger, "text_safe", lambda value: value)
    log = tmp_path / "audit.jsonl"
    audit.record(log, _executor_entry(NOT_UTF8, "print(1)"))
    with pytest.raises(UnicodeEncodeError):
        read_strictly(log)


def test_valid_text_is_sealed_unchanged() -> None:
    body = {"caller": "agent ü 中 \U0001f600", "args": ["a", "b"], "n": 1, "none": None}
    assert ledger.text_safe(body) == body
    sealed = ledger.Chain(prev_prefix=False).seal(body, ledger.GENESIS)
    assert {k: sealed[k] for k in body} == body
