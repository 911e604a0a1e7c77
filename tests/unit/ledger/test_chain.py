"""The shared hash chain (``terminai_apts.ledger``) and the one atomic writer (``terminai_apts.durable``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from terminai_apts import durable, ledger


@pytest.mark.parametrize("prev_prefix", [False, True])
def test_walk_reports_parse_link_and_content_per_line(prev_prefix: bool) -> None:
    chain = ledger.Chain(prev_prefix=prev_prefix)
    first = chain.seal({"n": 1}, ledger.GENESIS)
    second = chain.seal({"n": 2}, first["hash"])
    third = chain.seal({"n": 3}, second["hash"])
    lines = [ledger.encode(r).rstrip(b"\n") for r in (first, second, third)]
    assert all(link.ok for link in chain.walk(enumerate(lines, 1)))

    edited = lines[1].replace(b'"n": 2', b'"n": 7')
    found = [(x.number, x.follows, x.intact) for x in chain.walk(enumerate([lines[0], edited, lines[2]], 1))]
    assert found == [(1, True, True), (2, True, False), (3, True, True)]

    found = [(x.number, x.follows, x.intact) for x in chain.walk(enumerate([lines[0], lines[2]], 1))]
    assert found == [(1, True, True), (2, False, True)]

    links = list(chain.walk(enumerate([b"[1, 2]", b"{cut"], 1)))
    assert [(x.record, x.ok) for x in links] == [(None, False), (None, False)]
    # prev=None accepts any first link (the first line of a rotated file).
    assert [x.follows for x in chain.walk(enumerate(lines[1:], 1), prev=None)] == [True, True]


def test_the_two_schemes_hash_differently() -> None:
    body = {"prev": ledger.GENESIS, "x": "é"}
    plain, prefixed = ledger.Chain(prev_prefix=False), ledger.Chain(prev_prefix=True)
    assert plain.digest(body) != prefixed.digest(body)
    assert plain.digest({**body, "hash": "ignored"}) == plain.digest(body)
    assert ledger.canonical(body) == b'{"prev":"' + ledger.GENESIS.encode() + b'","x":"\\u00e9"}'


def test_last_line_reads_lines_longer_than_the_window(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    long = b"x" * 200_000
    path.write_bytes(b"first\n" + long + b"\n")
    fd = os.open(path, os.O_RDONLY)
    try:
        assert ledger.last_line(fd, window=1024) == long
        path.write_bytes(b"")
        assert ledger.last_line(fd) is None
    finally:
        os.close(fd)


HEAVY = ("typing", "dataclasses", "inspect", "click", "docker", "requests", "sigstore", "cryptography")


@pytest.mark.parametrize("module", ["terminai_apts.ledger", "terminai_sandbox.launch.audit"])
def test_the_chain_stays_off_the_heavy_imports(module: str) -> None:
    # The launcher writes its audit ledger on every launch (see tests/unit/launch).
    code = f"import sys; import {module}; print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_durable_write_replaces_whole_or_not_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "state.json"
    durable.write(target, b"old", mode=0o600)
    assert target.read_bytes() == b"old" and target.stat().st_mode & 0o777 == 0o600

    def full(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(OSError, match="No space"):
        durable.write(target, b"new")
    monkeypatch.undo()
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]  # no temporary file left
    durable.write(target, b"new" * 100_000)
    assert target.read_bytes() == b"new" * 100_000
    with pytest.raises(FileNotFoundError):
        durable.write(tmp_path / "missing" / "x", b"")
