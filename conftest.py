"""Repository-wide pytest wiring.

Tests under ``tests/integration`` are marked ``integration`` automatically (they need a
real engine, registry or other service), and the assume-breach suites under ``tests/breach``
``slow`` (they run unrestricted code in hardened children, hundreds of them): ``make
test-fast`` leaves both out. Shared fixtures live in ``tests/fixtures``.
"""

from __future__ import annotations

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
