"""``grep``/``find`` against a brute-force oracle, and regular expressions in bounded time.

The oracle matches every record's ``title\\nsummary\\ncontent`` without any index, so a
record the trigram prefilter drops (a match across a field boundary, a case folding the
index does not know) shows up as a difference, and so does a total reported exact while
records are missing.
"""

from __future__ import annotations

import random
import signal
import threading
import time
from pathlib import Path

import pytest
import re2
from terminai_apts.errors import MemoryQueryError
from terminai_apts.memory import ThermalMemory, store
from terminai_apts.memory.records import NewMemory

WORDS = ["typo", "fix", "deploy", "ſsh", "\u212aelvin", "İstanbul", "café", "--->", "---", "ok", "Typo", "x", "Straße",
         "GROẞ", "ıi", "ÉTÉ"]  # fmt: skip


def _records(n: int, seed: int = 7) -> list[NewMemory]:
    rng = random.Random(seed)

    def field(k: int) -> str:
        words = [rng.choice(WORDS) for _ in range(rng.randint(0, k))]
        return "".join(w + rng.choice([" ", " ", "\n", ""]) for w in words).strip(" ")

    out = []
    for i in range(n):
        title = field(4)
        if i % 3 == 0:
            title = title.rstrip("\n") + " typo"  # ends in "typo": `typo\n` then crosses into the summary
        stamp = f"2024-{1 + i % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:00:00Z"
        out.append(
            NewMemory(
                uid=f"r{i}",
                date=stamp,
                recorded_at=stamp,
                title=title,
                summary=field(5),
                content=field(12),
            )
        )
    return out


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, str]]:
    path = tmp_path_factory.mktemp("oracle") / "m.db"
    store.build(path, _records(201))
    with ThermalMemory(path) as mem:
        texts = {}
        for i in range(201):
            m = mem.record(f"r{i}")
            assert m is not None
            texts[m.key] = f"{m.title}\n{m.summary}\n{m.content}"  # keys follow event time
    return path, texts


def _oracle(texts: dict[int, str], test: re2._Regexp) -> list[int]:
    return sorted((i for i, t in texts.items() if test.search(t)), reverse=True)


def _options(literal: bool) -> re2.Options:
    o = re2.Options()
    o.case_sensitive = False
    o.literal = literal
    return o


PATTERNS = [
    "typo\\n",  # the reported case: 11 of 201 found before, total said exact
    "typo\\nfix",
    "\\nfix",
    "o\\n\\w",
    "typo\\s+fix",
    "ssh",  # ſ folds to s in RE2 and in SQLite's trigram index
    "kelvin",  # so does the Kelvin sign
    "caf[eé]",
    "café ok",
    "(-|--)+>",
    "typo",
    # No ASCII run of three: the one- and two-character piece bitmaps name the candidates.
    "ß",
    "ẞ",
    "é",
    "été",
    "k",
    "s",
    "ok",
    "\u212a",
    "ı",
    "İ",
    "o\nd",
    "x$",
]
SUBSTRINGS = ["typo\n", "typo\nfix", "o\nd", "ssh", "kelvin", "café", "istanbul", "---> ok", "TYPO"]
SUBSTRINGS += ["ß", "STRAẞE", "é", "ÉTÉ", "ſ", "k", "ok", "İ", "ı", "x\n", "\n"]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_grep_finds_every_record_the_oracle_finds(corpus: tuple[Path, dict[int, str]], pattern: str) -> None:
    path, texts = corpus
    expected = _oracle(texts, re2.compile(pattern, _options(False)))
    with ThermalMemory(path) as mem:
        res = mem.grep_results(pattern, limit=100)
    _same(res, expected)


@pytest.mark.parametrize("needle", SUBSTRINGS)
def test_find_finds_every_record_the_oracle_finds(corpus: tuple[Path, dict[int, str]], needle: str) -> None:
    path, texts = corpus
    expected = _oracle(texts, re2.compile(needle, _options(True)))
    with ThermalMemory(path) as mem:
        res = mem.find(needle, limit=100)
    _same(res, expected)


def _same(res: object, expected: list[int]) -> None:
    from terminai_apts.memory.records import Results

    assert isinstance(res, Results)
    if len(expected) <= 100:
        assert [h.memory.key for h in res] == expected, res.plan
        assert res.total == len(expected) and not res.truncated
    else:  # more than the limit: the newest 100, and no claim of an exact total
        assert [h.memory.key for h in res] == expected[:100]
        assert res.truncated and res.total == -1


def test_the_reported_case_crosses_a_field_boundary(tmp_path: Path) -> None:
    # 11 records hold "typo\n" inside their content, 60 only across title -> summary.
    def rec(i: int, title: str, summary: str, content: str) -> NewMemory:
        stamp = f"2024-02-01T{i // 60:02d}:{i % 60:02d}:00Z"
        return NewMemory(uid=f"t{i}", date=stamp, recorded_at=stamp, title=title, summary=summary, content=content)

    recs = [rec(i, "note", "s", "a typo\nhere") for i in range(11)]
    recs += [rec(11 + i, "fix a typo", "spelling", "done") for i in range(60)]
    recs += [rec(71 + i, "other", "typo fixed", "nothing") for i in range(130)]
    path = tmp_path / "m.db"
    store.build(path, recs)
    with ThermalMemory(path) as mem:
        res = mem.grep_results("typo\\n", limit=100)
        assert res.total == 71 and len(res) == 71 and not res.truncated
        assert mem.find("typo\n", limit=100).total == 71


def test_backtracking_fallback_matches_the_oracle(corpus: tuple[Path, dict[int, str]]) -> None:
    import re

    path, texts = corpus
    # The last four have a short or non-ASCII literal: `re` folds `i` onto `İ`, `ß` onto `ẞ`.
    for pattern in ["typo\\n(?=fix)", "(\\w)\\1", "(?<!-)--->", "ß(?=e)", "i(?!x)", "é(?=t)", "ſ(?=s)"]:
        rx = re.compile(pattern, re.IGNORECASE)
        expected = sorted((i for i, t in texts.items() if rx.search(t)), reverse=True)
        with ThermalMemory(path) as mem:
            res = mem.grep_results(pattern, limit=100)
        assert "time-limited)" in res.plan and "re (RE2:" in res.plan
        _same(res, expected)


# ------------------------------------------------------------------ time


@pytest.fixture(scope="module")
def dashes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("redos") / "m.db"
    recs = [
        NewMemory(
            uid=f"d{i}",
            date=f"2024-01-01T00:{i // 60:02d}:{i % 60:02d}Z",
            recorded_at="2024-01-01T00:00:00Z",
            title="arrows",
            content="-" * 5000 + " ab \n" * 1000,
        )
        for i in range(200)
    ]
    store.build(path, recs)
    return path


def test_nested_alternation_runs_in_linear_time(dashes: Path) -> None:
    # With backtracking `re` this pattern took over a minute on such records.
    with ThermalMemory(dashes) as mem:
        began = time.monotonic()
        res = mem.grep_results("(-|--)+>", budget_ms=2000)
        took = time.monotonic() - began
    assert res.total == 0 and not res.truncated and "re2" in res.plan
    assert took < 2.0


def test_a_small_budget_is_kept(dashes: Path) -> None:
    with ThermalMemory(dashes) as mem:
        began = time.monotonic()
        res = mem.grep_results("(.|\\s|\\w)*Q", budget_ms=50)
        took = time.monotonic() - began
    # Either the scan finished (RE2 is linear) or it stopped at the budget: never minutes.
    assert took < 1.0
    assert (res.total == 0 and not res.truncated) or (res.truncated and res.total == -1)
    with ThermalMemory(dashes) as mem:  # the same shape needing `re` (look-ahead) stops at 50 ms
        began = time.monotonic()
        res = mem.grep_results("(-|--|.|\\s|\\w)*(?=Q)", budget_ms=50)
        took = time.monotonic() - began
    assert res.truncated and res.total == -1 and "budget" in res.plan and took < 1.0


def test_backtracking_fallback_is_stopped_at_its_deadline(dashes: Path) -> None:
    # Look-ahead needs `re`; `(-|--)+` before it is exponential on a run of dashes.
    previous = signal.getsignal(signal.SIGALRM)
    with ThermalMemory(dashes) as mem:
        began = time.monotonic()
        res = mem.grep_results("(-|--)+(?=>)", budget_ms=300)
        took = time.monotonic() - began
    assert res.truncated and res.total == -1 and "budget" in res.plan
    assert took < 1.5
    assert signal.getsignal(signal.SIGALRM) is previous
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_an_earlier_timer_is_given_back(dashes: Path) -> None:
    fired: list[int] = []
    previous = signal.signal(signal.SIGALRM, lambda signum, _frame: fired.append(signum))
    try:
        signal.setitimer(signal.ITIMER_REAL, 5.0)
        with ThermalMemory(dashes) as mem:
            mem.grep_results("(\\w)\\1", budget_ms=200)
        left = signal.getitimer(signal.ITIMER_REAL)[0]
        assert 3.0 < left <= 5.0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert not fired


def test_fallback_outside_the_main_thread_is_refused_not_unbounded(dashes: Path) -> None:
    outcome: list[object] = []

    def work() -> None:
        with ThermalMemory(dashes) as mem:
            try:
                mem.grep_results("(-|--)+(?=>)")
            except MemoryQueryError as exc:
                outcome.append(exc)
            outcome.append(mem.grep_results("(-|--)+>").total)  # RE2 needs no signal: fine in any thread

    t = threading.Thread(target=work)
    t.start()
    t.join(30)
    assert isinstance(outcome[0], MemoryQueryError) and "main thread" in str(outcome[0])
    assert outcome[1] == 0


def test_spans_are_character_offsets_in_non_ascii_text() -> None:
    from terminai_apts.memory import regex as rx

    rng = random.Random(3)
    alphabet = "aé€😀ſK\nxyz-"
    for pattern in ["x+y", "é€", "z\\n", "😀.", "ssk"]:
        matcher, public = rx.compile_pattern(pattern), re2.compile(pattern, _options(False))
        for _ in range(200):
            text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
            m = public.search(text)
            assert matcher.search(text) == (None if m is None else m.span()), (pattern, text)


def test_snippets_show_the_match(corpus: tuple[Path, dict[int, str]]) -> None:
    path, _texts = corpus
    with ThermalMemory(path) as mem:
        for hit in mem.find("café", limit=100):
            assert "café" in hit.snippet.lower()
        for hit in mem.grep_results("İstanbul", limit=100):
            assert "İstanbul" in hit.snippet
