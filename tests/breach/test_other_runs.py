"""No effect on other runs or the host: no signal, ptrace, /proc read or memory of
anything outside the run; no state of one run visible to the next."""

from __future__ import annotations

import os
import re
import threading
import time
import uuid

from terminai_apts.executor import ExecutorSession, SandboxConfig

from tests.breach import harness
from tests.breach.support import EVERYTHING_OFF, attack, landlock_abi, namespaces_available, proc_stats

PROBE = """
targets = {targets}
for name, pid in targets.items():
    out["kill:" + name] = sc(62, pid, 0)  # signal 0: may I signal it?
    out["tgkill:" + name] = sc(234, pid, pid, 0)
    out["pidfd:" + name] = sc(434, pid, 0)
    out["ptrace:" + name] = sc(101, 0x4206, pid, 0, 0)  # PTRACE_SEIZE
    buf = ctypes.create_string_buffer(8)
    class iovec(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
    local, remote = iovec(ctypes.addressof(buf), 8), iovec(0x400000, 8)
    out["vm_read:" + name] = sc(310, pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
    for leaf in ("environ", "cmdline", "maps", "mem"):
        out["proc:" + name + ":" + leaf] = attempt(lambda: open(f"/proc/{{pid}}/{{leaf}}", "rb").read(1))
"""


def _targets(session: ExecutorSession) -> dict[str, int]:
    return {
        "host": os.getpid(),
        "zygote": harness.zygote().proc.pid,
        "other-run": session._run.pid,
    }


def test_nothing_outside_the_run_can_be_signalled_traced_or_read() -> None:
    with ExecutorSession(SandboxConfig(timeout_seconds=10)) as other:
        assert other.run("x = 1").success
        out = attack(PROBE.format(targets=_targets(other)))
        assert other.run("print(x)").stdout == "1\n"  # the other run is untouched
    allowed = {k: v for k, v in out.items() if v == "ok"}
    assert allowed == {}, allowed
    proc = {v for k, v in out.items() if k.startswith("proc:")}
    if namespaces_available():  # the run's own /proc names none of them
        assert proc == {"ENOENT"}, out
    elif landlock_abi():
        assert proc <= {"EACCES"}, out


def test_the_other_run_is_reachable_when_every_layer_is_off() -> None:
    with ExecutorSession(SandboxConfig(timeout_seconds=10)) as other:
        out = attack(PROBE.format(targets=_targets(other)), skip=EVERYTHING_OFF)
    assert out["kill:other-run"] == "ok" and out["kill:host"] == "ok", out


def _memory_holds(pid: int, needle: bytes) -> bool:
    """Search every readable mapping of ``pid`` (run by the test, outside any sandbox).

    A run is not dumpable, so only root may look into it; for anyone else the run's
    memory is unreadable, which is the guarantee itself."""
    try:
        maps, mem = open(f"/proc/{pid}/maps"), open(f"/proc/{pid}/mem", "rb", 0)  # noqa: SIM115
    except PermissionError:
        assert os.geteuid() != 0
        return False
    except (FileNotFoundError, ProcessLookupError):  # it ended meanwhile (a finished run going away)
        return False
    with maps, mem:
        for line in maps:
            match = re.match(r"([0-9a-f]+)-([0-9a-f]+) r", line)
            if not match or "[vvar]" in line or "[vsyscall]" in line:
                continue
            start, end = (int(x, 16) for x in match.groups())
            try:
                mem.seek(start)
                if needle in mem.read(end - start):
                    return True
            except OSError:
                continue
    return False


def test_no_caller_data_reaches_the_zygote_or_the_next_run() -> None:
    secret = "breach-secret-" + uuid.uuid4().hex
    first = harness.breach(f"s = {secret!r}\nprint(s * 3)\n")
    assert first.stdout.startswith(secret)
    # The zygote never held the code, the setup or the output (they bypass it) ...
    zygote = harness.zygote()
    assert not _memory_holds(zygote.proc.pid, secret.encode())
    # ... so a later run, forked from it, holds nothing of the first one either.
    later = threading.Thread(target=harness.breach, args=("import time\ntime.sleep(1.5)\n",))
    later.start()
    try:
        time.sleep(0.5)
        runs = _descendants(zygote.proc.pid)
        assert runs, "the later run was not found"
        assert not any(_memory_holds(pid, secret.encode()) for pid in runs)
    finally:
        later.join()


def _descendants(root: int) -> list[int]:
    parents = {pid: int(fields[1]) for pid, fields in proc_stats().items()}
    found, frontier = [], [root]
    while frontier:
        parent = frontier.pop()
        kids = [pid for pid, ppid in parents.items() if ppid == parent]
        found += kids
        frontier += kids
    return found
