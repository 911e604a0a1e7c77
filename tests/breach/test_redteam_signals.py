"""Red team: signals to anything outside the run by routes other than kill(2).

``fcntl(F_SETOWN)`` plus ``O_ASYNC`` on one of the run's own pipes makes the kernel send
SIGIO (or any ``F_SETSIG`` signal, SIGKILL included) to the owner whenever the host
reads or writes the other end: no ``kill`` system call is made, so a filter that only
refuses ``kill``/``tgkill`` does not stop it. The victim here is a run without a PID
namespace, as every run is inside an unprivileged container.
"""

from __future__ import annotations

import collections.abc

import pytest
from terminai_apts.executor.host import channel

from tests.breach import harness
from tests.breach.support import EVERYTHING_OFF, attack

SIGIO_OWNER = """
import fcntl, stat
F_SETSIG, F_SETOWN_EX = 10, 15
for fd in range(3, 64):
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            continue
    except OSError:
        continue
    kind = "res" if fcntl.fcntl(fd, fcntl.F_GETFL) & 3 == os.O_WRONLY else "cmd"
    out["setown:" + kind] = attempt(fcntl.fcntl, fd, fcntl.F_SETOWN, -{pgid})  # the victim's group
    out["setsig:" + kind] = attempt(fcntl.fcntl, fd, F_SETSIG, 9)  # SIGKILL instead of SIGIO
    out["async:" + kind] = attempt(fcntl.fcntl, fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_ASYNC)
# The host reading the result frame now fires the signal at the owner.
"""


@pytest.fixture
def victim() -> collections.abc.Iterator[channel.RunChannel]:
    """A live run with state, in no PID namespace (as in an unprivileged container)."""
    zygote = harness.zygote(frozenset({"namespaces"}))
    session = channel.RunChannel(zygote, harness.DEFAULT, None)
    assert session.cell("x = 41", 10)["success"]
    try:
        yield session
    finally:
        session.end()


def _alive(victim: channel.RunChannel) -> bool:
    return bool(victim.cell("print(x + 1)", 10)["stdout"] == "42\n")


def test_sigio_cannot_signal_another_run(victim: channel.RunChannel) -> None:
    out = attack(SIGIO_OWNER.format(pgid=victim.pid))
    assert _alive(victim), out
    # Refused at F_SETOWN (the run sees no such group, or the filter refuses it), or the
    # kernel drops the signal at delivery (Landlock's signal scope, ABI 6).
    assert out["setown:res"] in {"ESRCH", "EPERM", "ok"}, out


def test_seccomp_alone_refuses_sigio_owners(victim: channel.RunChannel) -> None:
    # No namespaces and no Landlock signal scope (an unprivileged container on a kernel
    # before 6.12): only the filter stands between the run and the other run.
    skip = ("namespaces", "landlock")
    out = attack(SIGIO_OWNER.format(pgid=victim.pid), skip=skip)
    assert out["setown:res"] == "EPERM" and out["setown:cmd"] == "EPERM", out
    assert _alive(victim)


def test_sigio_kills_another_run_when_every_layer_is_off(victim: channel.RunChannel) -> None:
    out = attack(SIGIO_OWNER.format(pgid=victim.pid), skip=EVERYTHING_OFF)
    assert out["setown:res"] == "ok", out
    assert not _alive(victim)  # the attack is real: the test above can fail


OTHER_ROUTES = """
sigval = ctypes.create_string_buffer(128)
out["kill(-1)"] = sc(62, -1, 0)  # every process the run's uid may signal
out["kill(0)"] = sc(62, 0, 0)  # its own process group
out["kill(-pgrp)"] = sc(62, -{pgid}, 0)
out["rt_sigqueueinfo"] = sc(129, {pid}, 10, sigval)
out["rt_tgsigqueueinfo"] = sc(297, {pid}, {pid}, 10, sigval)
out["tkill"] = sc(200, {pid}, 0)
out["pidfd_send_signal"] = sc(424, 0, 10, None, 0)
sev = ctypes.create_string_buffer(64)  # SIGEV_THREAD_ID at another task
ctypes.memmove(ctypes.addressof(sev) + 8, ctypes.byref(ctypes.c_int(10)), 4)
ctypes.memmove(ctypes.addressof(sev) + 12, ctypes.byref(ctypes.c_int(4)), 4)
ctypes.memmove(ctypes.addressof(sev) + 16, ctypes.byref(ctypes.c_int({pid})), 4)
out["timer_create-thread-id"] = sc(222, 1, sev, ctypes.create_string_buffer(8))
out["prctl-pdeathsig-reset"] = sc(157, 1, 0, 0, 0, 0)  # outlive the keeper
out["prctl-child-subreaper"] = sc(157, 36, 1, 0, 0, 0)
out["prctl-set-mm"] = sc(157, 35, 8, 0, 0, 0)  # PR_SET_MM_START_STACK
out["prctl-ptracer-any"] = sc(157, 0x59616D61, -1, 0, 0, 0)  # PR_SET_PTRACER_ANY
"""


def test_no_other_route_to_signal_or_outlive(victim: channel.RunChannel) -> None:
    out = attack(OTHER_ROUTES.format(pid=victim.pid, pgid=victim.pid))
    assert set(out.values()) == {"EPERM"}, out
    assert _alive(victim)


def test_kill_minus_one_reaches_others_without_the_filter(victim: channel.RunChannel) -> None:
    out = attack(OTHER_ROUTES.format(pid=victim.pid, pgid=victim.pid), skip=EVERYTHING_OFF)
    assert out["kill(-1)"] == "ok" and out["kill(-pgrp)"] == "ok", out
