"""The warm path's bookkeeping: answers read late stay in order, killed runs are gone at
once, the keepers forked ahead of demand hold nothing a later caller could see, and a run
that entered its root ahead (sealed) goes only to a caller without an injected API."""

from __future__ import annotations

import os
import time

import pytest
from terminai_apts.executor import ApiSpec, SandboxConfig
from terminai_apts.executor.host import run
from terminai_apts.executor.host.channel import RunChannel
from terminai_apts.executor.host.zygote_client import ZygoteClient

from tests.breach.support import proc_stats

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
    return any(int(fields[2]) == pgid and fields[0] not in (b"Z", b"X") for fields in proc_stats().values())


# An injected API whose factory lives outside the read set: imported before the run
# enters its root, so only a run that has not entered it yet can take it.
API = ApiSpec(name="notes", factory="tests.unit.executor.fake_api:NotesApi", args=("n",), methods=("search",))
API_CODE = "print(notes.search('note', 1)[0].uid)"


def test_runs_sealed_ahead_go_to_callers_without_an_api_only() -> None:
    client = ZygoteClient()
    try:
        for number in range(4):
            assert _fresh(client, f"print({number})").stdout == f"{number}\n"
            if number:  # a sealed run asked ahead for the next caller
                assert any(sealed for *_, sealed in client.stock) or "spawn" in client.owed
            result = run._run_fresh(API_CODE, FAST, API.to_json(), lambda: client)
            assert (result.success, result.stdout) == (True, "n0\n"), result
            assert "minimal-root" in result.isolation or os.geteuid() != 0
    finally:
        client.close()
    assert client.proc.returncode == 0


def test_a_sealed_run_handed_an_api_fails_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The companion: with the host's choice switched off, a sealed run is handed the API
    setup; it ends before it runs anything rather than run without its API's files."""
    client = ZygoteClient()
    try:
        for number in range(3):  # from the second request on, the spares are sealed
            assert _fresh(client, f"print({number})").stdout == f"{number}\n"
        spawn = client.spawn
        monkeypatch.setattr(client, "spawn", lambda sealed_ok=False: spawn(sealed_ok=True))
        result = run._run_fresh(API_CODE, FAST, API.to_json(), lambda: client)
        if os.geteuid() == 0:  # sealed runs need a root of their own
            assert not result.success and result.error_type == "ChildCrashed", result
            assert result.stdout == ""
        monkeypatch.undo()
        assert run._run_fresh(API_CODE, FAST, API.to_json(), lambda: client).stdout == "n0\n"
    finally:
        client.close()
