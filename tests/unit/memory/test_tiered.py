"""ThermalMemory over a journal: the live index plus sealed quarter shards answer like one index of everything."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from terminai_apts.errors import MemoryStoreError
from terminai_apts.memory import store
from terminai_apts.memory.api import ThermalMemory, open_memory
from terminai_apts.memory.journal import MemoryJournal
from terminai_apts.memory.records import Memory, NewMemory
from terminai_apts.memory.tiers import LIVE_INDEX

TODAY = date(2024, 8, 20)
DAYS = ["2024-01-10", "2024-02-11", "2024-03-30", "2024-04-02", "2024-05-03", "2024-07-09", "2024-08-10"]


@pytest.fixture
def journal(tmp_path: Path) -> MemoryJournal:
    j = MemoryJournal(tmp_path / "journal")
    for i, day in enumerate(DAYS):
        topic = "postgres failover" if i % 2 else "deploy rollback"
        j.write_decision(
            f"{topic} decision {i}", f"ticket PROJ-{1000 + i}", "ok", "agent", True, timestamp=f"{day}T10:00:00Z"
        )
    j.update_posture("cautious", "deploy rollback seen", timestamp="2024-02-12T09:00:00Z")
    j.compact(today=TODAY, only="quarterly")  # seals 2024-Q1 and 2024-Q2 into shards
    j.build_index([], rebuild=True)
    return j


@pytest.fixture
def everything(journal: MemoryJournal, tmp_path: Path) -> Path:
    """One plain index of every record, the reference the tiers must agree with."""
    db = tmp_path / "all.db"
    store.build(db, journal.records())
    return db


def _keys(memories: list[Memory]) -> list[tuple[str, str]]:
    return [(m.date, m.title) for m in memories]


def test_tiers_are_sealed_shards_and_a_live_index(journal: MemoryJournal) -> None:
    shards = sorted(p.parent.name for p in journal.root.glob("cold/*/shard.sqlite"))
    assert shards == ["2024-Q1", "2024-Q2"]
    with ThermalMemory(journal.root / LIVE_INDEX) as live:
        assert live.count_results(since="2000-01-01") == 2  # only the open quarter's two decisions
    with ThermalMemory(journal.root) as mem:
        assert mem.count_results(since="2000-01-01") == len(DAYS) + 1


@pytest.mark.parametrize("query", ["deploy", "postgres failover", "PROJ-1003", "cautious", "absent"])
def test_counts_and_chronological_search_match_one_index(journal: MemoryJournal, everything: Path, query: str) -> None:
    with ThermalMemory(journal.root) as tiers, ThermalMemory(everything) as one:
        assert tiers.count_results(query) == one.count_results(query)
        for order in ("newest", "oldest"):
            got, want = tiers.search_results(query, order=order), one.search_results(query, order=order)
            assert got.total == want.total
            assert _keys([h.memory for h in got]) == _keys([h.memory for h in want])
        assert sorted(_keys([h.memory for h in tiers.search_results(query)])) == sorted(
            _keys([h.memory for h in one.search_results(query)])
        )


def test_paging_across_tiers(journal: MemoryJournal, everything: Path) -> None:
    with ThermalMemory(journal.root) as tiers, ThermalMemory(everything) as one:
        pages = [tiers.search_results("decision", order="newest", limit=2, offset=o) for o in (0, 2, 4, 6)]
        flat = [h.memory for p in pages for h in p]
        assert _keys(flat) == _keys([h.memory for h in one.search_results("decision", order="newest")])
        assert pages[0].truncated and not pages[-1].truncated and pages[0].total == len(DAYS)


def test_regex_substring_filter_facets_and_scan(journal: MemoryJournal, everything: Path) -> None:
    with ThermalMemory(journal.root) as tiers, ThermalMemory(everything) as one:
        for pattern in (r"PROJ-100[0-4]", r"decision \d"):
            assert _keys([h.memory for h in tiers.grep_results(pattern)]) == _keys(
                [h.memory for h in one.grep_results(pattern)]
            )
        assert _keys([h.memory for h in tiers.find("failover")]) == _keys([h.memory for h in one.find("failover")])
        first_two = tiers.grep_results(r"decision \d", limit=2)
        assert len(first_two) == 2 and first_two.truncated and first_two[0].memory.date.startswith("2024-08")
        got = tiers.filter_results(source="agent", since="2024-03-01", order="oldest")
        assert _keys([h.memory for h in got]) == _keys(
            [h.memory for h in one.filter_results(source="agent", since="2024-03-01", order="oldest")]
        )
        assert tiers.facets(by="month") == one.facets(by="month")
        assert tiers.facets("deploy", by="source") == one.facets("deploy", by="source")
        text = "".join(b.text for b in tiers.scan())
        assert all(f"decision {i}" in text for i in range(len(DAYS)))
        assert "deploy" in tiers.summarize("deploy rollback")


def test_keys_name_their_tier(journal: MemoryJournal) -> None:
    with ThermalMemory(journal.root) as mem:
        oldest = mem.search_results("decision", order="oldest", limit=1)[0].memory
        assert oldest.key > store.shard_base("2024-Q1") and oldest.key < store.shard_base("2024-Q2")
        got = mem.record(oldest.id)
        assert got == oldest
        trace = mem.trace(oldest.id)
        assert trace is not None and trace.origin.startswith("cold/2024-Q1/") and trace.tier == "cold"
        assert [m.title for m in mem.around(oldest.id, 0, 1)] == [
            "deploy rollback decision 0",
            "postgres failover decision 1",
        ]
        newest = mem.search_results("decision", order="newest", limit=1)[0].memory
        assert newest.key < 1 << store.SHARD_ID_BITS and mem.record(newest.id) == newest
        assert mem.record(store.shard_base("2019-Q1") + 1) is None and mem.trace(10**15) is None
        assert mem.record(str(oldest.key)) is None  # a key is not an id
        with pytest.raises(LookupError):
            mem.require("no-such-id")
        assert mem.dupes(oldest.id) == ()


def test_shards_are_read_only_and_stay_unchanged(journal: MemoryJournal) -> None:
    shard = journal.root / "cold/2024-Q1/shard.sqlite"
    before = shard.read_bytes()
    with ThermalMemory(journal.root) as mem:
        mem.search_results("deploy")
        mem.grep_results("PROJ")
    assert shard.read_bytes() == before
    assert shard.stat().st_mode & 0o777 == 0o444  # sealed for every non-root writer too
    with ThermalMemory(journal.root) as mem, pytest.raises(AttributeError):
        _ = mem._conn  # type: ignore[attr-defined]  # no connection to reach through


def test_open_memory_and_errors(journal: MemoryJournal, everything: Path, tmp_path: Path) -> None:
    assert isinstance(open_memory(journal.root), ThermalMemory)
    assert isinstance(open_memory(everything), ThermalMemory)
    from terminai_apts import memory

    with pytest.warns(DeprecationWarning, match="ThermalMemory opens journal directories"):
        assert memory.TieredMemory is ThermalMemory  # the contract's 1.2.0 name, kept as an alias
    (tmp_path / "empty").mkdir()
    with pytest.raises(MemoryStoreError, match="no live index"):
        ThermalMemory(tmp_path / "empty")


def test_one_ranking_cap_is_spent_newest_tier_first(journal: MemoryJournal, monkeypatch: pytest.MonkeyPatch) -> None:
    from terminai_apts.memory import planner

    monkeypatch.setattr(planner, "RANK_CAP", 2)
    with ThermalMemory(journal.root) as mem:
        res = mem.search_results("decision", order="relevance", exhaustive=False)  # the live index's two use the cap
        assert res.total == len(DAYS)
        assert sorted(h.memory.title for h in res) == ["deploy rollback decision 6", "postgres failover decision 5"]
        assert res.plan.count("counted only") == 2  # both sealed quarters
        full = mem.search_results("decision", order="relevance")
        assert len(full) == len(DAYS) and "counted only" not in full.plan


def test_newest_first_with_old_summaries_in_the_live_index(journal: MemoryJournal, tmp_path: Path) -> None:
    # Summaries stay in warm/ (the live index) whatever their date: tiers overlap in time.
    journal.write_daily_summary("2024-05-03", "decision review of the day")
    journal.write_daily_summary("2024-01-10", "decision review of the day")
    journal.build_index([], rebuild=True)
    one = tmp_path / "one.db"
    store.build(one, journal.records())
    with ThermalMemory(journal.root) as tiers, ThermalMemory(one) as reference:
        for limit in range(1, 12):
            got = tiers.search_results("decision", order="newest", limit=limit)
            want = reference.search_results("decision", order="newest", limit=limit)
            assert _keys([h.memory for h in got]) == _keys([h.memory for h in want]), limit
            assert got.total == want.total == len(DAYS) + 2


def test_one_deadline_for_every_tier(tmp_path: Path) -> None:
    import dataclasses

    from terminai_apts.errors import MemoryQueryError

    from tests.unit.memory.conftest import make_records

    base = make_records()[0]

    def notes(prefix: str, day: str) -> list[NewMemory]:
        return [
            dataclasses.replace(
                base, uid=f"{prefix}{i}", date=f"{day}T00:{i // 60 % 60:02d}:{i % 60:02d}Z", content=f"note {i}"
            )
            for i in range(3000)
        ]

    root = tmp_path / "journal"
    sealed = root / "cold/2023-Q1/shard.sqlite"
    sealed.parent.mkdir(parents=True)
    store.build(root / LIVE_INDEX, notes("live", "2024-05-01"))
    store.build(sealed, notes("cold", "2023-02-01"), first_id=store.shard_base("2023-Q1") + 1)
    with ThermalMemory(root) as mem:
        assert mem.count_results(since="2000-01-01") == 6000  # the default budget is ample
        assert mem.count_results(tags="db", budget_ms=0) == -1
        res = mem.search_results("note", budget_ms=0)
        assert res.truncated and res.total == -1 and res.plan.count("budget") == 2  # both tiers ran out
        res = mem.grep_results("e", budget_ms=0)
        assert res.truncated and res.total == -1 and "budget" in res.plan
        res = mem.filter_results(min_confidence=0.5, budget_ms=0)
        assert res.truncated and res.total == -1
        assert res.plan == "live: filter (budget); 2023-Q1: filter (budget)"
        with pytest.raises(MemoryQueryError, match="facets ran out of its time budget"):
            mem.facets(by="tag", budget_ms=0)
    out_of_time = pytest.raises(MemoryQueryError, match="scan ran out of its time budget")
    with ThermalMemory(root, budget_ms=0) as mem, out_of_time:  # a scan page gets the default budget
        next(mem.scan())
