"""The warm path's bookkeeping: answers read late stay in order, killed runs are gone at
once, and the keepers forked ahead of demand hold nothing a later caller could see."""

from __future__ import annotations

import os
import time

from terminai_apts.executor import SandboxConfig
from terminai_apts.executor.host import run
from terminai_apts.executor.host.channel import RunChannel
from terminai_apts.executor.host.zygote_client import ZygoteClient

FAST = SandboxConfig(timeout_seconds=5)


def _fresh(client: ZygoteClient, code: str, config: SandboxConfig = FAST) -> run.ExecutionResult:
    return run._run_fresh(code, config, None, lambda: client)


def test_late_answers_stay_in_order_across_every_kind_of_end() -> None:
    client = ZygoteClient()
    try:
        assert _fresh(client, "print(1)").stdout == "1\n"
        assert list(client.owed) == ["end"]  # the end was not waited for
        assert _fresh(client, "print(2)").stdout == "2\n"
        assert list(client.owed) == ["spawn", "end"]  # the next run asked ahead, then this end
        # A run with a scratch directory is ended with a report: every late answer is read
        # first, and the run asked ahead is kept for the next caller.
        assert _fresh(client, "print(3)", SandboxConfig(timeout_seconds=5, scratch=True)).stdout == "3\n"
        assert not client.owed and len(client.stock) == 1
        for number in range(4, 9):
            assert _fresh(client, f"print({number})").stdout == f"{number}\n"
    finally:
        client.close()
    assert client.proc.returncode == 0


def test_an_ended_run_is_killed_before_the_zygote_answers() -> None:
    client = ZygoteClient()
    try:
        channel = RunChannel(client, FAST, None)
        assert channel.cell("x = 1", 5, hold=True)["success"]
        pid = channel.pid
        channel.end()
        # Killed by the host itself: nothing of the run's group is left running (zombies
        # at most, until the zygote reaps them), whatever the zygote is doing.
        deadline = time.monotonic() + 2
        while _running(pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not _running(pid)
    finally:
        client.close()


def _running(pgid: int) -> bool:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as fh:
                    fields = fh.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
                return True
    return False
