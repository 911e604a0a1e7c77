"""Differential test: ``thermal``'s seed calls against seed 000's statements (``seed_statements``).

Hypothesis writes archives the way the world holds them, not the way our generators do:
NULL in any column; dates with and without a time, with ``T`` or a space, with a zone,
impossible (``2025-02-31``), garbage and duplicated; tags with spaces, empty items and
trailing commas; ``%``, ``_`` and non-ASCII in data and queries; empty strings; long rows;
a typed schema, an untyped one (numbers and text side by side in a column) and one with an
index on ``date`` (which changes SQLite's order of ties). Each archive is imported as a
user imports it, then generated calls (every parameter, falsy values, limits past the cap,
negative limits and offsets) go to both sides: the same memories in the same order, field
for field, or an error on both. ``SEED_EXACT_EXAMPLES`` sets the number of archives
(``make test-seed-exact`` runs many more).
"""

from __future__ import annotations

import dataclasses
import os
import sqlite3
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from terminai_apts.memory import store
from terminai_apts.memory.api import ThermalMemory
from terminai_apts.memory.cli import import_archive
from terminai_apts.memory.shard import Shard

from tests.unit.memory.seed_statements import SEED_FILE, SeedStatements, seed_api

EXAMPLES = int(os.environ.get("SEED_EXACT_EXAMPLES", "25"))
SCHEMAS = {
    "typed": "CREATE TABLE memories(id TEXT PRIMARY KEY, date TEXT, title TEXT, content TEXT,"
    " summary TEXT, tags TEXT, source TEXT, confidence REAL)",
    "untyped": "CREATE TABLE memories(id, date, title, content, summary, tags, source, confidence)",
    "dated": "CREATE TABLE memories(id TEXT, date TIMESTAMP, title TEXT, content TEXT, summary TEXT,"
    " tags VARCHAR(200), source TEXT, confidence FLOAT); CREATE INDEX memories_by_date ON memories(date)",
}
WORDS = [
    "gpu",
    "GPU",
    "Gpu allocation",
    "cluster",
    "50%",
    "a_b",
    "Straße",
    "STRASSE",
    "é",
    "É",
    "naïve",
    "\u212aelvin",
    "k",
    "",
    " ",
    "x y",
]
DAYS = ["2026-01-04", "2026-01-05", "2025-12-31", "2025-02-31", "0999-12-31", "9999-12-31"]


def _dates() -> st.SearchStrategy[Any]:
    day = st.sampled_from(DAYS)
    time = st.sampled_from(["", " 09:30:00", "T09:30:00", " 23:59:59", "T00:00:00Z", "T09:30:00+02:00", " 9:5"])
    return st.one_of(
        st.builds(lambda d, t: d + t, day, time),
        st.sampled_from(["", "yesterday", "2026-1-4", "2026/01/04", "Jan 4 2026", "2026-01-04 ", "\u0662\u0660"]),
        st.none(),
    )


def _text() -> st.SearchStrategy[Any]:
    piece = st.sampled_from([*WORDS, "%", "_", ",", "\n"])
    return st.one_of(
        st.lists(piece, max_size=6).map(" ".join),
        st.text(alphabet="gpuGPU%_ éÉß,\u212a", max_size=12),
        st.builds(lambda w, n: (w + " ") * n, st.sampled_from(WORDS), st.integers(300, 1200)),
        st.none(),
    )


def _tags() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(st.sampled_from(["gpu", " gpu", "cluster ", "", "infra", "GPU", "a_b", "50%"]), max_size=4).map(
            ",".join
        ),
        st.none(),
    )


def _confidence(untyped: bool) -> st.SearchStrategy[Any]:
    base = st.one_of(st.floats(0, 1, allow_nan=False), st.sampled_from([0.9, 0.95, 1.0, 0.0]), st.none())
    return st.one_of(base, st.sampled_from([1, 0, "0.9", "high"])) if untyped else base


@st.composite
def archives(draw: st.DrawFn) -> tuple[str, list[tuple[Any, ...]]]:
    schema = draw(st.sampled_from(sorted(SCHEMAS)))
    untyped = schema == "untyped"
    source = st.one_of(st.sampled_from(["ops", "council", "", "Ops"]), st.none())
    ids = (
        st.one_of(st.integers(1, 40).map(lambda n: f"m{n}"), st.integers(1, 40))
        if untyped
        else st.integers(1, 40).map(lambda n: f"m{n}")
    )
    row = st.tuples(ids, _dates(), _text(), _text(), _text(), _tags(), source, _confidence(untyped))
    rows = draw(st.lists(row, max_size=30, unique_by=lambda r: str(r[0])))
    return schema, rows


def _query() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.sampled_from([*WORDS, "%", "_", "%%", "gp", "pu all", "ß", "None"]),
        st.text(alphabet="gpuGPU%_ é", max_size=4),
    )


@st.composite
def calls_for(draw: st.DrawFn, ids: list[Any]) -> list[tuple[str, tuple[Any, ...], dict[str, Any]]]:
    limit = st.sampled_from([20, 1, 5, 100, 101, 1000, 0, -1])
    bound = st.one_of(_dates(), st.sampled_from(["2026-01-04", "2026-01-04 23:59:59", "2026", "2026-01-04T"]))
    date_range = st.one_of(st.none(), st.just(()), st.tuples(bound, bound))
    tags = st.one_of(
        st.none(),
        st.just([]),
        st.lists(st.sampled_from(["gpu", "cluster", " cluster", "GPU", "", "%", "x"]), max_size=3),
        st.just("gpu"),
    )
    calls = st.one_of(
        st.tuples(
            st.just("search"),
            st.tuples(_query()),
            st.fixed_dictionaries(
                {},
                optional={
                    "date_range": date_range,
                    "tags": tags,
                    "limit": limit,
                    "offset": st.sampled_from([0, 1, 3, 50, -2]),
                },
            ),
        ),
        st.tuples(
            st.just("grep"),
            st.tuples(st.one_of(_query(), st.sampled_from(["gpu.*cluster", "g.+u", ".*", ".+"]))),
            st.fixed_dictionaries({}, optional={"limit": limit}),
        ),
        st.tuples(
            st.just("filter"),
            st.just(()),
            st.fixed_dictionaries(
                {},
                optional={
                    "source": st.sampled_from(["ops", "", None, "Ops", "council"]),
                    "min_confidence": st.sampled_from([None, 0, 0.9, 0.95, 1.0, -1]),
                    "date_after": bound,
                    "date_before": bound,
                    "limit": limit,
                },
            ),
        ),
        st.tuples(st.just("count"), st.one_of(st.just(()), st.tuples(st.one_of(st.none(), _query()))), st.just({})),
        st.tuples(
            st.just("get"),
            st.tuples(st.one_of(st.sampled_from(ids or ["m1"]), st.sampled_from(["m999", 1, "1", None]))),
            st.just({}),
        ),
        st.tuples(
            st.just("summarize"),
            st.tuples(_query()),
            st.fixed_dictionaries({}, optional={"max_results": st.sampled_from([5, 1, 0, 200])}),
        ),
    )
    return draw(st.lists(calls, min_size=10, max_size=25))


def _write(path: Path, schema: str, rows: list[tuple[Any, ...]]) -> None:
    conn = sqlite3.connect(path)
    with conn:
        conn.executescript(SCHEMAS[schema])
        conn.executemany("INSERT INTO memories VALUES (?,?,?,?,?,?,?,?)", rows)
    conn.close()


def _imported(root: Path, schema: str, rows: list[tuple[Any, ...]]) -> None:
    """``root/archive.db`` written with ``rows``, imported as a user does into ``root/index.db``
    (readable by the sandbox's unprivileged user)."""
    _write(root / "archive.db", schema, rows)
    store.build(root / "index.db", import_archive(root / "archive.db"))
    for path in (root, root / "index.db"):
        path.chmod(0o755 if path.is_dir() else 0o644)


def _answer(call: Callable[[], Any]) -> Any:
    """What a call gives, in a form both sides share: field tuples, a string, a number, or an error."""
    try:
        value = call()
    except Exception:
        return "error"
    if isinstance(value, list):
        return ("list", [dataclasses.astuple(m) for m in value])
    if dataclasses.is_dataclass(value):
        return ("memory", dataclasses.astuple(value))  # type: ignore[arg-type]
    return value


def _compare(seed: Any, ours: Any, calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]]) -> None:
    for name, args, kwargs in calls:
        want = _answer(lambda: getattr(seed, name)(*args, **kwargs))  # noqa: B023 - called at once
        got = _answer(lambda: getattr(ours, name)(*args, **kwargs))  # noqa: B023
        assert got == want, f"{name}(*{args!r}, **{kwargs!r})"


def _two_shards(root: Path, archive: Path) -> ThermalMemory:
    """The archive's records split across two index files, answering as one memory."""
    records = import_archive(archive)
    store.build(root / "a.idx", records[::2])
    store.build(root / "b.idx", records[1::2], first_id=1 << 32)
    memory = ThermalMemory.__new__(ThermalMemory)
    memory._shards = (Shard(root / "b.idx"), Shard(root / "a.idx"))  # type: ignore[misc]
    memory._budget_ms = 2000  # type: ignore[misc]
    return memory


@pytest.mark.slow
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(archive=archives(), data=st.data())
def test_every_seed_call_answers_as_the_seed(archive: tuple[str, list[tuple[Any, ...]]], data: st.DataObject) -> None:
    schema, rows = archive
    calls = data.draw(calls_for([r[0] for r in rows]))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _imported(root, schema, rows)
        seed = SeedStatements(root / "archive.db")
        for ours in (ThermalMemory(root / "index.db"), _two_shards(root, root / "archive.db")):
            try:
                _compare(seed, ours, calls)
            finally:
                ours.close()
        seed.close()


# The same comparison inside the executor: a program calls ``thermal`` as an agent does and
# prints what it got in the form ``_answer`` gives on the host.
_IN_SANDBOX = """\
import dataclasses
out = []
for name, args, kwargs in CALLS:
    try:
        value = getattr(thermal, name)(*args, **kwargs)
    except Exception:
        out.append("error")
        continue
    if isinstance(value, list):
        out.append(("list", [dataclasses.astuple(m) for m in value]))
    elif dataclasses.is_dataclass(value):
        out.append(("memory", dataclasses.astuple(value)))
    else:
        out.append(value)
print(repr(out))
"""


@pytest.mark.slow
@settings(max_examples=max(3, EXAMPLES // 12), deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(archive=archives(), data=st.data())
def test_inside_the_executor_every_seed_call_answers_as_the_seed(
    archive: tuple[str, list[tuple[Any, ...]]], data: st.DataObject
) -> None:
    from terminai_apts.executor import SandboxConfig, execute, thermal_spec

    schema, rows = archive
    calls = data.draw(calls_for([r[0] for r in rows]))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _imported(root, schema, rows)
        seed = SeedStatements(root / "archive.db")
        want = [_answer(lambda: getattr(seed, name)(*args, **kwargs)) for name, args, kwargs in calls]  # noqa: B023
        seed.close()
        program = f"CALLS = {calls!r}\n{_IN_SANDBOX}"
        result = execute(
            program,
            SandboxConfig(timeout_seconds=30, security_mode="standard"),
            api=thermal_spec(str(root / "index.db")),
        )
    assert result.success, result.error
    assert result.stdout == f"{want!r}\n"


def test_the_records_are_the_seeds_dataclass(tmp_path: Path) -> None:
    """A list of the seed's dataclass, eight fields each set once: equality, repr, asdict, list sums."""
    _write(tmp_path / "a.db", "typed", [("m1", "2026-01-04 09:30:00", "GPU plan", "gpu", None, "gpu, x,", None, None)])
    store.build(tmp_path / "i.db", import_archive(tmp_path / "a.db"))
    with ThermalMemory(tmp_path / "i.db") as thermal:
        found = thermal.search("gpu")
        assert type(found) is list and found + thermal.search("nothing") == found
        hit = found[0]
        assert thermal.get("m1") == hit
        assert dataclasses.asdict(hit) == {
            "id": "m1",
            "date": "2026-01-04 09:30:00",
            "title": "GPU plan",
            "content": "gpu",
            "summary": None,
            "tags": ["gpu", " x", ""],
            "source": None,
            "confidence": None,
        }
        assert repr(hit).startswith("Memory(id='m1', date='2026-01-04 09:30:00', title='GPU plan', content='gpu',")
        with pytest.raises(AttributeError, match="Memory objects are immutable"):
            hit.title = "x"
        assert (
            thermal.search("gpu", limit=1000) == found
            and thermal.summarize("zzz") == "No memories found matching 'zzz'"
        )


@pytest.mark.seed
@settings(max_examples=max(10, EXAMPLES // 3), deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(archive=archives(), data=st.data())
def test_the_oracle_is_the_seeds_own_code(archive: tuple[str, list[tuple[Any, ...]]], data: st.DataObject) -> None:
    """``seed_statements`` against the class in the seed document itself (``make seed-check``)."""
    assert SEED_FILE.is_file(), f"no seed document at {SEED_FILE}: set TERMINAI_SEED_000"
    schema, rows = archive
    calls = data.draw(calls_for([r[0] for r in rows]))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "archive.db"
        _write(path, schema, rows)
        oracle = SeedStatements(path)
        _compare(seed_api()(str(path)), oracle, calls)
        oracle.close()
