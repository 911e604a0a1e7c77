from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
DAY = 86400

Maker = Callable[..., Path]


@pytest.fixture()
def make_file(tmp_path: Path) -> Maker:
    root = tmp_path / "dl"
    root.mkdir(exist_ok=True)

    def make(rel: str | bytes, content: bytes = b"x", age: float = 10 * DAY) -> Path:
        raw = rel if isinstance(rel, bytes) else rel.encode()
        path = os.fsencode(root) + b"/" + raw
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(content)
        stamp = NOW.timestamp() - age
        os.utime(path, (stamp, stamp))
        return Path(os.fsdecode(path))

    make.root = root  # type: ignore[attr-defined]
    return make
