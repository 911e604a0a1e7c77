"""What a run can learn about the machine: not its host name (a UTS namespace named
"sandbox"), not its process count, memory, uptime or disk use (``sysinfo``, ``statfs``
and ``fstatfs`` refused), and it cannot pass for another process in the host's process
list (``PR_SET_NAME`` refused). Each with the companion showing the leak without the
layer that closes it."""

from __future__ import annotations

import os

from tests.breach.support import attack, container, namespaces_available

PROBE = """
out["nodename"] = os.uname().nodename
buf = ctypes.create_string_buffer(512)
out["sysinfo"] = sc(99, buf)
out["statfs"] = sc(137, b"/", buf)
out["fstatfs"] = sc(138, 0, buf)
out["set-name"] = sc(157, 15, b"kworker/0:1", 0, 0, 0)
name = ctypes.create_string_buffer(16)
out["get-name"] = sc(157, 16, name, 0, 0, 0)
"""


def test_the_run_learns_nothing_of_the_machine() -> None:
    out = attack(PROBE)
    assert out["sysinfo"] == out["statfs"] == out["fstatfs"] == "EPERM", out
    assert out["set-name"] == "EPERM" and out["get-name"] == "ok", out
    if namespaces_available():
        assert out["nodename"] == "sandbox", out
    else:  # documented: in a container the run sees the container's name, not the machine's
        assert container() is not None and out["nodename"] != "", out
    assert out["nodename"] != os.uname().nodename or container() is not None, out


def test_the_host_name_leaks_without_the_namespaces() -> None:
    out = attack(PROBE, skip=("namespaces", "minimal-root"))
    assert out["nodename"] == os.uname().nodename, out


def test_the_machine_leaks_without_seccomp() -> None:
    out = attack(PROBE, skip=("seccomp",))
    assert out["sysinfo"] == out["statfs"] == out["fstatfs"] == out["set-name"] == "ok", out
