"""kill -9 at a random instant of a stream of appends loses no acknowledged entry.

A real child process appends decisions through ``MemoryJournal.write_decision`` and
prints each entry's hash once the call returned (acknowledged). The parent kills it with
SIGKILL at a random moment, then checks with the chain file's own lines (``json``, not
the journal's reader) that every acknowledged hash is there, that ``verify`` reports no
problem (an interrupted write is pending at most), and that the next append and
``verify --repair`` leave a clean journal. The appends flush the chain line with
``fdatasync`` and leave the hot buffer's rename unflushed: a kill keeps the page cache,
so this is what a kill can and cannot do to them.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from terminai_apts.memory import checks
from terminai_apts.memory.journal import DECISIONS, MemoryJournal

pytestmark = pytest.mark.slow
TRIALS = 12
CHILD = """
import sys
from terminai_apts.memory.journal import MemoryJournal
j = MemoryJournal(sys.argv[1])
n = 0
while True:
    entry = j.write_decision(f"decision {n}", "r", "o", "agent", True)
    print(entry["hash"], flush=True)
    n += 1
"""


def test_kill_9_during_appends_loses_no_acknowledged_entry(tmp_path: Path) -> None:
    rng = random.Random(35)
    for trial in range(TRIALS):
        root = tmp_path / f"journal-{trial}"
        MemoryJournal(root).write_decision("first", "r", "o", "agent", True)
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(root)], stdout=subprocess.PIPE, text=True, env=dict(os.environ)
        )
        assert child.stdout is not None
        acknowledged = [child.stdout.readline().strip() for _ in range(rng.randint(1, 20))]
        time.sleep(rng.uniform(0, 0.01))  # somewhere inside a later append
        child.send_signal(signal.SIGKILL)
        rest, _ = child.communicate(timeout=60)
        acknowledged += [line for line in rest.splitlines() if line.strip()]
        held = {
            json.loads(line).get("hash")
            for line in (root / DECISIONS).read_bytes().splitlines()
            if line.strip() and line.endswith(b"}")
        }
        lost = [h for h in acknowledged if h not in held]
        assert not lost, f"trial {trial}: {len(lost)} acknowledged entries lost"
        report = checks.inspect(root)
        assert not report.problems, f"trial {trial}: {report.problems}"
        journal = MemoryJournal(root)
        journal.repair()
        journal.write_decision("after the kill", "r", "o", "agent", True)
        after = checks.inspect(root)
        assert not after.problems and not after.pending, f"trial {trial}: {after.problems} {after.pending}"
