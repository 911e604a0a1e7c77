"""Columns the index stores compactly read back exactly as the records were written.

``recorded_at`` equal to the event time, an origin that is a shared prefix and the uid,
and the content hash as 32 bytes are stored once (see ``store._INDEXES``); every reader
(records, ``trace``, ``dupes``) must see the written values, after a build and after
appends that bring a new prefix.
"""

from __future__ import annotations

from pathlib import Path

from terminai_apts.memory import ThermalMemory, store
from terminai_apts.memory.records import NewMemory, content_hash


def _rec(uid: str, day: str, origin: str, recorded: str | None = None, text: str = "same text") -> NewMemory:
    stamp = f"{day}T00:00:00Z"
    return NewMemory(
        uid=uid, date=stamp, recorded_at=recorded or stamp, title="t", content=text, origin=origin, tier="archive"
    )


def test_compact_columns_read_back_as_written(tmp_path: Path) -> None:
    index = tmp_path / "i.db"
    first = [
        _rec("m1", "2024-01-01", "a.db#memories/m1"),
        _rec("m2", "2024-01-02", "a.db#memories/m2", recorded="2025-05-05T10:00:00Z"),
        _rec("m3", "2024-01-03", "notes.md:7", text="other"),
        _rec("x", "2024-01-04", "x"),  # the origin is the uid itself: an empty prefix
    ]
    store.build(index, first)
    store.append(index, [_rec("n1", "2024-02-01", "b.db#memories/n1"), _rec("m4", "2024-02-02", "a.db#memories/m4")])
    written = {r.uid: r for r in [*first, _rec("n1", "2024-02-01", "b.db#memories/n1")]}
    written["m4"] = _rec("m4", "2024-02-02", "a.db#memories/m4")
    with ThermalMemory(index) as mem:
        for uid, rec in written.items():
            got = mem.record(uid)
            assert got is not None
            assert (got.origin, got.recorded_at, got.timestamp) == (rec.origin, rec.recorded_at, rec.date)
            assert got.content_hash == content_hash(rec.title, rec.content)
            prov = mem.trace(uid)
            assert prov is not None and (prov.origin, prov.recorded_at) == (rec.origin, rec.recorded_at)
            assert prov.content_hash == got.content_hash
        same = {m.id for m in mem.dupes("m1")}
        assert same == {"m2", "x", "n1", "m4"}  # same title and content; m3 differs
        assert mem.dupes_of("not hex") == () and mem.dupes_of("00" * 32) == ()
    conn = store.open_writer(index)
    prefixes = sorted(p for (p,) in conn.execute("SELECT prefix FROM origin_prefixes"))
    stored = conn.execute("SELECT count(*) FROM memories WHERE origin = '' AND recorded_at IS NULL").fetchone()[0]
    conn.close()
    assert prefixes == ["", "a.db#memories/", "b.db#memories/"] and stored == 4
