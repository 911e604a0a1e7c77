"""A run is forked from the zygote itself (as root, with no keeper in between): while
other sessions are open and spare runs wait, user code holds stdio on ``/dev/null`` and
its own two pipes, nothing of the zygote (its control socket, its namespaces' handles,
its wake-up pipe) and no other run's pipes, whichever kind of run it got."""

from __future__ import annotations

import json
import os
import stat

from terminai_apts.executor import ExecutorSession, SandboxConfig
from terminai_apts.executor.host import run
from terminai_apts.executor.host.zygote_client import ZygoteClient
from terminai_apts.executor.policy import ApiSpec

from tests.breach import harness
from tests.breach.support import EMIT, PRELUDE, attack

# An injected API that opens no file: a caller with it gets a run that is not sealed.
NOTES = ApiSpec(name="notes", factory="tests.unit.executor.fake_api:NotesApi", args=("n",), methods=("search",))

LIST = """
import stat
fds = {}
for fd in range(1024):
    try:
        info = os.fstat(fd)
    except OSError:
        continue
    fds[fd] = [stat.S_IFMT(info.st_mode), info.st_ino]
out["fds"] = fds
"""


def _others_open() -> tuple[ExecutorSession, ExecutorSession]:
    """Two sessions of the harness zygote, open (their runs' pipes are that zygote's to hand on)."""
    first, second = (ExecutorSession(harness.DEFAULT, _zygote_factory=harness.zygote) for _ in range(2))
    assert first.run("x = 1").success and second.run("y = 2").success
    return first, second


def _kinds(fds: dict[str, list[int]]) -> dict[int, int]:
    return {int(fd): kind for fd, (kind, _) in fds.items()}


def test_a_run_holds_only_stdio_and_its_own_pipes() -> None:
    first, second = _others_open()
    try:
        harness.breach("print(1)")
        harness.breach("print(1)")  # warm: spare runs wait beside this one
        cases = [
            {"config": harness.DEFAULT},  # sealed: entered its root while it waited
            {"config": SandboxConfig(timeout_seconds=10, security_mode="high", scratch=True)},
            {"config": harness.DEFAULT, "api": NOTES},  # unsealed: an injected API needs one
        ]
        for case in cases:
            out = attack(LIST, **case)
            fds = _kinds(out["fds"])  # type: ignore[arg-type]
            null = os.stat(os.devnull)
            assert {fd: fds[fd] for fd in (0, 1, 2)} == dict.fromkeys((0, 1, 2), stat.S_IFCHR), out
            assert sorted(kind for fd, kind in fds.items() if fd > 2) == [stat.S_IFIFO, stat.S_IFIFO], out
            assert all(ino == null.st_ino for fd, (_, ino) in out["fds"].items() if int(fd) <= 2), out  # type: ignore[union-attr]
    finally:
        first.close()
        second.close()


def test_a_run_forked_without_the_zygotes_clean_up_holds_other_runs_pipes() -> None:
    """The companion: a zygote that neither closes its own descriptors in a new run nor
    lets the run close what it inherited hands the run its control socket, its wake-up
    pipe and, once spares wait (from the fourth run on), the host's ends of a spare run's
    pipes: the run could write that run's code and read its results."""
    client = ZygoteClient(module="tests.breach.zygote_leaky")
    try:
        for _ in range(4):
            result = run._run_fresh(PRELUDE + LIST + EMIT, harness.DEFAULT, None, lambda: client)
            assert result.success, result.error
        kinds = _kinds(json.loads(result.stdout.splitlines()[-1])["fds"])
    finally:
        client.close()
    extra = [kind for fd, kind in kinds.items() if fd > 2]
    assert stat.S_IFSOCK in extra, kinds  # the zygote's control socket
    # Its own two pipe ends, the zygote's wake-up pipe, and a spare run's two host ends.
    assert extra.count(stat.S_IFIFO) >= 6, kinds
