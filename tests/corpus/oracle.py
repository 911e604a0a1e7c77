"""The corpus's oracle: seed 000's own statements (``tests/unit/memory/seed_statements.py``,
written from the seed's SQL and ``_row_to_memory``) over the archive's raw rows in a plain
SQLite table (``memory_fixture.fill``). It never touches our index, planner or executor.
The corpus's expected outputs are what each program prints when CPython runs it with this
``thermal`` (``run``).
"""

from __future__ import annotations

import contextlib
import io
import sqlite3

from tests.corpus import memory_fixture
from tests.unit.memory.seed_statements import SeedStatements


class SeedThermal(SeedStatements):
    """The seed's calls over an in-memory copy of the corpus archive (built where it runs)."""

    def __init__(self) -> None:
        super().__init__(memory_fixture.fill(sqlite3.connect(":memory:")))


def run(code: str) -> str:
    """What ``code`` prints under CPython with the oracle as ``thermal``."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "<corpus>", "exec"), {"thermal": SeedThermal(), "__name__": "__main__"})
    return out.getvalue()
