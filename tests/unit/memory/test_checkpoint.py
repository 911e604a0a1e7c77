"""The operator's signed checkpoint: a whole-directory rollback to before it is reported.

``memory journal checkpoint ROOT --key KEY --out FILE`` records every chain's length and
last hash with an HMAC; ``TERMINAI_JOURNAL_CHECKPOINT`` makes ``verify`` and every reader
compare the journal with it, ``TERMINAI_JOURNAL_CHECKPOINT_KEY`` also checks its MAC.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from terminai_apts.cli import main
from terminai_apts.errors import IntegrityError, UsageError
from terminai_apts.memory import checkpoint, checks
from terminai_apts.memory.api import ThermalMemory
from terminai_apts.memory.chainfile import CHAIN
from terminai_apts.memory.journal import MemoryJournal

from tests.unit.memory.conftest import indexed_journal

KEY = bytes(range(100, 132))


@pytest.fixture
def operator_key(tmp_path: Path) -> Path:
    path = tmp_path / "operator.key"
    path.write_bytes(KEY)
    return path


def _rolled_back_whole(tmp_path: Path, out: Path) -> Path:
    """A journal checkpointed after a backup was taken, then put back whole from that backup."""
    j = indexed_journal(tmp_path / "j")
    backup = tmp_path / "backup"
    shutil.copytree(j.root, backup)  # .state.json included: an earlier state of itself, byte for byte
    j.write_decision("a newer decision", "why", "ok", "agent", True)
    j.build_index([], rebuild=False)
    j.checkpoint(out, KEY)
    shutil.rmtree(j.root)
    shutil.copytree(backup, j.root)
    return j.root


def test_a_whole_directory_rollback_to_before_the_checkpoint_is_reported_and_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "checkpoints/journal.json"
    out.parent.mkdir()
    root = _rolled_back_whole(tmp_path, out)
    j = MemoryJournal(root)
    assert j.verify() == []  # without the checkpoint, nothing inside the directory can tell
    monkeypatch.setenv(checkpoint.CHECKPOINT_ENV, str(out))
    problems = j.verify()
    assert [p.file for p in problems] == ["warm/decisions/decisions.jsonl", "warm/seals.jsonl"]
    assert all(p.reason.startswith(f"rolled back: the checkpoint {out} saw") for p in problems)
    assert "saw 4 entries" in problems[0].reason and "holds 3" in problems[0].reason
    with pytest.raises(IntegrityError, match="rolled back: the checkpoint"):
        ThermalMemory(root)
    monkeypatch.setenv(checkpoint.KEY_ENV, str(tmp_path / "k"))
    (tmp_path / "k").write_bytes(KEY)
    with pytest.raises(IntegrityError, match="rolled back: the checkpoint"):
        ThermalMemory(root)


def test_a_journal_at_or_past_its_checkpoint_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "cp.json"
    j = indexed_journal(tmp_path / "j")
    j.checkpoint(out, KEY)
    monkeypatch.setenv(checkpoint.CHECKPOINT_ENV, str(out))
    (tmp_path / "k").write_bytes(KEY)
    monkeypatch.setenv(checkpoint.KEY_ENV, str(tmp_path / "k"))
    with ThermalMemory(j.root) as mem:
        assert mem.count_results("rollout") == 3
    j.write_decision("rollout step 9", "why", "ok", "agent", True)
    j.build_index([], rebuild=False)
    assert j.verify() == []
    with ThermalMemory(j.root) as mem:
        assert mem.count_results("rollout") == 4
    j.checkpoint(out, KEY)  # moved forward over an older one
    assert json.loads(out.read_text())["chains"]["decisions"][0] == 4


def test_a_lowered_checkpoint_fails_its_mac_and_another_journals_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "cp.json"
    j = indexed_journal(tmp_path / "j")
    j.write_decision("newer", "why", "ok", "agent", True)
    j.checkpoint(out, KEY)
    body = json.loads(out.read_text())
    body["chains"]["decisions"] = [1, body["chains"]["decisions"][1]]  # hide all but the first
    out.write_text(json.dumps(body))
    monkeypatch.setenv(checkpoint.CHECKPOINT_ENV, str(out))
    (tmp_path / "k").write_bytes(KEY)
    monkeypatch.setenv(checkpoint.KEY_ENV, str(tmp_path / "k"))
    problems = j.verify()
    assert [p.reason for p in problems] == [
        f"the checkpoint's mac does not verify with {checkpoint.KEY_ENV}: forged, or made with another key"
    ]
    with pytest.raises(IntegrityError, match="mac does not verify"):
        ThermalMemory(j.root)
    monkeypatch.delenv(checkpoint.CHECKPOINT_ENV)
    out.unlink()
    other = indexed_journal(tmp_path / "other", word="canary", decisions=4)
    other.checkpoint(out, KEY)
    monkeypatch.setenv(checkpoint.CHECKPOINT_ENV, str(out))
    problems = j.verify()  # the same lengths, other entries
    assert problems and all(p.reason.startswith("rolled back: the checkpoint") for p in problems)


def test_the_mac_is_hmac_sha256_as_openssl_computes_it(tmp_path: Path) -> None:
    out = tmp_path / "cp.json"
    j = indexed_journal(tmp_path / "j")
    made = j.checkpoint(out, KEY)
    body = json.loads(out.read_text())
    assert body == made
    signed = json.dumps({k: v for k, v in body.items() if k != "mac"}, sort_keys=True, separators=(",", ":"))
    digest = subprocess.run(
        ["openssl", "dgst", "-sha256", "-mac", "HMAC", "-macopt", f"hexkey:{KEY.hex()}", "-r"],
        input=signed.encode(),
        capture_output=True,
        check=True,
    ).stdout.split()[0]
    assert digest.decode() == body["mac"]
    assert body["chains"]["decisions"][0] == 3


def test_a_checkpoint_is_refused_for_a_changed_journal_inside_it_or_over_a_newer_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], operator_key: Path
) -> None:
    j = indexed_journal(tmp_path / "j")
    with pytest.raises(UsageError, match="inside the journal"):
        j.checkpoint(j.root / "cp.json", KEY)
    out = tmp_path / "cp.json"
    backup = tmp_path / "backup"
    shutil.copytree(j.root, backup)
    j.write_decision("newer", "why", "ok", "agent", True)
    assert main(["memory", "journal", "checkpoint", str(j.root), "--key", str(operator_key), "--out", str(out)]) == 0
    assert "decisions: 4 entries" in capsys.readouterr().out
    shutil.rmtree(j.root)
    shutil.copytree(backup, j.root)
    with pytest.raises(IntegrityError, match="holds less than the checkpoint"):
        j.checkpoint(out, KEY)
    with pytest.raises(IntegrityError, match="mac does not verify"):
        j.checkpoint(out, bytes(32))
    path = j.root / "warm/decisions/decisions.jsonl"
    path.write_bytes(path.read_bytes().replace(b"rollout step 1", b"rollout step X"))
    code = main(
        ["memory", "journal", "checkpoint", str(j.root), "--key", str(operator_key), "--out", str(out), "--json"]
    )
    assert code == 23
    assert "does not verify" in json.loads(capsys.readouterr().out)["error"]["message"]
    (tmp_path / "short.key").write_bytes(b"short")
    code = main(
        ["memory", "journal", "checkpoint", str(j.root), "--key", str(tmp_path / "short.key"), "--out", str(out)]
    )
    assert code == 2


def test_a_configured_checkpoint_that_is_missing_or_not_one_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    j = indexed_journal(tmp_path / "j")
    out = tmp_path / "cp.json"
    monkeypatch.setenv(checkpoint.CHECKPOINT_ENV, str(out))
    assert [p.reason.split(":")[0] for p in j.verify()] == [f"cannot read the checkpoint ({checkpoint.CHECKPOINT_ENV})"]
    out.write_text('{"kind": "something else"}')
    with pytest.raises(IntegrityError, match="not a journal checkpoint"):
        ThermalMemory(j.root)
    out.unlink()
    os.mkfifo(out)  # nobody writes it: a reader must not wait for one
    with pytest.raises(IntegrityError, match="not a regular file"):
        ThermalMemory(j.root)
    out.unlink()
    out.write_text("[" * 100_000)
    assert [p.reason for p in j.verify()] == [f"not a journal checkpoint ({checkpoint.CHECKPOINT_ENV})"]
    monkeypatch.setenv(checkpoint.CHECKPOINT_ENV, "relative.json")
    with pytest.raises(UsageError, match=checkpoint.CHECKPOINT_ENV):
        j.verify()


def test_a_sandboxed_run_refuses_a_journal_rolled_back_past_its_checkpoint(tmp_path: Path) -> None:
    out = tmp_path / "cp.json"
    root = _rolled_back_whole(tmp_path, out)
    program = 'print(len(thermal.search("rollout")))'

    def run(**env: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "terminai_apts.cli", "exec", "--json", "--db", str(root)]
        clean = {k: v for k, v in os.environ.items() if not k.startswith("TERMINAI_JOURNAL")}
        return subprocess.run(
            command, input=program, capture_output=True, text=True, env={**clean, **env}, timeout=120, check=False
        )

    plain = run()
    assert plain.returncode == 0 and json.loads(plain.stdout)["stdout"] == "3\n"  # an earlier state of itself
    checked = run(TERMINAI_JOURNAL_CHECKPOINT=str(out))
    assert checked.returncode == 23 and "rolled back: the checkpoint" in checked.stderr


def test_after_verify_a_checkpointed_journal_opens_without_a_full_verify(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    j = indexed_journal(tmp_path / "j")
    chain = j.root / "warm/decisions/decisions.jsonl"
    last = json.loads(chain.read_text().splitlines()[-1])
    body = {**{k: v for k, v in last.items() if k not in ("hash", "prev")}, "decision": "written by another tool"}
    entry = CHAIN.seal(body, str(last["hash"]))
    with chain.open("a") as fh:  # a well-chained entry added outside the journal's writers
        fh.write(json.dumps(entry, sort_keys=True) + "\n")
    hot = j.root / "hot/recent_decisions.jsonl"
    hot.write_text(hot.read_text() + json.dumps(entry, sort_keys=True) + "\n")
    assert j.inspect_and_record().problems == []  # what `memory verify` records
    out = tmp_path / "cp.json"
    j.checkpoint(out, KEY)
    monkeypatch.setenv(checkpoint.CHECKPOINT_ENV, str(out))
    calls: list[Path] = []
    real = checks.inspect
    monkeypatch.setattr(checks, "inspect", lambda root: calls.append(root) or real(root))
    with ThermalMemory(j.root) as mem:
        assert mem.count_results("rollout") == 3
    assert calls == []  # the state record counts what verify counted: no more than the checkpoint saw
