"""ThermalMemory: every method, hostile query text, budgets and read-only enforcement."""

from __future__ import annotations

import dataclasses
import hashlib
import sqlite3
from pathlib import Path

import pytest
from terminai_apts.errors import MemoryStoreError, UsageError
from terminai_apts.memory import store
from terminai_apts.memory.api import ThermalMemory
from terminai_apts.memory.cli import import_archive
from terminai_apts.memory.records import Memory
from terminai_apts.memory.shard import Shard


def test_search_ranks_and_reports(index: Path) -> None:
    with ThermalMemory(index) as mem:
        # The seed's search: a substring of title or content, not a set of words.
        assert mem.search_results("deploy secret").total == 0
        res = mem.search_results("deploy secret", order="relevance")  # the ranked, word-based extension
        assert res.total == 3 and not res.truncated and res.plan.startswith("fts-and")
        assert all(isinstance(h.memory, Memory) for h in res)
        assert isinstance(res.hits, tuple) and isinstance(res.hits[0].memory.tags, tuple)
        newest = mem.search_results("deploy")  # newest first by default
        assert [h.memory.date for h in newest] == ["2024-05-01", "2024-03-16", "2024-03-15"]
        assert mem.search_results("deploy", order="oldest")[0].memory.date == "2024-03-15"
        assert mem.search_results("deploy", limit=1).truncated
        assert len(mem.search_results("deploy", limit=1000)) == 3  # fewer exist
        with pytest.raises(UsageError, match="at most 10000"):
            mem.search_results("deploy", limit=10_001)  # refused by name, never silently cut


def test_search_counts_its_total_up_to_a_cap(index: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from terminai_apts.memory import planner

    with ThermalMemory(index) as mem:
        assert mem.search_results("deploy", limit=1).total == 3
        monkeypatch.setattr(planner, "COUNT_CAP", 1)
        res = mem.search_results("deploy", limit=1)  # 3 matches, counted only up to 1 + 1
        assert res.total == -1 and res.truncated and "count() gives it" in res.plan
        assert [h.memory.date for h in res] == ["2024-05-01"] and mem.count_results("deploy") == 3


def test_search_relaxes_and_to_or(index: Path) -> None:
    with ThermalMemory(index) as mem:
        res = mem.search_results("postgres kubernetes", order="relevance")
        assert "relaxed" in res.plan and res.total == 2
        assert mem.count_results("postgres kubernetes", words=True) == 0


def test_seed_precedence_bug_is_gone(index: Path) -> None:
    # The seed's "WHERE a OR b AND date" matched out-of-window rows; a window must hold.
    with ThermalMemory(index) as mem:
        res = mem.search_results("deploy", date_range=("2024-03-16", "2024-03-31"))
        assert [h.memory.title for h in res] == ["Deploy fixed"]
        assert mem.search_results("deploy", since="2024-04-01").total == 1
        assert mem.search_results("deploy", until="2024-03-15").total == 1  # date-only: whole day inclusive
        assert mem.search_results("deploy", tags=["incident"]).total == 2


@pytest.mark.parametrize(
    "text",
    [
        "PROJ-1234",
        "v2.1",
        "user's",
        '"',
        "*",
        "NEAR",
        "NEAR(a b)",
        "(unbalanced",
        "a)",
        "AND",
        "OR",
        "NOT",
        "",
        "   ",
        "col:value",
        "src/a.py",
        "C++",
        "what did we decide about postgres?",
        "e-mail",
        "^",
        "a\x00b",
    ],
)
def test_hostile_query_text_never_errors(index: Path, text: str) -> None:
    with ThermalMemory(index) as mem:
        res = mem.search_results(text)
        assert res.total >= 0
        mem.count_results(text)
        mem.facets(text)
        mem.summarize(text)


def test_hostile_tokens_find_their_records(index: Path) -> None:
    with ThermalMemory(index) as mem:
        assert mem.search_results("PROJ-1234").total == 1
        assert mem.search_results("v2.1").total == 1
        assert mem.search_results("user's").total == 1


def test_raw_mode_operators_and_errors(index: Path) -> None:
    with ThermalMemory(index) as mem:
        assert mem.search_results("deploy OR postgres", raw=True).total == 4
        assert mem.search_results("postg*", raw=True).total == 2
        with pytest.raises(UsageError):
            mem.search_results("PROJ-1234 (", raw=True)


def test_grep_prefilter_and_verify(index: Path) -> None:
    with ThermalMemory(index) as mem:
        res = mem.grep_results(r"timeout after \d{5}ms")
        assert res.total == 1 and "trigram" in res.plan and "30000ms" in res[0].snippet
        full = mem.grep_results(r"\d+ms|v\d")
        assert "full-scan" in full.plan and full.total == 2
        with pytest.raises(UsageError, match="bad regular expression"):
            mem.grep_results("(unclosed")
        # Nested repetition is linear on RE2: it runs instead of being refused.
        assert mem.grep_results("(a+)+b").total == 0 and "re2" in mem.grep_results("(a+)+b").plan
        assert mem.grep_results("(x*)*y").total == 3  # the "y" of "deploy"


def test_budget_returns_partial(index: Path) -> None:
    with ThermalMemory(index) as mem:
        res = mem.grep_results("e", budget_ms=0)
        assert res.truncated and res.total == -1 and "budget" in res.plan


def test_every_call_honours_its_budget(tmp_path: Path) -> None:
    from tests.unit.memory.conftest import make_records

    base = make_records()[0]
    db = tmp_path / "big.db"
    store.build(
        db,
        [
            dataclasses.replace(
                base, uid=f"b{i}", date=f"2024-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z", content=f"note {i}"
            )
            for i in range(5000)
        ],
    )
    with ThermalMemory(db) as mem:
        assert mem.count_results(since="2023-01-01") == 5000  # the default budget is ample
        assert mem.count_results(tags="db", budget_ms=0) == -1
        res = mem.filter_results(min_confidence=0.5, budget_ms=0)
        assert res.truncated and res.total == -1 and "budget" in res.plan
        with pytest.raises(UsageError, match="time budget"):
            mem.facets(by="tag", budget_ms=0)
        assert len(mem.facets(by="tag")) == 2


def test_find_filter_get_and_friends(index: Path) -> None:
    with ThermalMemory(index) as mem:
        assert mem.find("proj-12").total == 1
        assert mem.find("pg").total == 0 and "piece-bitmap" in mem.find("pg").plan
        f = mem.filter_results(source="ops", min_confidence=0.9)
        assert [h.memory.title for h in f] == ["Deploy fixed"]
        # Inclusive bounds, as the seed's `date >= ?` and `date <= ?`.
        assert mem.filter_results(date_after="2024-03-16T11:00:00Z").total == 2
        assert mem.filter_results(date_after="2024-03-16").total == 2
        assert mem.filter_results(date_before="2024-03-15").total == 3
        assert mem.filter_results(date_after="2024-03-15", date_before="2024-03-16").total == 2
        assert mem.filter_results(tags="infra,incident").total == 4  # any of the tags, as the seed's OR
        assert mem.filter_results(tags=["incident"]).total == 2
        assert mem.filter_results(kind="note", order="oldest")[0].memory.date == "2024-01-05"
        first = mem.record("u0")
        assert first is not None and first.title == "Postgres migration plan" and first.id == "u0"
        assert mem.record("u999") is None and mem.record(999) is None  # the seed's None, no exception
        with pytest.raises(LookupError, match="no memory with id 'u999'"):
            mem.require("u999")
        with pytest.raises(dataclasses.FrozenInstanceError):
            first.title = "x"  # type: ignore[misc]
        assert [m.id for m in mem.around("u2", before=1, after=1)] == ["u1", "u2", "u3"]
        prov = mem.trace("u2")
        assert prov is not None and prov.origin == "test:2" and prov.tier == "warm" and prov.id == "u2"
        assert [m.id for m in mem.dupes("u2")] == ["u4"]
        assert mem.count_results() == 5 and mem.count_results(since="2024-03-01") == 3
        assert [(f.key, f.count) for f in mem.facets("deploy", by="month")] == [("2024-03", 2), ("2024-05", 1)]
        assert mem.facets(by="tag")[0].key == "infra"
        assert mem.facets(by="source")[0].key == "ops"
        text = mem.summarize("postgres")
        assert text.splitlines()[0] == "Found 2 memories for 'postgres':"
        assert text.splitlines()[3].startswith("  [2024-01-05") and "Postgres migration plan" in text.splitlines()[3]
        assert mem.summarize("zzzz") == "No memories found matching 'zzzz'"
        batches = list(mem.scan(max_chars=200))
        assert sum(len(b.ids) for b in batches) == 5 and all(len(b.text) <= 200 for b in batches)
        assert batches[0].ids[0] == "u0" and batches[0].text.startswith("[u0] 2024-01-05 ")  # ids get() takes
        with pytest.raises(UsageError):
            mem.search_results("x", order="sideways")
        with pytest.raises(UsageError, match="not a valid date"):
            mem.search_results("x", since="last tuesday")
        with pytest.raises(UsageError):
            mem.facets(by="colour")


def test_relative_since(index: Path) -> None:
    with ThermalMemory(index) as mem:
        assert mem.count_results(since="7d") == 0
        assert mem.count_results(since="100000d") == 5


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_no_write_path(index: Path) -> None:
    before = _sha(index)
    with ThermalMemory(index) as mem:
        assert not any(hasattr(mem, n) for n in ("sql", "execute", "connection", "conn", "cursor"))
    shard = Shard(index)
    conn = shard._conn  # what an escape past the executor's wrapper would reach
    attacks = [
        "INSERT INTO memories(uid, date, recorded_at, title, content, summary, tags, source, confidence, kind, tier,"
        " origin, content_hash) VALUES ('x','d','d','t','c','s','','','1','k','t','o','h')",
        "UPDATE memories SET title='pwned'",
        "DELETE FROM memories",
        "DROP TABLE memories",
        "PRAGMA query_only=0",
        "PRAGMA journal_mode=DELETE",
        "ATTACH DATABASE ':memory:' AS x",
        "CREATE TEMP TABLE t(x)",
        "INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')",
        "SELECT load_extension('x')",
        "VACUUM",
    ]
    for sql in attacks:
        with pytest.raises(sqlite3.DatabaseError):
            conn.execute(sql)
    shard.close()
    assert _sha(index) == before


def test_immutable_open_and_missing_or_wrong_files(index: Path, tmp_path: Path, seed_archive: Path) -> None:
    with ThermalMemory(index, immutable=True) as mem:
        assert mem.count_results() == 5
    with pytest.raises(MemoryStoreError, match="does not exist"):
        ThermalMemory(tmp_path / "nope.db")
    with pytest.raises(MemoryStoreError, match="original schema"):
        ThermalMemory(seed_archive)
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not sqlite at all" * 100)
    with pytest.raises(MemoryStoreError):
        ThermalMemory(junk)


def test_seed_archive_imports_unchanged(seed_archive: Path, tmp_path: Path) -> None:
    before = _sha(seed_archive)
    recs = import_archive(seed_archive)
    assert _sha(seed_archive) == before
    by_id = {r.uid: r for r in recs}
    assert by_id["1"].tags == ("db", "decision") and by_id["2"].confidence == 1.0  # the index's normalized view
    db = tmp_path / "idx.db"
    store.build(db, recs)
    with ThermalMemory(db) as mem:
        assert mem.search_results("sqlite").total == 1
        assert mem.filter_results(tags=["decision"]).total == 1
        second = mem.record("2")  # the archive's own id
        assert second is not None and second.date == "2023-12-02" and second.timestamp == "2023-12-02T08:00:00Z"
        assert mem.record(2) == second  # an int finds the id it spells, as SQLite's TEXT affinity does
        seen = mem.get(2)  # the seed's view: the values as stored
        assert seen is not None and (seen.id, seen.date, seen.confidence) == (2, "2023-12-02 08:00:00", None)
        assert mem.get("2") == seen and mem.search("sqlite")[0].tags == ["db", " decision"]
    assert store.append(db, recs) == 0  # idempotent


def test_incremental_append_out_of_order(index: Path) -> None:
    from tests.unit.memory.conftest import make_records

    late = dataclasses.replace(make_records()[0], uid="late", date="2023-06-01T00:00:00Z", title="Backfilled note")
    assert store.append(index, [late]) == 1
    with ThermalMemory(index) as mem:
        assert mem.search_results("backfilled", until="2023-12-31").total == 1
        assert mem.search_results("deploy", since="2024-03-16").total == 2


def test_query_over_the_rank_cap_ranks_within_newest(index: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from terminai_apts.memory import planner

    monkeypatch.setattr(planner, "RANK_CAP", 1)
    with ThermalMemory(index) as mem:
        res = mem.search_results("postgres", order="relevance", exhaustive=False)  # 2 of 5: under half, bm25 ranks
        assert res.total == 2 and "ranked within newest 1 of 2" in res.plan
        assert res.ids == ("u3",) and res[0].score < 0
        full = mem.search_results("postgres", order="relevance")  # exhaustive by default: bm25's own top
        assert full.ids[0] in ("u0", "u3") and len(full) == 2 and "ranked within" not in full.plan


def test_query_whose_words_are_everywhere_comes_newest_first(index: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from terminai_apts.memory import planner

    monkeypatch.setattr(planner, "RANK_CAP", 2)
    with ThermalMemory(index) as mem:
        res = mem.search_results("deploy", order="relevance", exhaustive=False)  # 3 of 5: idf ~0, bm25 orders noise
        assert res.total == 3 and "newest first" in res.plan
        assert res.ids == ("u4", "u3", "u2")


def test_term_statistics_stay_exact_across_appends(index: Path) -> None:
    from tests.unit.memory.conftest import make_records

    extra = [
        dataclasses.replace(r, uid=f"more{i}", date=f"2024-06-0{i + 1}T00:00:00Z", title=f"Deployed again {i}")
        for i, r in enumerate(make_records()[:3])
    ]
    assert store.append(index, extra) == 3
    conn = sqlite3.connect(index)
    conn.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, memories_fts, 'row')")
    assert dict(conn.execute("SELECT term, df FROM term_stats")) == dict(conn.execute("SELECT term, doc FROM temp.v"))
    conn.close()
    with ThermalMemory(index) as mem:
        # one-word counts come from term_stats; the same query with a window counts doclists
        for word in ("deploy", "deployed", "postgres", "secret", "nothing"):
            assert mem.count_results(word, words=True) == mem.count_results(word, since="1970-01-01", words=True), word
        assert mem.count_results("deploy", words=True) == 6  # porter stems "deployed" to "deploy"
        assert mem.count_results("deploy") == 6  # the seed's substring is in "Deploy" and "Deployed"


def test_frequent_term_bitmaps_count_exactly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from terminai_apts.memory import fts, planner, termbits
    from terminai_apts.memory import query as q

    from tests.unit.memory.conftest import make_records

    monkeypatch.setattr(termbits, "MIN_DF", 1)  # every term gets a bitmap
    records = make_records()
    later = [
        dataclasses.replace(r, uid=f"later{i}", date=f"2024-06-0{i + 1}T00:00:00Z") for i, r in enumerate(records[:3])
    ]
    db = tmp_path / "bits.db"
    store.build(db, records)
    assert store.append(db, later) == 3  # appended records set their bits too
    windows: list[dict[str, str]] = [
        {},
        {"since": "2024-03-01"},
        {"until": "2024-03-15"},
        {"since": "2024-03-16", "until": "2024-06-01"},
        {"since": "2030-01-01"},
    ]
    shard = Shard(db)
    shard.arm(float("inf"))
    assert fts.statistics_count(shard, "deploy secret", planner.Window()) is not None  # the bitmap path is taken
    assert fts.statistics_count(shard, "PROJ-1234", planner.Window()) is None  # a phrase is FTS5's job
    shard.close()
    with ThermalMemory(db) as mem:
        for query in ("deploy", "deploy secret", "postgres deploy", "missing secret", "PROJ-1234", "nothing"):
            for window in windows:
                exact = mem.count_results(q.fts_and(query), raw=True, **window)  # raw text always counts with FTS5
                assert mem.count_results(query, words=True, **window) == exact, (query, window)
                assert mem.search_results(query, order="relevance", **window).total == exact or exact == 0, (
                    query,
                    window,
                )
