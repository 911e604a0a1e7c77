"""Red team, fifth round: the warm path (the host kills an ended run's group itself, spare
keepers forked ahead, the zygote reaps on SIGCHLD), attacked by a run whose Python layer
has fallen.

A run holds exactly its two pipes, sees no process, no ``/proc`` and no ``/tmp``, and may
not signal, fork, start a thread or write a byte to a file; so it cannot reach a spare
keeper, the zygote or the next caller's run. What it can still do is end its result pipe
and keep running: the host then asks the zygote for the run's status with a grace
(``zygote.MAX_GRACE``) for the run to exit by itself, during which the zygote answers no
other caller. That stall is bounded by the grace, which these tests keep.
"""

from __future__ import annotations

import threading
import time

from terminai_apts.executor import SandboxConfig
from terminai_apts.executor.process import zygote

from tests.breach import harness
from tests.breach.test_hostile_frames import FORGE

# closes its result pipe, then computes for far longer than the grace
CLOSE_AND_SPIN = FORGE + "os.close(res)\nend = time.time() + 20\nwhile time.time() < end:\n    pass\n"
CONFIG = SandboxConfig(timeout_seconds=10, security_mode="standard")

REACH = """
import json, os, resource, stat, threading
found = {}
def attempt(name, fn):
    try:
        found[name] = repr(fn())
    except BaseException as exc:
        found[name] = type(exc).__name__
fds = []
for fd in range(3, 1024):
    try:
        os.fstat(fd)
        fds.append(fd)
    except OSError:
        pass
found['fds'] = fds
attempt('signal_parent', lambda: os.kill(os.getppid(), 0))
for near in (2, 3, 4, 5):
    attempt('signal_%d' % near, lambda near=near: os.kill(near, 0))
attempt('signal_all', lambda: os.kill(-1, 0))
attempt('setsid', os.setsid)
attempt('setpgid', lambda: os.setpgid(0, 0))
attempt('fork', os.fork)
attempt('thread', lambda: threading.Thread(target=len, args=('',)).start())
attempt('proc', lambda: os.listdir('/proc'))
attempt('tmp', lambda: os.listdir('/tmp'))
attempt('file_size', lambda: resource.getrlimit(resource.RLIMIT_FSIZE))
print(json.dumps(found))
"""


def test_a_run_reaches_nothing_but_its_two_pipes() -> None:
    """Nothing of a spare keeper, the zygote or another run is in reach (pid namespace,
    seccomp, no ``/proc``, no shared directory)."""
    found = harness.report(REACH, config=CONFIG)
    assert len(found["fds"]) == 2  # type: ignore[arg-type]
    for name in ("signal_parent", "signal_2", "signal_3", "signal_4", "signal_5", "signal_all"):
        assert found[name] == "PermissionError", (name, found[name])
    for name in ("setsid", "setpgid", "fork"):
        assert found[name] == "PermissionError", (name, found[name])
    assert found["thread"] == "RuntimeError"
    assert found["proc"] == "PermissionError"
    # No shared /tmp: absent from a root of its own, or (where the run's binds pass through
    # /tmp, or it has no root of its own, as in the image under Docker) not readable: Landlock.
    assert found["tmp"] in {"FileNotFoundError", "PermissionError"}, found["tmp"]
    assert found["file_size"] == "(0, 0)"


def test_a_run_that_closes_its_pipe_holds_the_zygote_at_most_its_grace() -> None:
    harness.breach("print(1)", CONFIG)
    harness.breach("print(1)", CONFIG)  # warm: spare keepers wait
    started = time.monotonic()
    result = harness.breach(CLOSE_AND_SPIN, CONFIG)
    took = time.monotonic() - started
    assert not result.success
    assert took < zygote.MAX_GRACE + 1.0, took  # not the 20 s the run asked for
    # The zygote's own kill after the grace is said as such, never as the memory limit's.
    assert (result.error_type, result.error) == ("ChildCrashed", "the run closed its result pipe and did not exit")
    assert not result.memory_exceeded

    # Another caller of the same zygote, while a hostile run is in its grace: delayed by
    # at most the rest of that grace.
    done: dict[str, float] = {}

    def hostile() -> None:
        begin = time.monotonic()
        harness.breach(CLOSE_AND_SPIN, CONFIG)
        done["hostile"] = time.monotonic() - begin

    thread = threading.Thread(target=hostile)
    thread.start()
    time.sleep(0.3)
    begin = time.monotonic()
    benign = harness.breach("print(2)", CONFIG)
    done["benign"] = time.monotonic() - begin
    thread.join()
    assert benign.stdout == "2\n"
    assert done["benign"] < zygote.MAX_GRACE + 1.0, done
    assert done["hostile"] < zygote.MAX_GRACE + 1.5, done
