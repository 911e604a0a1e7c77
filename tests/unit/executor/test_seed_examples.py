"""The documented agent-facing examples (``docs/AGENT_API.md``), verbatim, through the CLI
(``terminai-apts exec --db DB --json``, a real subprocess) in every mode, against a real
memory index."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from terminai_apts.executor.policy import MODES, Mode

from tests.corpus import memory_fixture, oracle

# The seed's documented usage, verbatim.
SEED_SEARCH = """\
results = thermal.search(
    query="GPU allocation",
    date_range=("2025-12-05", "2026-01-04"),
    limit=10
)
for r in results:
    print(f"{r.date}: {r.title} - {r.summary[:100]}")
"""

# count / summarize / get, and a missing id.
COUNT_SUMMARIZE_GET = """\
print(thermal.count("GPU allocation"))
print(thermal.summarize("Postgres migration", max_results=2))
m = thermal.get("m1")
print(m.id, m.date, m.title, m.source, m.confidence, m.tags)
print(thermal.get("m424242"))
"""

# The seed's records: a list of its Memory dataclass.
SEED_RECORDS = """\
found = thermal.search("GPU", limit=3)
print(type(found).__name__, len(found + thermal.grep("Postgres", limit=2)), found[0] == thermal.get(found[0].id))
print(repr(found[0])[:40])
try:
    found[0].title = "changed"
except AttributeError as e:
    print(e)
"""

# Dates compare as the archive stores them (text): an end bound of a bare day ends at its midnight.
DATE_BOUNDS = """\
day = thermal.search("cleanup", date_range=("2025-12-01", "2025-12-31"))
print(len(day), [m.date for m in day])
print(len(thermal.filter(date_after="2025-12-01", date_before="2025-12-31", limit=100)))
"""

# The extensions (not the seed's): a result set, list-like, with its metadata as attributes.
RESULT_SET = """\
results = thermal.search_results("GPU", limit=5)
print(len(results), results.total, results.truncated, bool(results))
print(results[0].title == list(results)[0].title, len(results[1:3]))
newest = sorted(results, key=lambda m: m.date)[-1]
print(newest.date[:7], sorted(newest.keys())[:4])
"""

# Event-time windows in every spelling (the extensions).
DATE_WINDOWS = """\
a = thermal.search_results("cleanup", since="2025-12-01", until="2025-12-31")
b = thermal.search_results("cleanup", date_range=("2025-12-01", "2025-12-31"))
c = thermal.filter_results(tags="cleanup", date_after="2025-12-01", date_before="2025-12-31")
d = thermal.grep_results("Delete", since="2025-12-01", until="2025-12-31")
print(len(a), len(b), len(c), len(d), all(m.date.startswith("2025-12") for m in [*a, *b, *c, *d]))
"""

# Plain data for json.dumps (standard and high: strict has no imports).
TO_JSON = """\
import dataclasses, json

print(json.dumps([dataclasses.asdict(m) for m in thermal.search("GPU", limit=2)])[:9])
results = thermal.filter_results(tags=["decision"], limit=3)
print(json.dumps([m.to_dict() for m in results])[:1] + "...", len(json.dumps(results.to_dict())) > 100)
"""

SEED_EXAMPLES: dict[str, str] = {
    "seed_search": SEED_SEARCH,
    "count_summarize_get": COUNT_SUMMARIZE_GET,
    "seed_records": SEED_RECORDS,
    "date_bounds": DATE_BOUNDS,
}
EXAMPLES: dict[str, str] = {
    **SEED_EXAMPLES,
    "result_set": RESULT_SET,
    "date_windows": DATE_WINDOWS,
    "to_json": TO_JSON,
}


@pytest.fixture(scope="module")
def memory_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return memory_fixture.build(tmp_path_factory.mktemp("seed-memory"))


def run_cli(code: str, db: Path, mode: Mode) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-m", "terminai_apts.cli", "exec", "--db", str(db), "--json", "--mode", mode],
        input=code,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.stdout, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def expected(name: str) -> str:
    """The seed's calls print what the seed's statements print (``tests/corpus/oracle.py``)."""
    if name in SEED_EXAMPLES:
        return oracle.run(SEED_EXAMPLES[name])
    return {
        "result_set": "5 12 True True\nTrue 2\n2026-01 ['confidence', 'content', 'content_hash', 'date']\n",
        # "cleanup" in the title or content of two December memories; three carry the tag.
        "date_windows": "2 2 3 1 True\n",
        "to_json": '[{"id": "\n[... True\n',
    }[name]


def test_the_seed_examples_say_what_they_show() -> None:
    """The oracle's outputs, pinned where a reader checks them by eye."""
    assert expected("seed_search").startswith("2025-12-10: GPU allocation (2025-12) - Allocate the A100 pool")
    assert expected("count_summarize_get").splitlines()[1:3] == [
        "Found 2 memories for 'Postgres migration':",
        "  [2026-01-19] Postgres migration rollback (2026-01)",
    ]
    assert expected("seed_records").splitlines()[0] == "list 5 True" and "immutable" in expected("seed_records")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_through_the_cli(name: str, mode: Mode, memory_db: Path) -> None:
    result = run_cli(EXAMPLES[name], memory_db, mode)
    if mode == "strict" and "import " in EXAMPLES[name]:
        assert result["refused_by"] == "L2-validate"
        return
    assert result["success"], result["error"]
    assert result["stdout"] == expected(name)


def test_the_documented_examples_are_the_tested_ones() -> None:
    doc = (Path(__file__).resolve().parents[3] / "docs" / "AGENT_API.md").read_text()
    for name in sorted(EXAMPLES):
        assert EXAMPLES[name] in doc, name


DATE_SPELLINGS = """\
a = thermal.search_results("GPU", until="2025-12-31T23:59:59Z")
b = thermal.search_results("GPU", since="2025-12-01T00:00:00Z")
print(len(a), len(b))
c = thermal.filter_results(date_after="2025-12-01T00:00:00Z", date_before="2026-01-31")
print(len(c), thermal.count_results("GPU", since="3000d"))
print(len(thermal.find("GPU", since="2025-10-01")), len(thermal.facets(since="2025-10-01")))
print(len(thermal.scan(since="2025-12-01", until="2026-01-31")), len(thermal.grep_results("GPU", until="2025-11-01")))
"""


@pytest.mark.parametrize("mode", MODES)
def test_date_spellings_in_every_method(mode: Mode, memory_db: Path) -> None:
    """Dates are parsed in the hardened run (nothing is imported after hardening): full
    timestamps, whole days and relative spans, in every method that takes them."""
    result = run_cli(DATE_SPELLINGS, memory_db, mode)
    assert result["success"], result["error"]
    assert result["stdout"] == "10 3\n24 12\n9 4\n1 6\n"


def test_a_result_set_says_how_to_get_a_list(memory_db: Path) -> None:
    code = "res = thermal.search_results('GPU')\ntry:\n    res.sort(key=lambda m: m.date)\n"
    code += "except AttributeError as e:\n    print(e)\n"
    code += "mine = list(res)\nmine.sort(key=lambda m: m.date)\nprint(len(mine) == len(res))\n"
    result = run_cli(code, memory_db, "high")
    assert result["success"], result["error"]
    assert result["stdout"] == (
        "results are read-only (no 'sort'); list(results) is a list you can change,"
        " sorted(results, key=...) a sorted copy\nTrue\n"
    )


@pytest.mark.parametrize("mode", ["standard", "high"])
def test_json_dumps_writes_memories_and_result_sets(mode: Mode, memory_db: Path) -> None:
    code = (
        "import json\nres = thermal.search_results('GPU', limit=2)\n"
        "one = thermal.record('m1')\n"
        "print(json.dumps(res)[:9], json.loads(json.dumps(one))['id'], json.dumps({'r': res[0]})[:8])\n"
        "print(json.dumps(res, default=str) == json.dumps(res, default=str))\n"
        "try:\n    json.dumps(len)\nexcept TypeError as e:\n    print(e)\n"
        "try:\n    json.dumps(thermal.get('m1'))\nexcept TypeError as e:\n    print(e)\n"  # as CPython says it
    )
    result = run_cli(code, memory_db, mode)
    assert result["success"], result["error"]
    assert result["stdout"] == (
        '[{"id": " m1 {"r": {"\nTrue\nObject of type builtin_function_or_method is not JSON serializable\n'
        "Object of type Memory is not JSON serializable\n"
    )
