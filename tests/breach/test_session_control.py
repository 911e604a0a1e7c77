"""Sessions the host controls, after the run has escaped and forges valid answers.

The host never blocks on the run (the next cell is written without blocking and under
that cell's deadline), and the run gets no CPU outside a cell: once a cell's result or
deadline comes, every process of the run is stopped until the next cell. An unexpected
frame ends the session as failed.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator

import pytest
from terminai_apts.executor import ExecutorSession, SandboxConfig, frames
from terminai_apts.executor.host import channel, run, zygote_client

from tests.breach import harness
from tests.breach.support import group, group_ticks
from tests.breach.test_hostile_frames import FORGE, frame_of

TICK = os.sysconf("SC_CLK_TCK")
SPIN = "while True:\n    pass\n"
BIG_CELL = "#" * (1 << 20)  # far past a pipe's buffer (64 KiB)


@pytest.fixture
def session() -> Iterator[channel.RunChannel]:
    ch = channel.RunChannel(harness.zygote(), harness.DEFAULT, None)
    try:
        yield ch
    finally:
        ch.end()


def _stopped(pgid: int) -> bool:
    """Every process of the group stopped (a stop takes effect within a few ms)."""
    deadline = time.monotonic() + 1
    while {state for state, _ in group(pgid).values()} != {"T"} and time.monotonic() < deadline:
        time.sleep(0.005)
    return {state for state, _ in group(pgid).values()} == {"T"}


def _ticks_over(pgid: int, seconds: float) -> int:
    before = group_ticks(pgid)
    time.sleep(seconds)
    return group_ticks(pgid) - before


def _ticks_reach(pgid: int, ticks: int, within: float) -> bool:
    """The group spends ``ticks`` of CPU within ``within`` seconds (the sooner, the
    quieter the machine: on a loaded one the run gets a smaller share of a core)."""
    target = group_ticks(pgid) + ticks
    deadline = time.monotonic() + within
    while group_ticks(pgid) < target:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_the_next_cell_is_written_under_its_deadline(session: channel.RunChannel) -> None:
    first = session.cell(FORGE + frame_of() + "time.sleep(60)\n", 10)
    assert first["success"], first  # the forged answer is taken: it is well formed
    started = time.monotonic()
    second = session.cell(BIG_CELL, 1)  # the run no longer reads its command pipe
    assert time.monotonic() - started < 2.5
    assert second["timed_out"] and second["session_ended"], second
    assert session.cell("pass", 1)["error_type"] == "SessionClosed"


def test_a_blocking_write_would_hold_the_host(session: channel.RunChannel) -> None:
    # The companion: the same run, written to as before (a blocking write), holds the host
    # until the run is killed from outside.
    assert session.cell(FORGE + frame_of() + "time.sleep(60)\n", 10)["success"]
    os.set_blocking(session.cmd, True)
    done = threading.Event()

    def write() -> None:
        with contextlib.suppress(OSError):
            frames.write_frame(session.cmd, BIG_CELL.encode())
        done.set()

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    held = not done.wait(2.0)
    session.zygote.end(session.pid)  # the run's end breaks the pipe and frees the writer
    writer.join(5)
    assert held and done.is_set()


def test_no_cpu_outside_a_cell(session: channel.RunChannel) -> None:
    first = session.cell(FORGE + frame_of() + SPIN, 10)  # answers, then computes forever
    assert first["success"], first
    assert _stopped(session.pid)
    assert _ticks_over(session.pid, 1.0) <= 2
    # The next cell continues it, for that cell's deadline only.
    started = time.monotonic()
    second = session.cell("print(2)", 1)
    assert second["timed_out"] and second["session_ended"], second
    assert time.monotonic() - started < 2.5


def test_the_run_computes_between_cells_without_the_stop(
    session: channel.RunChannel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(channel.RunChannel, "_hold", lambda self: None)
    assert session.cell(FORGE + frame_of() + SPIN, 10)["success"]
    # A quarter of a core-second, within 10 s: a stopped run never gets there.
    assert _ticks_reach(session.pid, TICK // 4, 10.0)


def test_a_quiet_session_is_stopped_and_goes_on(session: channel.RunChannel) -> None:
    assert session.ready(10, hold=True) is None
    assert _stopped(session.pid)
    assert session.cell("x = 41", 10)["success"]
    assert _stopped(session.pid)
    assert session.cell("print(x + 1)", 10)["stdout"] == "42\n"


def test_an_unexpected_frame_ends_the_session() -> None:
    # The run answers, then sends a second frame before the host stops it: whatever the
    # interleaving, the session ends as failed, never with a result nobody asked for.
    zygote = zygote_client.ZygoteClient(module="tests.breach.zygote")
    try:
        ch = channel.RunChannel(zygote, harness.DEFAULT, None)
        body = FORGE + frame_of() + frame_of(stdout="forged", seq=2) + SPIN
        first = ch.cell(body, 10)
        # Both frames in one read: refused at once; else the spare one is met between
        # cells, or (had the stop come between the two writes) by the next cell's read.
        answers = [first] if not first["success"] else [first, ch.cell("print('two')", 1)]
        last = answers[-1]
        assert not last["success"] and last["session_ended"], answers
        assert last["error_type"] == "ProtocolError", answers
        assert all(a["stdout"] != "forged" for a in answers)
    finally:
        zygote.close()


def test_an_executor_session_ends_when_its_run_misbehaves(monkeypatch: pytest.MonkeyPatch) -> None:
    # Through ``ExecutorSession`` (what ``terminai-apts repl`` uses), validation switched off.
    monkeypatch.setattr(run, "_refusal", lambda code, config, started: None)
    factory = lambda: zygote_client.ZygoteClient(module="tests.breach.zygote")  # noqa: E731
    with ExecutorSession(SandboxConfig(timeout_seconds=1, security_mode="standard"), _zygote_factory=factory) as s:
        assert s.run(FORGE + frame_of() + SPIN).success
        assert _ticks_over(s._run.pid, 1.0) <= 2
        started = time.monotonic()
        second = s.run(BIG_CELL)
        assert second.timed_out and s.closed and time.monotonic() - started < 2.5, second
        assert s.run("print(1)").session_ended


def test_a_run_that_ends_between_cells_is_reported_as_it_ended() -> None:
    # It answers, then exits at once: the stop may catch its keeper before the keeper
    # reaps it. The next cell still reports the run's own end, not a kill for memory.
    for _ in range(3):
        ch = channel.RunChannel(harness.zygote(), harness.DEFAULT, None)
        try:
            assert ch.cell(FORGE + frame_of() + "os._exit(3)\n", 10)["success"]
            time.sleep(0.05)
            after = ch.cell("print(2)", 5)
            assert after["error_type"] == "ChildCrashed" and after["session_ended"], after
        finally:
            ch.end()
