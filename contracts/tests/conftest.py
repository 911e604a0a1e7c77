"""Fixtures of the contract suite.

This suite checks an *installed* T-APTS against the contract manifest. It runs on the
host in `make test` and inside the built image (non-root, read-only root file system,
no network), so it imports nothing from the host tooling, writes only under pytest's
temporary directories, and needs nothing beyond pytest and the standard library.
"""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

NOW = "2026-11-21T12:00:00Z"
DAY = 86400


# The suite's helpers live beside it; it runs from a copied directory inside the image.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from contract_support import load_manifest  # noqa: E402


@pytest.fixture(scope="session")
def manifest() -> dict[str, Any]:
    return load_manifest()


@pytest.fixture()
def downloads(tmp_path: Path) -> Path:
    """A small downloads tree touching every label, with times relative to NOW."""
    root = tmp_path / "Downloads"
    root.mkdir()
    base = datetime.fromisoformat(NOW.replace("Z", "+00:00")).astimezone(UTC).timestamp()
    files = {
        "a.pdf": (b"same bytes", 20 * DAY),
        "a (1).pdf": (b"same bytes", 10 * DAY),
        "empty.txt": (b"", 5 * DAY),
        "big.iso": (b"iso", 90 * DAY),
        "movie.mkv.part": (b"partial", DAY),
        "fresh.txt": (b"just now", 10),
        "old/thesis.docx": (b"thesis", 400 * DAY),
        "keep.md": (b"keep me", 3 * DAY),
    }
    for rel, (content, age) in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        os.utime(path, (base - age, base - age))
    (root / "link.pdf").symlink_to("a.pdf")
    return root
