"""Each test module's harness zygotes end with the module: none stays alive (and none
competes for the machine) while the rest of the suite runs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.breach import harness


@pytest.fixture(autouse=True, scope="module")
def _close_zygotes() -> Iterator[None]:
    yield
    harness.close_all()
