"""As root the zygote forks each run straight into namespaces of its own (no keeper): it
enters them for the fork alone and goes back to its own after it. Checked from outside
with the kernel's own view (``/proc/PID/ns``, ``NSpid``), not the zygote's word."""

from __future__ import annotations

import os
import time

import pytest
from terminai_apts.executor import SandboxConfig
from terminai_apts.executor.host import run
from terminai_apts.executor.host.zygote_client import ZygoteClient

from tests.breach.support import proc_stats

FAST = SandboxConfig(timeout_seconds=5)
KINDS = ("net", "ipc", "uts", "pid", "pid_for_children", "mnt")

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs are forked straight into their namespaces as root only")


def _namespaces(pid: int | str) -> dict[str, str]:
    return {kind: os.readlink(f"/proc/{pid}/ns/{kind}") for kind in KINDS}


def _runs(zygote: int) -> list[int]:
    """The zygote's children that lead a process group of their own: its waiting runs."""
    return [
        pid
        for pid, fields in proc_stats().items()
        if int(fields[1]) == zygote and int(fields[2]) == pid and fields[0] not in (b"Z", b"X")
    ]


def _waiting(zygote: int) -> dict[int, dict[str, str]]:
    """The namespaces of each run waiting for a caller (an ended one may vanish meanwhile)."""
    found = {}
    for pid in _runs(zygote):
        try:
            found[pid] = _namespaces(pid) | {"ns_pid": str(_ns_pid(pid))}
        except (FileNotFoundError, StopIteration):
            continue
    return found


def _ns_pid(pid: int) -> list[int]:
    with open(f"/proc/{pid}/status") as fh:
        line = next(line for line in fh if line.startswith("NSpid:"))
    return [int(n) for n in line.split()[1:]]


def _at_home(zygote: int, within: float = 2.0) -> bool:
    """Whether the zygote is in its own namespaces once idle (between the unshare and the
    return of a fork ahead of demand it is not: that is what it does meanwhile)."""
    deadline = time.monotonic() + within
    while True:
        try:
            if _namespaces(zygote) == _namespaces("self"):
                return True
        except FileNotFoundError:
            pass  # the PID namespace entered has no process yet: mid-fork
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)


def _exercise(client: ZygoteClient, runs: int = 4) -> None:
    for number in range(runs):
        result = run._run_fresh(f"print({number})", FAST, None, lambda: client)
        assert result.stdout == f"{number}\n", result


def test_the_zygote_goes_back_to_its_own_namespaces_and_each_run_has_its_own() -> None:
    client = ZygoteClient()
    try:
        _exercise(client)
        assert _at_home(client.proc.pid)
        time.sleep(0.1)  # the spares forked ahead of demand are ready
        assert _at_home(client.proc.pid)
        waiting = _waiting(client.proc.pid)
        assert len(waiting) >= 2  # the spares forked ahead of demand
        seen = list(waiting.values())
        for pid, spaces in waiting.items():
            # PID 1 of a PID namespace of its own, the zygote's own child: no keeper between.
            assert spaces["ns_pid"] == str([pid, 1])
            for kind in ("net", "ipc", "uts", "pid"):
                assert spaces[kind] != _namespaces("self")[kind], (kind, pid)
        for kind in ("net", "ipc", "uts", "pid", "mnt"):
            assert len({spaces[kind] for spaces in seen}) == len(seen), kind  # never shared
    finally:
        client.close()
    assert client.proc.returncode == 0


def test_a_zygote_that_stays_in_a_runs_namespaces_is_caught() -> None:
    """The companion: with the return switched off, the check above fails."""
    client = ZygoteClient(module="tests.unit.executor.zygote_stays")
    try:
        _exercise(client, runs=1)
        assert not _at_home(client.proc.pid, within=0.5)
    finally:
        client.close()
