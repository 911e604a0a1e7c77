from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from terminai_apts import durable
from terminai_apts.errors import EvolutionError, IntegrityError, PathError
from terminai_apts.evolution.snapshots import HMAC_ENV, RollbackManager, load_hmac_key

KEY = b"k" * 32


def _store(tmp_path: Path, key: bytes | None = None) -> RollbackManager:
    mgr = RollbackManager(tmp_path, hmac_key=key)
    mgr.deploy("def f():\n    return 1\n", approver="alice")
    mgr.deploy("def f():\n    return 2\n", approver="bob")
    return mgr


def _edit(tmp_path: Path, fn) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "snapshots.json"
    data = json.loads(path.read_text())
    fn(data)
    path.write_text(json.dumps(data))


def test_roundtrip_and_parentage(tmp_path: Path) -> None:
    _store(tmp_path)
    mgr = RollbackManager(tmp_path)
    assert [s.version for s in mgr.snapshots] == [1, 2]
    assert mgr.get(2).parent == 1 and mgr.current == 2
    assert len(mgr.get(1).sha256) == 64
    assert mgr.verify_integrity() == []


def test_edited_code_with_old_hash_detected_on_load(tmp_path: Path) -> None:
    _store(tmp_path)
    _edit(tmp_path, lambda d: d["snapshots"][0].__setitem__("code", "evil = 1\n"))
    with pytest.raises(IntegrityError, match="v1: sha256 mismatch"):
        RollbackManager(tmp_path)


def test_hmac_mismatch_detected_even_with_rewritten_hash(tmp_path: Path) -> None:
    import hashlib

    _store(tmp_path, KEY)
    evil = "evil = 1\n"

    def tamper(d: dict) -> None:  # type: ignore[type-arg]
        d["snapshots"][1]["code"] = evil
        d["snapshots"][1]["sha256"] = hashlib.sha256(evil.encode()).hexdigest()

    _edit(tmp_path, tamper)
    with pytest.raises(IntegrityError, match="v2: HMAC mismatch"):
        RollbackManager(tmp_path, hmac_key=KEY)


def test_wrong_key_and_missing_key_fail_closed(tmp_path: Path) -> None:
    _store(tmp_path, KEY)
    with pytest.raises(IntegrityError, match="HMAC mismatch"):
        RollbackManager(tmp_path, hmac_key=b"other")
    with pytest.raises(IntegrityError, match="no HMAC key"):
        RollbackManager(tmp_path)


def test_unsigned_store_opened_with_key_fails(tmp_path: Path) -> None:
    _store(tmp_path)
    with pytest.raises(IntegrityError, match="missing HMAC"):
        RollbackManager(tmp_path, hmac_key=KEY)


def test_rollback_verifies_and_refuses_in_memory_corruption(tmp_path: Path) -> None:
    mgr = _store(tmp_path, KEY)
    assert mgr.rollback_to(1).version == 1
    assert RollbackManager(tmp_path, hmac_key=KEY).current == 1
    mgr.get(2).code = "evil = 1\n"
    with pytest.raises(IntegrityError, match="refusing rollback: snapshot v2"):
        mgr.rollback_to(2)
    assert mgr.current == 1
    assert mgr.verify_integrity() == ["snapshot v2: sha256 mismatch (code was modified)"]


def test_verify_reports_every_bad_snapshot(tmp_path: Path) -> None:
    mgr = _store(tmp_path)
    for s in mgr.snapshots:
        s.code += "#"
    assert len(mgr.verify_integrity()) == 2


def test_rollback_unknown_version(tmp_path: Path) -> None:
    with pytest.raises(EvolutionError, match="no snapshot v9"):
        _store(tmp_path).rollback_to(9)


def test_crash_during_persist_keeps_old_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mgr = _store(tmp_path)
    before = (tmp_path / "snapshots.json").read_bytes()

    def crash(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(durable.os, "replace", crash)  # the rename of the one atomic writer
    with pytest.raises(PathError, match="could not write"):
        mgr.deploy("x = 3\n", approver="carol")
    monkeypatch.undo()
    assert (tmp_path / "snapshots.json").read_bytes() == before
    assert mgr.current == 2 and len(mgr.snapshots) == 2
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
    assert RollbackManager(tmp_path).current == 2


def test_key_from_env_and_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(HMAC_ENV, raising=False)
    assert load_hmac_key(None) is None
    kf = tmp_path / "key"
    kf.write_bytes(b"secret\n")
    assert load_hmac_key(kf) == b"secret"
    kf.write_bytes(b"")
    with pytest.raises(EvolutionError, match="empty"):
        load_hmac_key(kf)
    monkeypatch.setenv(HMAC_ENV, "envkey")
    assert load_hmac_key(kf) == b"envkey"
