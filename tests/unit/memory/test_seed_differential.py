"""Differential test: the extensions (``search_results``, ``filter_results``, ``count_results``,
``record``) against an oracle of seed 000's semantics over the index's normalized values
(``seed_oracle``: days, whole tags). The seed's own calls are held to the seed's
statements on the stored values by ``test_seed_exact``.

Generated archives in the seed's schema (dates on edge days and before year 1000, ties,
tags that are prefixes of other tags, non-ASCII text, ``C++`` next to ``c``, ``%`` and
``_`` in text and queries) are imported the way a user does it (``memory index
--archive``), then every documented call is made with random arguments on both sides.
Ids, order, counts and every field of every memory must be the same, from one index
file and from a journal directory (the same records in per-quarter shards).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
from terminai_apts.memory import store
from terminai_apts.memory.api import ThermalMemory
from terminai_apts.memory.cli import import_archive
from terminai_apts.memory.tiers import LIVE_INDEX

from tests.unit.memory.seed_oracle import Row, SeedMemory, SeedOracle, write_archive

EDGE_DAYS = (
    "0999-01-01",
    "0999-12-31",
    "1000-01-01",
    "1999-12-31",
    "2000-02-29",
    "2024-02-29",
    "2024-12-31",
    "2025-01-01",
    "2025-06-30",
    "2025-07-01",
    "2025-12-31",
    "2026-01-01",
    "9998-12-31",
)
WORDS = (
    "fix",
    "Fix",
    "prefix",
    "FIXED",
    "c",
    "C++",
    "c#",
    "cache",
    "GPU",
    "gpu",
    "allocation",
    "postgres",
    "Postgres",
    "migration",
    "Straße",
    "STRASSE",
    "strasse",
    "ß",
    "naïve",
    "NAÏVE",
    "Ærø",
    "ærø",
    "İstanbul",
    "istanbul",
    "\u212aelvin",  # KELVIN SIGN: SQLite's trigram index folds it to "k", LIKE does not
    "kelvin",
    "\u017ftop",  # LONG S: folded to "s" by the trigram index, not by LIKE
    "stop",
    "50%",
    "a_b",
    "axb",
    "PROJ-1234",
    "v2.1",
    "user's",
    "日本語",
    "🙂",
    "the",
    "and",
    "deploy",
    "decision",
    "ok",
)
TAGS = ("gpu", "gpu-pool", "infra", "db", "decision", "ops", "x", "Mixed")
QUERIES = (
    "fix",
    "FIX",
    "c",
    "C++",
    "c++",
    "ß",
    "ss",
    "SS",
    "straße",
    "naïve",
    "NAÏVE",
    "æ",
    "Æ",
    "kel",
    "KEL",
    "stop",
    "top",
    "50%",
    "%",
    "_",
    "a_b",
    "",
    "v2.1",
    "user's",
    "日本",
    "🙂",
    "GPU allocation",
    "the",
    # three ASCII characters: counted from the trigram's posting list (outer % are free)
    "the%",
    "%Sto",
    "elv",
    "PROJ-12",
    "absent-word",
    "x",
    # one or two characters: answered by the piece bitmaps, folded as LIKE folds
    "go",
    "ok",
    "OK",
    "é",
    "ẞ",
    "\u212a",
    "K",
    "ſ",
    "İ",
    "ı",
    "50",
    "%5",
    "0%",
    "%%",
    "日",
)


def _text(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


def _day(rng: random.Random) -> str:
    if rng.random() < 0.35:
        return rng.choice(EDGE_DAYS)
    return f"{rng.randint(2023, 2026)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def make_rows(rng: random.Random, n: int) -> list[Row]:
    rows: list[Row] = []
    for i in range(n):
        # String ids as archives have them, numeric-looking ones too.
        mid = rng.choice((f"m{i}", f"note-{i}", str(1000 + i)))
        tags = rng.sample(TAGS, rng.randint(0, 3))
        rows.append(
            (
                mid,
                _day(rng),
                _text(rng, 1, 5),
                _text(rng, 0, 14),
                _text(rng, 0, 4),
                rng.choice((",", ", ")).join(tags),
                rng.choice(("slack", "email", "jira")),
                round(rng.random(), 2),
            )
        )
    return rows


def _seed(m: SeedMemory) -> dict[str, Any]:
    return asdict(m)


def _ours(m: Any) -> dict[str, Any]:
    return {
        "id": m.id,
        "date": m.date,
        "title": m.title,
        "content": m.content,
        "summary": m.summary,
        "tags": list(m.tags),
        "source": m.source,
        "confidence": m.confidence,
    }


def _memories(results: Any) -> list[dict[str, Any]]:
    return [_ours(h.memory) for h in results]


def _journal(root: Path, archive: Path) -> Path:
    """The archive as a compacted journal holds it: one sealed shard per quarter, the newest
    quarter as the live index, so every call also merges across files."""
    quarters: dict[str, list[Any]] = {}
    for rec in import_archive(archive):
        quarters.setdefault(f"{rec.date[:4]}-Q{(int(rec.date[5:7]) - 1) // 3 + 1}", []).append(rec)
    *sealed, live = sorted(quarters)
    for quarter in sealed:
        shard = root / "cold" / quarter / "shard.sqlite"
        shard.parent.mkdir(parents=True)
        store.build(shard, quarters[quarter], first_id=store.shard_base(quarter) + 1)
    store.build(root / LIVE_INDEX, quarters[live])
    return root


@pytest.fixture(scope="module")
def built() -> dict[tuple[int, str], tuple[Path, Path]]:
    """The archive and index of each pair, built once per module: every test only reads them."""
    return {}


@pytest.fixture(params=[(11, "index"), (22, "index"), (33, "index"), (44, "journal"), (55, "journal")])
def pair(
    request: pytest.FixtureRequest,
    built: dict[tuple[int, str], tuple[Path, Path]],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[random.Random, list[Row], SeedOracle, ThermalMemory]]:
    seed, layout = request.param
    rng = random.Random(seed)
    rows = make_rows(rng, 300)  # each test draws its queries from the same state of `rng`
    if (seed, layout) not in built:
        where = tmp_path_factory.mktemp(f"seed-{seed}-{layout}")
        archive = where / "seed.db"
        write_archive(archive, rows)
        index = where / "index.db"
        if layout == "index":
            store.build(index, import_archive(archive))
        else:
            index = _journal(where / "journal", archive)
        built[seed, layout] = archive, index
    archive, index = built[seed, layout]
    oracle, ours = SeedOracle(archive), ThermalMemory(index, budget_ms=60_000)
    yield rng, rows, oracle, ours
    oracle.close()
    ours.close()


def _query(rng: random.Random, rows: list[Row]) -> str:
    if rng.random() < 0.5:
        return rng.choice(QUERIES)
    text = rng.choice(rows)[rng.choice((2, 3))]
    if len(text) < 2:
        return text
    a = rng.randrange(len(text))
    b = min(len(text), a + rng.randint(1, 12))
    piece = text[a:b]
    return piece.swapcase() if rng.random() < 0.3 else piece


def _range(rng: random.Random) -> tuple[str, str] | None:
    if rng.random() < 0.4:
        return None
    a, b = _day(rng), _day(rng)
    return (a, b) if a <= b or rng.random() < 0.1 else (b, a)


def _tags(rng: random.Random) -> list[str] | None:
    return None if rng.random() < 0.5 else rng.sample(TAGS, rng.randint(1, 3))


def test_search_and_count(pair: tuple[random.Random, list[Row], SeedOracle, ThermalMemory]) -> None:
    rng, rows, oracle, ours = pair
    for _ in range(150):
        q, span, tags = _query(rng, rows), _range(rng), _tags(rng)
        limit = rng.choice((None, 0, 1, 3, 20, 60))
        kw: dict[str, Any] = {"date_range": span, "tags": tags}
        if limit is not None:
            kw["limit"] = limit
        want = [_seed(m) for m in oracle.search(q, **kw)]
        res = ours.search_results(q, **kw)
        assert _memories(res) == want, (q, kw)
        n = oracle.count(q, span, tags)
        assert ours.count_results(q, date_range=span, tags=tags) == n, (q, span, tags)
        assert res.total == n and res.truncated == (len(want) < n), (q, kw)  # an extension, also exact


def test_filter(pair: tuple[random.Random, list[Row], SeedOracle, ThermalMemory]) -> None:
    rng, _rows, oracle, ours = pair
    for _ in range(100):
        after = _day(rng) if rng.random() < 0.6 else None
        before = _day(rng) if rng.random() < 0.6 else None
        tags = _tags(rng)
        limit = rng.choice((None, 1, 7, 50, 80))
        kw: dict[str, Any] = {"date_after": after, "date_before": before, "tags": tags}
        if limit is not None:
            kw["limit"] = limit
        want = [_seed(m) for m in oracle.filter(**kw)]
        assert _memories(ours.filter_results(**kw)) == want, kw


def test_grep(pair: tuple[random.Random, list[Row], SeedOracle, ThermalMemory]) -> None:
    rng, rows, oracle, ours = pair
    patterns = ["fix(ed)?", r"c\+\+", r"\d{4}", "gpu|postgres", "^deploy", r"v2\.1", "straße", r"a.b"]
    for _ in range(40):
        pattern = rng.choice(patterns) if rng.random() < 0.6 else re.escape(_query(rng, rows)) or "x"
        if not pattern.isascii():
            # Case folding beyond ASCII is RE2's, not Python's (docs/MEMORY_API.md: `i` is
            # not `İ`); the seed documents no regex engine, so only ASCII is compared.
            pattern = "x"
        limit = rng.choice((None, 1, 10, 50))
        kw: dict[str, Any] = {} if limit is None else {"limit": limit}
        want = [_seed(m) for m in oracle.grep(pattern, **kw)]
        assert _memories(ours.grep_results(pattern, **kw)) == want, (pattern, kw)


def test_record(pair: tuple[random.Random, list[Row], SeedOracle, ThermalMemory]) -> None:
    rng, rows, oracle, ours = pair
    for row in rng.sample(rows, 40):
        got = ours.record(row[0])
        assert got is not None and _ours(got) == _seed(oracle.get(row[0]))  # type: ignore[arg-type]
    for missing in ("m999999", "nope", "", "M1"):
        assert ours.record(missing) is None and oracle.get(missing) is None
    numeric = [r[0] for r in rows if r[0].isdigit()]
    if numeric:  # an int finds the text id it spells, as SQLite's TEXT affinity does
        assert _ours(ours.record(int(numeric[0]))) == _seed(oracle.get(numeric[0]))  # type: ignore[arg-type]


def test_what_a_sandboxed_program_sees(tmp_path: Path) -> None:
    """The same comparison inside the executor: what an agent's program receives as
    ``thermal`` from the extensions (records with a string ``id``, ``YYYY-MM-DD`` dates,
    ``tags`` as a list, a ``LookupError`` from ``record`` for a missing id) is the oracle's answer."""
    from terminai_apts.executor import SandboxConfig, execute, thermal_spec

    rng = random.Random(44)
    rows = make_rows(rng, 200)
    folder = tmp_path / "memory"
    folder.mkdir()
    archive, index = folder / "seed.db", folder / "index.db"
    write_archive(archive, rows)
    store.build(index, import_archive(archive))
    for path in (folder, archive, index):
        path.chmod(0o755 if path.is_dir() else 0o644)
    calls = [(_query(rng, rows), _range(rng), _tags(rng), rng.choice((1, 5, 20))) for _ in range(12)]
    filters = [(_day(rng), _day(rng), _tags(rng)) for _ in range(4)]
    ids = [rows[0][0], rows[-1][0], "m999999"]
    program = (
        "import json\n"
        f"calls = {calls!r}\nfilters = {filters!r}\nids = {ids!r}\n"
        "find, pick = thermal.search_results, thermal.filter_results\n"
        "out = [[m.to_dict() for m in find(q, date_range=d, tags=t, limit=n)] for q, d, t, n in calls]\n"
        "out += [[m.to_dict() for m in pick(date_after=a, date_before=b, tags=t)] for a, b, t in filters]\n"
        "def record(i):\n    try:\n        return thermal.record(i)\n    except LookupError:\n        return None\n"
        "got = [record(i) for i in ids]\n"
        "out.append([None if m is None else m.to_dict() for m in got])\n"
        "out.append([isinstance(m.tags, list) for m in got if m is not None])\n"
        "print(json.dumps(out))\n"
    )
    result = execute(program, SandboxConfig(timeout_seconds=20, security_mode="high"), api=thermal_spec(str(index)))
    assert result.success, result.error
    seen = json.loads(result.stdout)
    oracle = SeedOracle(archive)
    want: list[Any] = [[_seed(m) for m in oracle.search(q, d, t, n)] for q, d, t, n in calls]
    want += [[_seed(m) for m in oracle.filter(a, b, t)] for a, b, t in filters]
    want.append([None if m is None else _seed(m) for m in (oracle.get(i) for i in ids)])
    want.append([True, True])
    oracle.close()
    fields = ("id", "date", "title", "content", "summary", "tags", "source", "confidence")
    shown = [
        [None if m is None else {k: m[k] for k in fields} for m in answer] if i < len(seen) - 1 else answer
        for i, answer in enumerate(seen)
    ]
    assert shown == want
