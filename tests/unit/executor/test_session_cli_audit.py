"""Sessions, the CLI and the hash-chained audit log (layer 8)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from terminai_apts.errors import IntegrityError
from terminai_apts.executor import ExecutorSession, SandboxConfig, execute
from terminai_apts.executor.host import audit

CFG = SandboxConfig(timeout_seconds=3)


def test_session_shares_state_across_cells() -> None:
    with ExecutorSession(CFG) as session:
        assert session.run("def sq(x):\n    return x * x\ndata = [1, 2, 3]").success
        result = session.run("print([sq(v) for v in data])")
        assert result.stdout == "[1, 4, 9]\n"
        assert session.run("print(undefined_name)").error_type == "NameError"
        assert session.run("print(len(data))").stdout == "3\n"  # errors keep the session


def test_session_ends_cleanly_on_limit() -> None:
    with ExecutorSession(SandboxConfig(timeout_seconds=1)) as session:
        assert session.run("while True:\n    pass").timed_out
        after = session.run("print(1)")
        assert after.error_type == "SessionClosed" and session.closed


def test_session_idle_timeout_and_lifetime() -> None:
    with ExecutorSession(CFG, idle_timeout=0.2) as session:
        assert session.run("x = 1").success
        time.sleep(0.3)
        assert session.run("print(x)").error_type == "SessionClosed"
    with ExecutorSession(CFG, max_lifetime=0.2) as session:
        time.sleep(0.3)
        assert session.run("print(1)").error_type == "SessionClosed"


def test_session_refusal_does_not_end_session() -> None:
    with ExecutorSession(CFG) as session:
        session.run("x = 2")
        assert not session.run("import os").success
        assert session.run("print(x)").stdout == "2\n"


def _cli(args: list[str], stdin: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "terminai_apts.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_cli_exec_json_and_exit_codes() -> None:
    ok = _cli(["exec", "--json"], "print(6 * 7)")
    assert ok.returncode == 0 and json.loads(ok.stdout)["stdout"] == "42\n"
    refused = _cli(["exec", "--json", "--mode", "strict"], "import math")
    data = json.loads(refused.stdout)
    assert refused.returncode == 1 and data["violations"] and not data["success"]
    slow = _cli(["exec", "--json", "--timeout", "1"], "while True:\n    pass")
    assert slow.returncode == 1 and json.loads(slow.stdout)["timed_out"]
    missing = _cli(["exec", "--json", "--db", "/nonexistent.db"], "print(1)")
    assert missing.returncode == 2 and "not found" in missing.stderr


def test_cli_repl_json_lines() -> None:
    lines = '{"code": "x = 40"}\n{"code": "print(x + 2)"}\nnot json\n'
    done = _cli(["repl", "--json"], lines)
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert replies[1]["stdout"] == "42\n" and replies[2]["error_type"] == "UsageError"


def test_audit_chain_and_tamper_detection(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    cfg = SandboxConfig(timeout_seconds=3, audit_path=str(log), caller_id="agent-7")
    execute("print(1)", cfg)
    execute("import os", cfg)
    execute("print(2)", cfg)
    assert audit.verify(log) == 3
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert [e["verdict"] for e in entries] == ["ok", "refused", "ok"]
    assert entries[1]["guard"] == "L2-validate" and entries[0]["caller"] == "agent-7"
    lines = log.read_text().splitlines()
    edited = lines[1].replace('"refused"', '"ok"')
    log.write_text("\n".join([lines[0], edited, lines[2]]) + "\n")
    with pytest.raises(IntegrityError):
        audit.verify(log)
    log.write_text("\n".join([lines[0], lines[2]]) + "\n")
    with pytest.raises(IntegrityError):
        audit.verify(log)


def test_audit_rotation_is_bounded(tmp_path: Path) -> None:
    log = tmp_path / "a.jsonl"
    entry = audit.AuditEntry(
        caller="c", code="x" * 200, mode="high", verdict="ok", guard=None, limits_hit=(), duration_ms=1.0
    )
    for _ in range(40):
        audit.record(log, entry, max_bytes=2_000, backups=2)
    assert sorted(p.name for p in tmp_path.glob("a.jsonl*") if not p.name.endswith("lock")) == [
        "a.jsonl",
        "a.jsonl.1",
        "a.jsonl.2",
    ]
    assert audit.verify(log) >= 1


def test_session_memory_limit_ends_session() -> None:
    with ExecutorSession(SandboxConfig(max_memory_mb=64, timeout_seconds=5)) as session:
        assert session.run("keep = [1, 2]").success
        assert session.run("x = 'a' * (200 * 1024 * 1024)").memory_exceeded
        assert session.run("print(keep)").error_type == "SessionClosed"


def test_host_never_limits_itself() -> None:
    import resource

    before = [
        resource.getrlimit(r)
        for r in (resource.RLIMIT_AS, resource.RLIMIT_CPU, resource.RLIMIT_FSIZE, resource.RLIMIT_NPROC)
    ]
    execute("print(1)", CFG)
    after = [
        resource.getrlimit(r)
        for r in (resource.RLIMIT_AS, resource.RLIMIT_CPU, resource.RLIMIT_FSIZE, resource.RLIMIT_NPROC)
    ]
    assert before == after


def test_sandbox_classes_are_writable_stdlib_classes_are_not() -> None:
    assert execute("class A:\n    pass\nA.n = 1\nprint(A.n)", CFG).stdout == "1\n"
    assert not execute("import collections\ncollections.Counter.n = 1", CFG).success
