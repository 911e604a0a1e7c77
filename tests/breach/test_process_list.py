"""How a run shows in the host's process list. Its command line is its own memory (the
argument strings at the top of its stack), so a run can rewrite what ``ps`` prints for
it, even to a kernel thread's bracketed name, with no system call to refuse (nor can
one be: unmapping that memory makes ``ps`` print its name in brackets too). What the
host can rely on is the kernel's own view: its name (``comm``, ``PR_SET_NAME`` being
refused), its flags (never a kernel thread's), its parent (the zygote) and its PID
namespace."""

from __future__ import annotations

import contextlib
import threading
import time

from terminai_apts.executor import SandboxConfig

from tests.breach import harness
from tests.breach.support import PRELUDE, namespaces_available, proc_stats

TITLE = b"[kworker/0:1-events]"
PF_KTHREAD = 0x00200000

REWRITE = (
    PRELUDE
    + f"""
import time
start = ctypes.c_void_p.in_dll(libc, "program_invocation_name").value  # argv[0]'s bytes
ctypes.memset(start, 0, sum(len(arg.encode()) + 1 for arg in sys.orig_argv))
ctypes.memmove(start, {TITLE!r}, {len(TITLE)})
time.sleep(3)
"""
)


def _read(path: str) -> bytes:
    with contextlib.suppress(OSError), open(path, "rb") as fh:
        return fh.read()
    return b""


def test_a_run_that_rewrites_its_command_line_is_still_known_for_a_run() -> None:
    zygote = harness.zygote()
    assert harness.breach("print(1)").success
    config = SandboxConfig(timeout_seconds=8, security_mode="standard")
    attack = threading.Thread(target=harness.breach, args=(REWRITE, config))
    attack.start()
    try:
        found, deadline = None, time.monotonic() + 5
        while found is None and time.monotonic() < deadline:
            for pid, fields in proc_stats().items():
                if int(fields[1]) == zygote.proc.pid and _read(f"/proc/{pid}/cmdline").startswith(TITLE):
                    found = pid, fields
            time.sleep(0.05)
        assert found is not None, "the rewritten command line did not show"  # the limit, shown
        pid, fields = found
        assert b"kworker" not in _read(f"/proc/{pid}/comm")  # its name stays the interpreter's
        assert int(fields[6]) & PF_KTHREAD == 0  # the kernel's flags: a user process
        assert int(fields[2]) == pid  # the leader of its own group, the zygote's child
        if namespaces_available():
            status = _read(f"/proc/{pid}/status").decode()
            ns_pid = next(line for line in status.splitlines() if line.startswith("NSpid:"))
            assert ns_pid.split()[1:] == [str(pid), "1"], ns_pid  # PID 1 of a namespace of its own
    finally:
        attack.join()
