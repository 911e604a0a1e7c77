"""Host side: how the zygote process is started, and a start of the production zygote
that needs nothing but ``os``, ``signal`` and ``socket`` (``terminai-apts exec`` starts
it before anything else loads, and ``ZygoteClient.adopt`` takes it over).

Both starts give the zygote the same process: this command line and environment, stdio
on ``/dev/null``, its end of the control socket as the one descriptor it inherits,
``/`` as its working directory, SIGPIPE and SIGXFSZ at their defaults.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import time

ZYGOTE = "terminai_apts.executor.process.zygote"
# ``python -m MODULE`` in ``/`` (``posix_spawn`` cannot set a working directory) with the
# cyclic collector off while the module and everything it imports load (everything then
# allocated lives as long as the zygote, so the collector's passes free nothing: about a
# twentieth of the zygote's start). ``zygote.main`` turns it on again before the first
# fork, so every run has it.
_START = (
    "import gc, os, runpy, sys; os.chdir('/'); gc.disable(); "
    "runpy.run_module(sys.argv.pop(1), run_name='__main__', alter_sys=True)"
)


def command(module: str, control_fd: int, args: tuple[str, ...] = ()) -> list[str]:
    """The zygote's command line: no site, no user site, no script directory on its path."""
    return [sys.executable, "-P", "-s", "-S", "-c", _START, module, str(control_fd), *args]


def environment() -> dict[str, str]:
    """The zygote's whole environment: where this interpreter finds its modules, and a
    fixed ``PATH`` (the caller's other variables never reach it)."""
    return {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p), "PATH": "/usr/bin:/bin"}


class Spawned:
    """A zygote started by :func:`start`: what ``ZygoteClient`` uses of a ``Popen``."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                done, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                done, status = self.pid, 0
            if done:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Its exit code; ``TimeoutError`` if it has not exited within ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"the zygote {self.pid} is still running")
            time.sleep(0.001)
        return code

    def kill(self) -> None:
        if self.returncode is None:
            os.kill(self.pid, signal.SIGKILL)


def start() -> tuple[Spawned, socket.socket]:
    """Spawn the production zygote (``os.posix_spawn``, no ``subprocess``); the process
    and this side's end of its control socket. Call it while this process runs one
    thread: descriptors it inherits are listed and closed for the zygote, and one opened
    meanwhile by another thread could slip through. ``OSError`` if it cannot start."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        target = 3 if theirs.fileno() != 3 else 4
        actions: list[tuple[int, ...] | tuple[int, int, str, int, int]] = [
            (os.POSIX_SPAWN_DUP2, theirs.fileno(), target)
        ]
        actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in _inherited() if fd != target]
        actions += [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 1, 2)]
        pid = os.posix_spawn(
            sys.executable,
            command(ZYGOTE, target),
            environment(),
            file_actions=actions,
            setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),  # this interpreter ignores both
        )
    except BaseException:
        ours.close()
        raise
    finally:
        theirs.close()
    return Spawned(pid), ours


def _inherited() -> list[int]:
    """This process's descriptors above stdio that a new program would inherit."""
    found = []
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2:
            try:
                if os.get_inheritable(fd):
                    found.append(fd)
            except OSError:  # the listing's own descriptor, closed by now
                continue
    return found
