"""Red team: the shared zygote after many hostile runs (zombies, its pool of keepers).
Runs that crash, lie about ending, or close their pipe must leave it exactly as a benign
run does: alive, its spare keepers, no zombie (scratch removal: test_redteam_scratch)."""

from __future__ import annotations

import time

from terminai_apts.executor import SandboxConfig
from terminai_apts.executor.host import zygote_client
from terminai_apts.executor.process import zygote

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


def _settled(children: dict[int, str], client: zygote_client.ZygoteClient) -> bool:
    """The zygote's spare keepers and the one its client asked ahead, no zombie."""
    keepers = zygote.SPARES + len(client.stock) + client.owed.count("spawn")
    return sum(state.endswith("k") for state in children.values()) == keepers and not any(
        state.startswith("Z") for state in children.values()
    )


def test_hostile_runs_leave_no_zombie_and_no_extra_keeper() -> None:
    client = harness.zygote()
    harness.breach("print(1)")
    harness.breach("print(1)")  # warm: the spare keepers wait, one more asked ahead
    for _ in range(3):
        for code in HOSTILE:
            harness.breach(code, SandboxConfig(timeout_seconds=2, security_mode="standard"))
    assert client.alive()
    assert client.stock or "spawn" in client.owed
    deadline = time.monotonic() + 2  # the zygote reaps and sweeps within 50 ms of going idle
    while not _settled(children := _children(client.proc.pid), client) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _settled(children, client), children  # the spare keepers, no zombie
    assert harness.breach("print(2)").stdout == "2\n"


def test_an_idle_zygote_uses_no_cpu() -> None:
    # It learns of ended children from SIGCHLD: nothing wakes it while nothing happens
    # (the zygote that swept /proc every 50 ms used about 3 ticks a second here).
    client = harness.zygote()
    assert harness.breach("print(1)").success
    time.sleep(0.5)  # the sweep due after that run's end
    before = _ticks(client.proc.pid)
    time.sleep(2.0)
    assert _ticks(client.proc.pid) - before <= 1


def _ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])
