"""The pure parts of the memory API: arguments in, frozen plans (and text batches) out, no index file."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from terminai_apts.errors import MemoryQueryError
from terminai_apts.memory import planner


def test_search_quotes_every_word_and_relaxes_only_multi_word_queries() -> None:
    plan = planner.search("PROJ-1234 v2.1")
    assert plan.forms == (("fts-and", '"PROJ-1234" "v2.1"'), ("fts-or", '"PROJ-1234" OR "v2.1"'))
    assert plan.words == 2 and not plan.empty
    assert plan.tries(0, 0) and plan.tries(1, 0) and not plan.tries(1, 3)  # relaxed only when AND found nothing
    single = planner.search("postgres")
    assert not single.tries(1, 0)  # one word: OR is the same query
    assert planner.search('say "hi"').forms[0][1] == '"say" """hi"""'  # quotes inside a word are escaped


def test_search_statistics_and_raw_text() -> None:
    plan = planner.search("deploy")
    assert plan.statistics_count(0) and not plan.statistics_count(1)
    assert not planner.search("deploy", tags="infra").statistics_count(0)  # tags: FTS5 counts
    raw = planner.search("deploy NEAR(a b)", raw=True)
    assert raw.forms == (("fts-raw", "deploy NEAR(a b)"),) and not raw.statistics_count(0)
    assert planner.search("  -- ... ").empty and planner.search("").empty


def test_rank_cap_is_shared_among_words(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(planner, "RANK_CAP", 3_000)
    assert planner.search("a b c").cap == 1_000
    assert planner.search("a b c", raw=True).cap == 3_000  # raw text: one expression
    assert planner.search("").cap == 3_000
    monkeypatch.setattr(planner, "RANK_CAP", 2)
    assert planner.rank_cap("a b c", False) == 1  # never 0: one match is always ranked


def test_windows_normalise_bounds_and_date_range_narrows() -> None:
    plan = planner.search("x", since="2024-05-01", until="2024-05-01")
    assert plan.window == planner.Window("2024-05-01T00:00:00Z", "2024-05-02T00:00:00Z")  # a whole day
    ranged = planner.search("x", date_range=("2024-01-01", None), since="2020-01-01", until="2030-01-01")
    assert ranged.window == planner.Window("2024-01-01T00:00:00Z", "2030-01-02T00:00:00Z") and ranged.window.bounded
    # Before year 1000 and the calendar's last day: four-digit years, and no bound past the end.
    assert planner.window("0999-01-01", "9999-12-31") == planner.Window("0999-01-01T00:00:00Z", None)
    assert planner.window(None, "0999-12-31").hi == "1000-01-01T00:00:00Z"
    assert not planner.Window().bounded
    instant = planner.window(None, "2024-05-01T10:00:00Z")
    assert instant.hi == "2024-05-01T10:00:01Z"  # an explicit instant is inclusive


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: planner.search("x", order="best"), "order must be one of newest, oldest, relevance"),
        (lambda: planner.search("x", limit=-1), "limit must be between"),
        (lambda: planner.substring("x", limit=10_001), "limit must be at most 10000"),
        (lambda: planner.substring("x", date_range=("2024-01-01", "later")), "date_range end 'later' is not a valid"),
        (lambda: planner.search("x", offset=1.5), "offset must be an integer"),
        (lambda: planner.search("x", date_range=("2024-01-01",)), "date_range must be a pair"),
        (lambda: planner.search("x", since="yesterday"), "not a valid date"),
        (lambda: planner.search(b"x"), "query must be a string"),
        (lambda: planner.search("x", tags=5), "tags must be a string or a list"),
        (lambda: planner.filter_(order="relevance"), "order must be one of newest, oldest"),
        (lambda: planner.filter_(min_confidence=float("nan")), "finite number"),
        (lambda: planner.filter_(date_after="soon"), "date_after 'soon' is not a valid date"),
        (lambda: planner.grep("([a-"), "bad regular expression"),
        (lambda: planner.find("a\x00b"), "contains a NUL"),
        (lambda: planner.facets(by="day"), "facets by must be month, tag or source"),
        (lambda: planner.scan(max_chars="many"), "max_chars must be an integer"),
        (lambda: planner.budget(-5, 2000), "budget_ms must not be negative"),
    ],
)
def test_bad_arguments_are_refused_before_any_file_is_read(call: object, message: str) -> None:
    with pytest.raises(MemoryQueryError, match=message):
        call()  # type: ignore[operator]


def test_limits_budgets_and_tags() -> None:
    assert planner.search("x", limit=10_000).limit == planner.MAX_ROWS
    assert planner.budget(None, 2000) == 2000 and planner.budget(0, 2000) == 0
    assert planner.tag_list(" Infra, OPS ") == ("infra", "ops")
    assert planner.tag_list(["Infra", " db "]) == ("infra", "db")
    assert planner.tag_list(None) == ()


def test_count_plans() -> None:
    assert planner.count().match is None and planner.count("   ").match is None  # the filters alone
    assert planner.count("deploy secret").match == '"deploy" "secret"'
    raw = planner.count("deploy OR secret", raw=True)
    assert raw.match == "deploy OR secret" and not raw.statistics_count
    assert not planner.count("x", tags=["a"]).statistics_count and planner.count("x").statistics_count


def test_filter_plan() -> None:
    plan = planner.filter_(source="agent", date_after="2024-01-01", tags="infra,db", order="oldest", kind="decision")
    assert plan.window == planner.Window("2024-01-01T00:00:00Z", None)  # inclusive: from that day on
    assert planner.filter_(date_before="2024-01-31").window.hi == "2024-02-01T00:00:00Z"  # through that day
    assert plan.tags == ("infra", "db") and plan.order == "oldest" and plan.source == "agent"
    assert plan.kind == "decision" and plan.confidence is None and plan.limit == 50  # the seed's default


def test_substring_plan_looks_up_the_longest_piece_between_wildcards() -> None:
    assert planner.substring("C++").literal == "C++" and planner.substring("C++").pattern == "%C++%"
    assert planner.substring("fix_me%later").literal == "later"  # LIKE's `_` and `%` stay wildcards
    assert planner.substring("50%").literal is None and planner.substring("ab").literal is None
    assert planner.substring("").pattern == "%%" and planner.substring("x").order == "newest"


def test_match_plans_choose_the_trigram_index_or_a_full_scan() -> None:
    grep = planner.grep(r"timeout after \d+ms")
    assert grep.literal == "timeout after " and grep.label == "trigram-prefilter 'timeout after ' + re2"
    assert grep.matcher is not None and grep.matcher.search("a TIMEOUT after 30ms") is not None
    assert planner.grep(r"\d+").literal is None and planner.grep(r"\d+").label == "full-scan + re2"
    back = planner.grep(r"(\w+) \1")  # a back-reference: RE2 cannot, `re` under a time limit can
    assert back.matcher is not None and back.matcher.backtracking and "time-limited" in back.label
    find = planner.find("PROJ-12", limit=5)
    assert find.literal == "PROJ-12" and find.label == "trigram 'PROJ-12'" and find.limit == 5
    short = planner.find("ü")  # no ASCII run of three: the piece bitmaps name the candidates
    assert short.literal is None and short.short == "ü" and short.label == "piece-bitmap 'ü'"
    assert planner.find("a\nb").short == "a" and planner.grep("x|y").short is None
    empty = planner.find("")
    assert empty.matcher is None and empty.label == "empty-query"


def test_facet_and_scan_plans() -> None:
    assert planner.facets().match is None and planner.facets(" ").match is None
    assert planner.facets("deploy", by="tag") == planner.Facets(by="tag", match='"deploy"', window=planner.Window())
    scan = planner.scan(max_chars=10, max_batches=10_000)
    assert (scan.chars, scan.batches, scan.match) == (200, 1000, None)  # clamped
    assert planner.scan(max_chars=10**9, max_batches=0, query="a b").chars == 200_000
    assert planner.scan(max_batches=0).batches == 1


def test_plans_are_frozen() -> None:
    plan = planner.search("x")
    with pytest.raises(AttributeError):
        plan.limit = 5  # type: ignore[misc]


def test_scan_batches_are_packed_lazily_within_their_bounds() -> None:
    from terminai_apts.memory import batches

    asked: list[int] = []

    def rows() -> Iterator[batches.Row]:
        for i in range(1, 1000):
            asked.append(i)
            yield (f"m{i}", "2024-05-01", f"title {i}", "", "x" * 150)

    out = list(batches.pack(rows(), 400, 3))
    assert len(out) == 3 and all(len(b.text) <= 400 for b in out)
    assert out[0].ids == ("m1", "m2") and out[0].text.startswith("[m1] 2024-05-01 title 1: xxx")
    assert len(asked) == 7  # the row that overflowed the third batch, and no more
    (only,) = batches.pack([("m9", "2024-01-02", "t", "the summary", "the content")], 200, 5)
    assert only.ids == ("m9",) and only.text == "[m9] 2024-01-02 t: the summary\n"  # summary before content
    (cut,) = batches.pack([("m1", "2024-01-02", "t", "", "y" * 1000)], 200, 5)
    assert len(cut.text) == 201  # one long line is cut at the batch size (plus its newline)
    assert list(batches.pack([], 200, 5)) == []
