"""No line stops the journal: verify and compact finish on hostile lines, quarantine keeps
their original bytes, and what a killed writer left is removed by the next ordinary write."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from pathlib import Path

import pytest
from terminai_apts import ledger
from terminai_apts.cli import main
from terminai_apts.memory import store
from terminai_apts.memory.checks import HOT_DECISIONS, QUARANTINE
from terminai_apts.memory.journal import DECISIONS, MemoryJournal

from tests.unit.memory.conftest import make_records

DEAD = 2**22 + 1  # above Linux's largest pid: no process has it


def _journal(root: Path) -> MemoryJournal:
    j = MemoryJournal(root)
    j.write_decision("first", "why", "ok", "agent", True, timestamp="2024-04-02T10:00:00Z")
    j.write_decision("second", "why", "ok", "agent", True, timestamp="2024-04-03T10:00:00Z")
    return j


HOSTILE = {
    "nested 100,000 deep": b"[" * 100_000,
    "objects nested 100,000 deep": b'{"a":' * 100_000,
    "nested 40 deep, parseable": b'{"a":' * 40 + b"1" + b"}" * 40,
    "longer than the line limit": b'{"decision": "' + b"x" * (ledger.MAX_LINE + 1) + b'"}',
    "invalid UTF-8": b'{"decision": "caf\xe9 \xff\xfe"}',
    "a JSON array": b"[1, 2, 3]",
}


@pytest.mark.parametrize("name", HOSTILE)
def test_verify_and_compact_finish_and_keep_the_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    root = tmp_path / "j"
    _journal(root)
    line = HOSTILE[name]
    with open(root / DECISIONS, "ab") as fh:
        fh.write(line + b"\n")
    assert main(["memory", "verify", str(root), "--json"]) == 23
    report = json.loads(capsys.readouterr().out)
    assert [(p["file"], p["line"]) for p in report["problems"]] == [(str(DECISIONS), 3)]
    assert report["problems"][0]["reason"].startswith("corrupt line (")
    assert main(["memory", "compact", str(root), "--only", "quarterly"]) == 0  # quarantines first, as every compact
    capsys.readouterr()
    assert main(["memory", "verify", str(root)]) == 0, capsys.readouterr()
    kept = [json.loads(x) for x in (root / QUARANTINE).read_bytes().splitlines()][-1]
    if "raw_base64" in kept:
        assert base64.b64decode(kept["raw_base64"]) == line
    else:  # too long to keep inline: a file named by its sha256
        assert (root / kept["raw_file"]).read_bytes() == line
        assert kept["raw_sha256"] == hashlib.sha256(line).hexdigest() and kept["raw_size"] == len(line)
    assert [e.data["decision"] for e in MemoryJournal(root).entries()[0]] == ["first", "second"]


def test_a_kept_line_file_that_changes_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "j"
    _journal(root)
    with open(root / DECISIONS, "ab") as fh:
        fh.write(HOSTILE["longer than the line limit"] + b"\n")
    assert main(["memory", "compact", str(root), "--only", "quarterly"]) == 0
    (kept,) = (root / "quarantine").iterdir()
    kept.write_bytes(b"something else")
    capsys.readouterr()
    assert main(["memory", "verify", str(root)]) == 23
    assert "a quarantined line's bytes no longer hash" in capsys.readouterr().err


def test_an_entry_too_long_to_be_a_line_is_refused_before_it_is_written(tmp_path: Path) -> None:
    j = _journal(tmp_path / "j")
    before = (j.root / DECISIONS).read_bytes()
    with pytest.raises(Exception, match="the limit is") as caught:
        j.write_decision("x" * ledger.MAX_LINE, "r", "o", "agent", True)
    assert caught.value.exit_code == 22  # JournalError (docs/EXIT_CODES.md)
    assert (j.root / DECISIONS).read_bytes() == before


def test_a_killed_appends_temp_file_goes_with_the_next_append(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    j = _journal(tmp_path / "j")
    left = j.root / HOT_DECISIONS.parent / f".{HOT_DECISIONS.name}.{DEAD}.tmp"
    left.write_bytes(b"half a buffer")  # what kill -9 between write and rename leaves
    assert main(["memory", "verify", str(j.root)]) == 22  # pending: an interrupted write
    capsys.readouterr()
    j.write_decision("third", "why", "ok", "agent", True)
    assert not left.exists()
    assert main(["memory", "verify", str(j.root)]) == 0, capsys.readouterr()


def test_a_running_writers_temp_file_is_kept(tmp_path: Path) -> None:
    j = _journal(tmp_path / "j")
    mine = j.root / HOT_DECISIONS.parent / f".{HOT_DECISIONS.name}.1.tmp"  # pid 1 runs
    mine.write_bytes(b"x")
    j.write_decision("third", "why", "ok", "agent", True)
    assert mine.exists()


def test_a_killed_index_builds_files_go_with_the_next_update(tmp_path: Path) -> None:
    db = tmp_path / "archive.sqlite"
    store.build(db, make_records())
    left = [tmp_path / f".{db.name}.{DEAD}.tmp", tmp_path / f".{db.name}.{DEAD}.tmp-journal"]
    for path in left:
        path.write_bytes(os.urandom(4096))
    store.append(db, [])  # an ordinary update with nothing new, as `memory index --archive` runs it
    assert not any(path.exists() for path in left)
