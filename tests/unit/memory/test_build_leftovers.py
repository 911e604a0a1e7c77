"""An index build killed with ``kill -9`` leaves its temp file; the next build removes it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from terminai_apts import durable
from terminai_apts.memory import ThermalMemory, store

from tests.unit.memory.conftest import make_records

# A build that stops for good after its first step (the records are in the temp file).
CHILD = """
import sys, time
from pathlib import Path
from terminai_apts.memory import store
from tests.unit.memory.conftest import make_records

def stop(step, seconds):
    print(step, flush=True)
    time.sleep(600)

store.build(Path(sys.argv[1]), make_records() * 1, progress=stop)
"""


def _leftovers(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir() if p.name.startswith(f".{path.name}."))


def test_a_killed_build_leaves_files_that_the_next_build_removes(tmp_path: Path) -> None:
    index = tmp_path / "mem.db"
    store.build(index, make_records())
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(index)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[3],
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "records"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    left = _leftovers(index)
    assert left and all(name.startswith(f".mem.db.{child.pid}.tmp") for name in left)  # what kill -9 leaves
    with ThermalMemory(index) as mem:
        assert mem.count_results() == 5  # the old index is intact
    store.build(index, make_records())
    assert _leftovers(index) == []


def test_files_of_a_running_writer_and_other_names_are_kept(tmp_path: Path) -> None:
    index = tmp_path / "mem.db"
    dead = 2**22 + 1  # above Linux's largest pid: no process has it
    for name in (f".mem.db.{dead}.tmp", f".mem.db.{dead}.tmp-journal", ".mem.db.1.tmp", ".mem.db.x.tmp", "keep.tmp"):
        (tmp_path / name).write_bytes(b"x" * 1024)
    removed = durable.remove_leftovers(index)
    assert sorted(p.name for p in removed) == [f".mem.db.{dead}.tmp", f".mem.db.{dead}.tmp-journal"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".mem.db.1.tmp", ".mem.db.x.tmp", "keep.tmp"]  # pid 1 runs
