"""Every method x every hostile input: one clear :class:`MemoryQueryError`, never another exception."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from terminai_apts.errors import AptsError, MemoryQueryError, ReadOnlyViolation
from terminai_apts.memory import ThermalMemory, store
from terminai_apts.memory.shard import Shard
from terminai_apts.memory.tiers import LIVE_INDEX

from tests.unit.memory.conftest import make_records

SURROGATE = "ab\udcffcd"  # what invalid UTF-8 on a command line decodes to
BAD_TEXT: list[Any] = [SURROGATE, "\ud800", "a\x00b", b"bytes", 123]
BAD_QUERY: list[Any] = [SURROGATE, b"bytes", 123]  # a NUL in query text separates words
BAD_INT: list[Any] = [2**64, 2**63, -1, "5", 1.5, True, None]
BAD_SINCE: list[Any] = ["999999d", "not a date", "2024-13-01", "\udcff", 12345]
# (The calendar's last day is a valid end: it bounds nothing, see the valid neighbours.)
BAD_UNTIL: list[Any] = ["10000-01-01", "999999d", "yesterday-ish"]
BAD_RANGE: list[Any] = [("2020-01-01",), "2020-01-01", ("a", "b", "c"), 5, ("2020-01-01", "9999-13-31")]
# Ids are strings ("5" is a well-formed id that may be missing: None); ints spell one.
BAD_ID: list[Any] = [2**64, 2**63, 1.5, True, None, b"5", SURROGATE, ["m1"]]
BAD_TAGS: list[Any] = [123, b"infra", [1, 2], ["ok", "\udcff"]]
BAD_NUMBER: list[Any] = ["abc", float("nan"), float("inf"), [0.5], True]

Call = Callable[[Any], object]


def _case(name: str, values: list[Any], call: Callable[[Any, Any], object]) -> list[tuple[str, Any, Any]]:
    return [(name, v, call) for v in values]


CASES = [
    *_case("search(query)", BAD_QUERY, lambda m, v: m.search_results(v)),
    *_case("search(limit)", BAD_INT, lambda m, v: m.search_results("deploy", limit=v)),
    *_case("search(offset)", BAD_INT, lambda m, v: m.search_results("deploy", offset=v)),
    *_case("search(since)", BAD_SINCE, lambda m, v: m.search_results("deploy", since=v)),
    *_case("search(until)", BAD_UNTIL, lambda m, v: m.search_results("deploy", until=v)),
    *_case("search(date_range)", BAD_RANGE, lambda m, v: m.search_results("deploy", date_range=v)),
    *_case("search(tags)", BAD_TAGS, lambda m, v: m.search_results("deploy", tags=v)),
    *_case("search(order)", ["sideways", 3], lambda m, v: m.search_results("deploy", order=v)),
    *_case("search(budget_ms)", ["fast", -5], lambda m, v: m.search_results("deploy", budget_ms=v)),
    *_case("count(query)", BAD_QUERY, lambda m, v: m.count_results(v)),
    *_case("count(since)", BAD_SINCE, lambda m, v: m.count_results("deploy", since=v)),
    *_case("count(until)", BAD_UNTIL, lambda m, v: m.count_results(until=v)),
    *_case("count(tags)", BAD_TAGS, lambda m, v: m.count_results(tags=v)),
    *_case("grep(pattern)", [*BAD_TEXT, "(unclosed", "[z-a]"], lambda m, v: m.grep_results(v)),
    *_case("grep(limit)", BAD_INT, lambda m, v: m.grep_results("deploy", limit=v)),
    *_case("grep(since)", BAD_SINCE, lambda m, v: m.grep_results("deploy", since=v)),
    *_case("grep(until)", BAD_UNTIL, lambda m, v: m.grep_results("deploy", until=v)),
    *_case("find(substring)", BAD_TEXT, lambda m, v: m.find(v)),
    *_case("find(limit)", BAD_INT, lambda m, v: m.find("deploy", limit=v)),
    *_case("find(since)", BAD_SINCE, lambda m, v: m.find("deploy", since=v)),
    *_case("find(until)", BAD_UNTIL, lambda m, v: m.find("deploy", until=v)),
    *_case("filter(source)", BAD_TEXT, lambda m, v: m.filter_results(source=v)),
    *_case("filter(kind)", BAD_TEXT, lambda m, v: m.filter_results(kind=v)),
    *_case("filter(min_confidence)", BAD_NUMBER, lambda m, v: m.filter_results(min_confidence=v)),
    *_case("filter(tags)", BAD_TAGS, lambda m, v: m.filter_results(tags=v)),
    *_case("filter(limit)", BAD_INT, lambda m, v: m.filter_results(limit=v)),
    *_case("filter(since)", BAD_SINCE, lambda m, v: m.filter_results(since=v)),
    *_case("filter(until)", BAD_UNTIL, lambda m, v: m.filter_results(until=v)),
    *_case("filter(date_after)", ["\udcff", "soon", 5], lambda m, v: m.filter_results(date_after=v)),
    *_case("filter(date_before)", ["\udcff", "soon"], lambda m, v: m.filter_results(date_before=v)),
    *_case("filter(order)", ["relevance", None], lambda m, v: m.filter_results(order=v)),
    *_case("get(id)", BAD_ID, lambda m, v: m.record(v)),
    *_case("around(id)", BAD_ID, lambda m, v: m.around(v)),
    *_case("around(before)", BAD_INT, lambda m, v: m.around("u0", before=v)),
    *_case("trace(id)", BAD_ID, lambda m, v: m.trace(v)),
    *_case("dupes(id)", BAD_ID, lambda m, v: m.dupes(v)),
    *_case("facets(query)", BAD_QUERY, lambda m, v: m.facets(v)),
    *_case("facets(by)", ["colour", 5], lambda m, v: m.facets(by=v)),
    *_case("facets(since)", BAD_SINCE, lambda m, v: m.facets(since=v)),
    *_case("scan(query)", BAD_QUERY, lambda m, v: list(m.scan(query=v))),
    *_case("scan(since)", BAD_SINCE, lambda m, v: list(m.scan(since=v))),
    *_case("scan(max_chars)", BAD_INT, lambda m, v: list(m.scan(max_chars=v))),
    *_case("scan(max_batches)", BAD_INT, lambda m, v: list(m.scan(max_batches=v))),
]


def _ok_anyway(name: str, value: Any) -> bool:
    """Inputs that are valid for that one parameter (kept in the lists for the others)."""
    return (name.startswith("around(before") and value is None) or (
        name.startswith(("get(", "around(id", "trace(", "dupes(")) and value == 2**63 - 1
    )


@pytest.fixture(scope="module", params=["index", "journal"])
def memory(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("hostile")
    if request.param == "index":
        store.build(root / "m.db", make_records())
        mem: Any = ThermalMemory(root / "m.db")
    else:
        store.build(root / LIVE_INDEX, make_records())
        mem = ThermalMemory(root)
    yield mem
    mem.close()


@pytest.mark.parametrize(("name", "value", "call"), CASES, ids=[f"{c[0]}={c[1]!r}"[:60] for c in CASES])
def test_hostile_input_is_a_clear_error(memory: Any, name: str, value: Any, call: Callable[[Any, Any], object]) -> None:
    with pytest.raises(MemoryQueryError) as info:
        call(memory, value)
    err = info.value
    assert isinstance(err, AptsError) and err.exit_code == 2
    assert err.message and "Traceback" not in err.render()


# The seed's calls take what the seed's code takes (``search(123)`` looks for "123"); what
# its code fails on fails here with a MemoryQueryError, never a TypeError or sqlite3 error.
SEED_CASES = [
    *_case("search(query)", [*BAD_TEXT, None, ["x"]], lambda m, v: m.search(v)),
    *_case("search(limit)", [*BAD_INT, "x", [1]], lambda m, v: m.search("deploy", limit=v)),
    *_case("search(offset)", [*BAD_INT, "x", [1]], lambda m, v: m.search("deploy", offset=v)),
    *_case(
        "search(date_range)", [*BAD_RANGE, ("\udcff", "b"), (b"a", [1])], lambda m, v: m.search("deploy", date_range=v)
    ),
    *_case("search(tags)", [*BAD_TAGS, "gpu", {"a": 1}], lambda m, v: m.search("deploy", tags=v)),
    *_case("grep(pattern)", [*BAD_TEXT, None], lambda m, v: m.grep(v)),
    *_case("grep(limit)", BAD_INT, lambda m, v: m.grep("deploy", limit=v)),
    *_case("filter(source)", [*BAD_TEXT, [1]], lambda m, v: m.filter(source=v)),
    *_case("filter(min_confidence)", [*BAD_NUMBER, "\udcff"], lambda m, v: m.filter(min_confidence=v)),
    *_case("filter(date_after)", ["\udcff", 5, [1]], lambda m, v: m.filter(date_after=v)),
    *_case("filter(limit)", BAD_INT, lambda m, v: m.filter(limit=v)),
    *_case("count(query)", [*BAD_TEXT, [1]], lambda m, v: m.count(v)),
    *_case("get(id)", [*BAD_ID, {"a": 1}], lambda m, v: m.get(v)),
    *_case("summarize(query)", [*BAD_TEXT, None], lambda m, v: m.summarize(v)),
    *_case("summarize(max_results)", BAD_INT, lambda m, v: m.summarize("deploy", max_results=v)),
]


@pytest.mark.parametrize(("name", "value", "call"), SEED_CASES, ids=[f"{c[0]}={c[1]!r}"[:60] for c in SEED_CASES])
def test_the_seed_calls_answer_or_fail_clearly(
    memory: Any, name: str, value: Any, call: Callable[[Any, Any], object]
) -> None:
    try:
        answer = call(memory, value)
    except MemoryQueryError as err:
        assert err.exit_code == 2 and err.message.startswith(f"thermal.{name.split('(', maxsplit=1)[0]}:")
        assert "Traceback" not in err.render()
    else:
        assert isinstance(answer, (list, int, str, type(None)))


def test_the_valid_neighbours_still_work(memory: Any) -> None:
    """The checks refuse the bad values only: the nearest good ones are answered."""
    assert memory.search_results("deploy", until="9999-12-30", date_range=None).total == 3
    assert memory.search_results("deploy", date_range=("2024-03-01", None)).total == 3
    assert memory.search_results("deploy", date_range=["2024-03-01", "2024-03-31"]).total == 2
    assert memory.filter_results(tags=["infra"], min_confidence=1).total == 0
    assert memory.filter_results(min_confidence=0).total == 5
    assert memory.search_results("a\x00b").total >= 0  # NUL separates words in query text
    assert memory.count_results(since="99999d") == 5
    assert memory.search_results("deploy", until="9999-12-31").total == 3  # the calendar's last day: no bound
    assert memory.count_results("deploy", date_range=("0001-01-01", "9999-12-31T23:59:59Z")) == 3
    assert memory.record(2**63 - 1) is None and memory.record(-1) is None and memory.record("5") is None
    with pytest.raises(LookupError):
        memory.require(2**63 - 1)


@pytest.mark.parametrize(
    "statement",
    ["DELETE FROM memories", "INSERT INTO meta VALUES ('k', 'v')", "PRAGMA query_only=0", "ATTACH ':memory:' AS x"],
)
def test_a_statement_that_writes_is_a_read_only_violation(index: Path, statement: str) -> None:
    """The shard's authorizer refuses it, and that refusal is the documented exit 25, not a crash."""
    shard = Shard(index)
    try:
        with pytest.raises(ReadOnlyViolation, match="a statement that writes was refused") as caught:
            shard.rows(statement)
        assert caught.value.exit_code == 25 and caught.value.hint
        assert shard.rows("SELECT count(*) FROM memories")[0][0] == 5  # still answering, nothing written
    finally:
        shard.close()
