"""What every breach test shares: the attack prelude, the environment's expected layers."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import platform
import signal
import socket
import threading
from collections.abc import Iterable, Iterator

from terminai_apts.executor.os_layer import landlock
from terminai_apts.executor.process import child

from tests.breach import harness

assert platform.machine() == "x86_64", "the breach suite's system-call numbers are x86_64's"

# Unrestricted code starts with this: raw system calls by number, errno names back.
PRELUDE = """
import ctypes, errno, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def sc(nr, *args):
    rc = libc.syscall(nr, *args)
    return "ok" if rc >= 0 else errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
def attempt(fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
        return "ok"
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno)) if exc.errno else type(exc).__name__
    except Exception as exc:
        return type(exc).__name__
out = {}
"""
EMIT = "\nprint(json.dumps(out))\n"

# The layers a run is expected to get here (namespaces need a kernel and a seccomp
# profile that allow unshare; an unprivileged container refuses it).
EVERYTHING_OFF = (
    "namespaces", "minimal-root", "landlock", "seccomp", "privileges", "dumpable", "rlimits", "parent-death",
)  # fmt: skip


@functools.cache
def namespaces_available() -> bool:
    pid = os.fork()
    if pid == 0:
        from terminai_apts.executor.os_layer import namespaces

        os._exit(0 if namespaces.enter_run_namespaces() else 1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


@dataclasses.dataclass(frozen=True)
class Container:
    """What the container around this suite provides (``test_breach_in_image`` says so in
    the environment): where the executor has no namespaces, the guarantees they carry on a
    host rest on these, and the tests check them instead of passing on nothing."""

    host_secret: str  # a file on the host that the container does not mount
    host_pid_namespace: str  # the host's ``/proc/self/ns/pid`` link
    tmp_mib: int  # the size of the container's /tmp tmpfs


def container() -> Container | None:
    try:
        return Container(
            host_secret=os.environ["BREACH_HOST_SECRET"],
            host_pid_namespace=os.environ["BREACH_HOST_PID_NAMESPACE"],
            tmp_mib=int(os.environ["BREACH_CONTAINER_TMP_MIB"]),
        )
    except KeyError:
        return None


def landlock_abi() -> int:
    return landlock.abi_version()


def attack(body: str, **kwargs: object) -> dict[str, object]:
    """Run ``PRELUDE + body`` unrestricted in a hardened run; the ``out`` dict it built."""
    return harness.report(PRELUDE + body + EMIT, **kwargs)


@contextlib.contextmanager
def tcp_listener() -> Iterator[int]:
    """A loopback TCP server (stopped on exit) that accepts and closes connections."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError):
                conn, _ = server.accept()
                conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        server.close()


def processes_with(marker: str) -> list[int]:
    """Host pids whose command line contains ``marker``."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            with contextlib.suppress(OSError), open(f"/proc/{name}/cmdline", "rb") as fh:
                if marker.encode() in fh.read():
                    found.append(int(name))
    return found


def named(comm: str) -> list[int]:
    """Host pids whose process name (``comm``, set by ``PR_SET_NAME``) is ``comm``."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            with contextlib.suppress(OSError), open(f"/proc/{name}/comm") as fh:
                if fh.read().strip() == comm:
                    found.append(int(name))
    return found


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def proc_stats() -> dict[int, list[bytes]]:
    """Every process's ``/proc/PID/stat`` fields after the command name (state, ppid, pgrp,
    ...); processes that end while they are read are left out."""
    stats = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as fh:
                    stat = fh.read()
            except OSError:
                continue
            stats[int(name)] = stat[stat.rindex(b")") + 2 :].split()
    return stats


def group(pgid: int) -> dict[int, tuple[str, int]]:
    """The host's view of process group ``pgid``: pid -> (state letter, CPU ticks used)."""
    return {
        pid: (fields[0].decode(), int(fields[11]) + int(fields[12]))
        for pid, fields in proc_stats().items()
        if int(fields[2]) == pgid
    }


def group_ticks(pgid: int) -> int:
    """CPU ticks (user and system) used so far by the live processes of group ``pgid``."""
    return sum(ticks for _, ticks in group(pgid).values())


def in_run(arg: object, *, skip: Iterable[str] = (), number: int = 0) -> str:
    """Where a run sees the injected API's ``number``-th path argument ``arg``: a neutral
    path in a run with a root of its own (``child.NEUTRAL_API``), else the host's path."""
    if namespaces_available() and not {"namespaces", "minimal-root"} & set(skip):
        return f"{child.NEUTRAL_API}/{number}/index"
    return str(arg)
