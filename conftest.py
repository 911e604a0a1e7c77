"""Repository-wide pytest wiring.

Tests under ``tests/integration`` are marked ``integration`` automatically (they need a
real engine, registry or other service), and the assume-breach suites under ``tests/breach``
``slow`` (they run unrestricted code in hardened children, hundreds of them): ``make
test-fast`` leaves both out. The collection is ordered so that pytest-xdist's workers get
slices of about equal expected time, each longest first (``schedule``). Shared fixtures
live in ``tests/fixtures``; ``tests/fixtures/bytecode.py`` writes the bytecode caches once,
before the workers start, so that they do not each rewrite and compile every module.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

pytest_plugins = [
    "tests.fixtures.bytecode",
    "tests.fixtures.image",
    "tests.fixtures.launcher",
    "tests.fixtures.registry",
]

_INTEGRATION = Path(__file__).parent / "tests" / "integration"
_BREACH = Path(__file__).parent / "tests" / "breach"
_DURATIONS = Path(__file__).parent / "tests" / "durations.json"
_DEFAULT_SECONDS = 0.1  # a test of a file tests/durations.json does not list
_SLOW_SECONDS = 10.0  # the same, marked `slow`


def pytest_itemcollected(item: pytest.Item) -> None:
    parents = Path(str(item.path)).parents
    if _INTEGRATION in parents:
        item.add_marker(pytest.mark.integration)
    if _BREACH in parents:
        item.add_marker(pytest.mark.slow)


@pytest.hookimpl(trylast=True)  # after `-m` and `-k` selected: xdist splits what is left
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    workerinput = getattr(config, "workerinput", None)
    items[:] = schedule(items, int(workerinput["workercount"]) if workerinput else 1)


def _cost_table() -> dict[str, float]:
    try:
        table: dict[str, float] = json.loads(_DURATIONS.read_text())["seconds"]
    except (OSError, ValueError, KeyError):
        return {}
    return table


def schedule(items: list[pytest.Item], workers: int) -> list[pytest.Item]:
    """The collection in the order that shares it evenly among ``workers``.

    pytest-xdist's ``worksteal`` hands each worker a contiguous slice of the collection
    (the same number of tests each) and only later moves the unstarted tail of a queue to
    an idle worker. Ordered longest first as one list, every long test (an image build, the
    breach suite inside the image) would sit in the first worker's slice, one after the
    other. Here each slice gets about the same expected time, its longest tests first:
    files go to the slice expected to end first (largest first; one that would take it past
    its fair share is shared out), then slices with too many tests hand their cheapest ones
    to slices with too few. The expected seconds per file come from ``tests/durations.json``;
    a file not listed counts ``_DEFAULT_SECONDS`` a test (``_SLOW_SECONDS`` when marked
    ``slow``). A stale figure only makes the slices less even; work stealing still evens
    out the end. Every worker computes the same order (xdist checks that they collected the
    same list).
    """
    table = _cost_table()
    files: dict[str, list[pytest.Item]] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::", 1)[0], []).append(item)

    def cost(name: str) -> float:
        if name in table:
            return table[name]
        return sum(_SLOW_SECONDS if i.get_closest_marker("slow") else _DEFAULT_SECONDS for i in files[name])

    costs = {name: cost(name) for name in files}
    # The slice sizes xdist's worksteal sends: each worker in turn gets the pending tests
    # divided by the workers still without any.
    sizes, left = [], len(items)
    for index in range(workers):
        sizes.append(left // (workers - index))
        left -= sizes[-1]
    # Files, largest first, to the slice expected to end first; a file of many tests that
    # would take that slice past its fair share is shared out ...
    each = {name: costs[name] / len(files[name]) for name in files}
    fair = sum(costs.values()) / workers
    slices: list[list[tuple[str, list[pytest.Item]]]] = [[] for _ in range(workers)]
    load = [0.0] * workers
    for name in sorted(files, key=lambda n: (-costs[n], n)):
        tests = files[name]
        while tests:
            target = min(range(workers), key=lambda w: (load[w], w))
            fits = max(1, math.ceil((fair - load[target]) / each[name])) if each[name] > 0 else len(tests)
            part, tests = tests[:fits], tests[fits:]
            slices[target].append((name, part))
            load[target] += each[name] * len(part)
    # ... then the sizes made right: a slice with too many tests hands its cheapest ones
    # (the tail of its file with the lowest cost a test) to the slice short of tests that
    # is expected to end first.
    for giver in range(workers):
        while sum(len(part) for _, part in slices[giver]) > sizes[giver]:
            extra = sum(len(part) for _, part in slices[giver]) - sizes[giver]
            short = [w for w in range(workers) if sum(len(part) for _, part in slices[w]) < sizes[w]]
            taker = min(short, key=lambda w: (load[w], w))
            room = sizes[taker] - sum(len(part) for _, part in slices[taker])
            index = min(range(len(slices[giver])), key=lambda i: (each[slices[giver][i][0]], slices[giver][i][0]))
            name, part = slices[giver][index]
            moved = part[len(part) - min(extra, room, len(part)) :]
            slices[giver][index] = (name, part[: len(part) - len(moved)])
            if not slices[giver][index][1]:
                del slices[giver][index]
            slices[taker].append((name, moved))
            load[giver] -= each[name] * len(moved)
            load[taker] += each[name] * len(moved)
    ordered: list[pytest.Item] = []
    for parts in slices:
        for _, part in sorted(parts, key=lambda p: (-each[p[0]], p[0])):  # the longest tests first
            ordered += part
    return ordered
