"""The state a run starts user code in, read from inside with the Python layer gone, and
the layers the host was told about before any user code ran."""

from __future__ import annotations

import os

from tests.breach import harness
from tests.breach.support import attack, landlock_abi, namespaces_available

STATE = """
import resource
out["euid"] = os.geteuid()
out["env"] = dict(os.environ)
out["cwd"] = os.getcwd()
out["limits"] = {name: resource.getrlimit(getattr(resource, name))[0]
                 for name in ("RLIMIT_FSIZE", "RLIMIT_NPROC", "RLIMIT_CORE", "RLIMIT_MEMLOCK", "RLIMIT_NOFILE")}
out["no_new_privs"] = libc.prctl(39, 0, 0, 0, 0)  # PR_GET_NO_NEW_PRIVS: refused by the filter
out["pid"] = os.getpid()
"""


def test_user_code_starts_in_a_bare_process() -> None:
    out = attack(STATE)
    assert out["env"] == {} and out["cwd"] == "/"
    assert out["limits"] == {
        "RLIMIT_FSIZE": 0,
        "RLIMIT_NPROC": 0,
        "RLIMIT_CORE": 0,
        "RLIMIT_MEMLOCK": 0,
        "RLIMIT_NOFILE": 32,
    }
    assert out["no_new_privs"] == -1
    if os.geteuid() == 0:
        assert out["euid"] == harness.DEFAULT.unprivileged_uid
    if namespaces_available():
        assert out["pid"] == 1  # the first process of its own PID namespace


def test_the_host_learns_the_layers_before_user_code_runs() -> None:
    result = harness.breach("print(1)")
    expected = ["namespaces", "minimal-root"] if namespaces_available() else []
    if landlock_abi():
        expected.append(f"landlock-abi{landlock_abi()}")
    expected.append("seccomp")
    assert list(result.isolation) == expected
