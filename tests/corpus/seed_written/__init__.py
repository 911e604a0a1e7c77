"""Programs written from seeds 000 and 001 alone (not from this project's docs) over an
archive shaped like a team's hand-kept export (``archive.sql``: dates with and without
times and zones, NULLs, empty strings, spaced and trailing-comma tags, ``%``, ``_`` and
non-ASCII text). ``expected/`` holds what each prints under CPython with the seed's own
``ThermalMemoryAPI`` (``python -m tests.corpus.seed_written.regenerate``, with the seed
document at hand)."""

from __future__ import annotations

import contextlib
import io
import sqlite3
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
PROGRAMS = sorted((ROOT / "programs").glob("*.py"))


def write_archive(path: Path) -> Path:
    """The archive, as ``sqlite3 path < archive.sql`` writes it."""
    conn = sqlite3.connect(path)
    conn.executescript((ROOT / "archive.sql").read_text(encoding="utf-8"))
    conn.close()
    return path


def expected(program: Path) -> str:
    return (ROOT / "expected" / f"{program.stem}.out").read_text(encoding="utf-8")


def run(program: Path, thermal: Any) -> str:
    """What ``program`` prints under CPython with ``thermal`` bound, as the seed's REPL binds it."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(program.read_text(), str(program), "exec"), {"thermal": thermal, "__name__": "__main__"})
    return out.getvalue()
