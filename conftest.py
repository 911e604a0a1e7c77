"""Repository-wide pytest wiring.

Tests under ``tests/integration`` are marked ``integration`` automatically (they need a
real engine, registry or other service), and the assume-breach suites under ``tests/breach``
``slow`` (they run unrestricted code in hardened children, hundreds of them): ``make
test-fast`` leaves both out. Files with a ``slow`` test run first. Shared fixtures live in
``tests/fixtures``.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

pytest_plugins = ["tests.fixtures.image", "tests.fixtures.launcher", "tests.fixtures.registry"]

_INTEGRATION = Path(__file__).parent / "tests" / "integration"
_BREACH = Path(__file__).parent / "tests" / "breach"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        parents = Path(str(item.path)).parents
        if _INTEGRATION in parents:
            item.add_marker(pytest.mark.integration)
        if _BREACH in parents:
            item.add_marker(pytest.mark.slow)
    # Longest first. The files that hold a `slow` test start the run (those that wait on an
    # engine first, then those with the fewest tests: one long test each, like a build or the
    # breach suite inside the image; a file of hundreds of short ones can be shared out), so
    # under pytest-xdist no long test begins near the end with the other worker idle; short
    # tests fill in last. Whole files move, their tests in their own order, so module fixtures
    # are still set up once per worker.
    per_file = Counter(item.path for item in items)
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}

    def order(item: pytest.Item) -> tuple[bool, bool, int]:
        slow = item.path in slow_files
        waits = item.get_closest_marker("integration") is not None
        return (not slow, not waits, per_file[item.path] if slow else 0)

    items.sort(key=order)
