"""Repository-wide pytest wiring.

Tests under ``tests/integration`` are marked ``integration`` automatically (they need a
real engine, registry or other service); shared fixtures live in ``tests/fixtures``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["tests.fixtures.image", "tests.fixtures.launcher", "tests.fixtures.registry"]

_INTEGRATION = Path(__file__).parent / "tests" / "integration"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _INTEGRATION in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.integration)
