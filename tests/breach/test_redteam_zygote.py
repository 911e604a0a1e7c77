"""Red team: the shared zygote after many hostile runs (zombies, its pool of keepers).
Runs that crash, lie about ending, or close their pipe must leave it exactly as a benign
run does: alive, one spare keeper, no zombie (scratch removal: test_redteam_scratch)."""

from __future__ import annotations

import time

from terminai_apts.executor import SandboxConfig

from tests.breach import harness
from tests.breach.support import proc_stats
from tests.breach.test_hostile_frames import FORGE, frame_of

HOSTILE = [
    "import os\nos._exit(0)\n",  # ends before answering
    "import ctypes\nctypes.string_at(0)\n",  # crashes
    FORGE + frame_of(stdout="done") + "time.sleep(30)\n",  # answers, then lingers
    FORGE + "frame(b'garbage')\ntime.sleep(30)\n",  # a malformed frame
    FORGE + "os.close(res)\ntime.sleep(30)\n",  # closes its pipe, stays alive
]


def _children(parent: int) -> dict[int, str]:
    """``parent``'s direct children: pid -> state letter, plus "k" for a keeper (the leader
    of its own process group; the zygote's other children, clean-up processes that
    remove large scratch trees, stay in its group)."""
    return {
        pid: fields[0].decode() + ("k" if int(fields[2]) == pid else "")
        for pid, fields in proc_stats().items()
        if int(fields[1]) == parent
    }


def _settled(children: dict[int, str]) -> bool:
    return sum(state.endswith("k") for state in children.values()) == 1 and not any(
        state.startswith("Z") for state in children.values()
    )


def test_hostile_runs_leave_no_zombie_and_no_extra_keeper() -> None:
    zygote = harness.zygote()
    harness.breach("print(1)")  # warm: one spare keeper waits
    for _ in range(3):
        for code in HOSTILE:
            harness.breach(code, SandboxConfig(timeout_seconds=2, security_mode="standard"))
    assert zygote.alive()
    deadline = time.monotonic() + 2  # the zygote reaps and sweeps within 50 ms of going idle
    while not _settled(children := _children(zygote.proc.pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _settled(children), children  # the one spare keeper, no zombie
    assert harness.breach("print(2)").stdout == "2\n"


def test_an_idle_zygote_uses_no_cpu() -> None:
    # It learns of ended children from SIGCHLD: nothing wakes it while nothing happens
    # (the zygote that swept /proc every 50 ms used about 3 ticks a second here).
    zygote = harness.zygote()
    assert harness.breach("print(1)").success
    time.sleep(0.5)  # the sweep due after that run's end
    before = _ticks(zygote.proc.pid)
    time.sleep(2.0)
    assert _ticks(zygote.proc.pid) - before <= 1


def _ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])
