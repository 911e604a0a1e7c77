"""Red team: allowed system calls that take another process's pid, and what the run's
own memory holds of the host.

``get_robust_list`` returns a pointer into another process's memory (an address-space
layout leak) and ``prlimit64`` with no new limit reads another process's limits; both
are allowed by the filter for the run's own use. The kernel's ptrace-style check, the
PID namespace, the uid drop, non-dumpable processes and Landlock's ptrace scope must keep
them to the run itself.
"""

from __future__ import annotations

import json
import os
import uuid

import pytest
from terminai_apts.executor.host import run, zygote_client

from tests.breach import harness
from tests.breach.support import EMIT, EVERYTHING_OFF, PRELUDE, attack, landlock_abi

PEEK = """
for name, pid in {targets}.items():
    head, size = ctypes.c_void_p(), ctypes.c_size_t()
    out["robust-list:" + name] = sc(274, pid, ctypes.byref(head), ctypes.byref(size))
    out["prlimit-read:" + name] = sc(302, pid, 7, None, (ctypes.c_uint64 * 2)())
    out["sched_getparam:" + name] = sc(143, pid, ctypes.create_string_buffer(8))
out["robust-list:self"] = sc(274, 0, ctypes.byref(ctypes.c_void_p()), ctypes.byref(ctypes.c_size_t()))
"""


def _targets() -> dict[str, int]:
    return {"host": os.getpid(), "zygote": harness.zygote().proc.pid}


def test_no_pointer_or_limit_of_another_process() -> None:
    out = attack(PEEK.format(targets=_targets()))
    assert out.pop("robust-list:self") == "ok", out  # allowed for the run itself
    assert {k: v for k, v in out.items() if v == "ok"} == {}, out


def test_each_guard_alone_keeps_the_pointer_private() -> None:
    # No namespaces (as in the image). Landlock's ptrace scope alone (the run keeps root's
    # capabilities here) refuses the pointer; it has no say over limits.
    if landlock_abi():
        out = attack(PEEK.format(targets=_targets()), skip=("namespaces", "privileges", "dumpable"))
        assert out["robust-list:host"] != "ok" and out["robust-list:zygote"] != "ok", out
    # The filter alone: a run reads its own limits only (inside the image every process
    # shares the run's uid and nothing else would refuse it).
    out = attack(PEEK.format(targets=_targets()), skip=("namespaces", "landlock", "privileges", "dumpable"))
    assert out["prlimit-read:host"] == "EPERM" and out["prlimit-read:zygote"] == "EPERM", out
    if os.geteuid() == 0:  # where the host is root, the uid drop alone refuses both
        out = attack(PEEK.format(targets=_targets()), skip=("namespaces", "landlock"))
        assert out["robust-list:host"] != "ok" and out["prlimit-read:host"] != "ok", out


def test_the_pointer_leaks_when_every_layer_is_off() -> None:
    out = attack(PEEK.format(targets=_targets()), skip=EVERYTHING_OFF)
    assert out["robust-list:host"] == "ok" and out["prlimit-read:host"] == "ok", out


INITIAL_STACK = """
libc.getauxval.restype = ctypes.c_ulong
libc.getauxval.argtypes = [ctypes.c_ulong]
top = libc.getauxval(31)  # AT_EXECFN: the last string the kernel put on the initial stack
base = (top & ~4095) - 7 * 4096  # argv and environment strings sit just below it
blob = ctypes.string_at(base, top - base)
out["saw-environment"] = b"PATH=" in blob
out["canary"] = b"{canary}" in blob
"""


def test_no_host_environment_reaches_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    # os.environ.clear() empties the run's view, but the strings the process started with
    # stay on its initial stack: the zygote must have been started with none of the host's.
    canary = "breach-canary-" + uuid.uuid4().hex
    monkeypatch.setenv("TERMINAI_BREACH_CANARY", canary)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", canary)
    zygote = zygote_client.ZygoteClient(module="tests.breach.zygote")  # started from this environment
    try:
        result = run._run_fresh(
            PRELUDE + INITIAL_STACK.format(canary=canary) + EMIT, harness.DEFAULT, None, lambda: zygote
        )
    finally:
        zygote.close()
    out = json.loads(result.stdout.splitlines()[-1])
    assert out == {"saw-environment": True, "canary": False}, out  # the scan works; nothing leaked
