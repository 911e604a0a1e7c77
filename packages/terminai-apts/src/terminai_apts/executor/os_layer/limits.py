"""Layer 6 (child side): process limits applied in the forked child before user code.

Never called in the host process: only the forked child applies these to itself.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import resource
import select
import signal

_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_CHILD_SUBREAPER = 36


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)  # once per process (see rootfs._libc)


def _prctl(option: int, value: int, what: str) -> None:
    if _libc().prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"{what} failed")


def set_no_new_privs() -> None:
    _prctl(_PR_SET_NO_NEW_PRIVS, 1, "PR_SET_NO_NEW_PRIVS")


def set_not_dumpable() -> None:
    """/proc/PID/{mem,environ,fd,maps} become root's, so other runs cannot read them."""
    _prctl(_PR_SET_DUMPABLE, 0, "PR_SET_DUMPABLE")


def die_with_parent(parent: int | None = None) -> None:
    """SIGKILL when the parent dies (set after any uid change, which clears it).

    ``parent``: a pidfd of the parent, for a process whose parent is outside its PID
    namespace: there ``getppid()`` is 0 before and after the parent's death, so only the
    pidfd (readable once the parent has exited) tells that it died before the request
    took effect."""
    before = os.getppid()
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, "PR_SET_PDEATHSIG")
    if os.getppid() != before or (parent is not None and select.select([parent], [], [], 0)[0]):
        os._exit(70)  # the parent died before the request took effect


def become_subreaper() -> None:
    """Orphans of a run are re-parented here (and reaped), never to the system's init."""
    _prctl(_PR_SET_CHILD_SUBREAPER, 1, "PR_SET_CHILD_SUBREAPER")


def close_inherited(keep: set[int]) -> None:
    """Point stdio at /dev/null and close every other descriptor not in ``keep``."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        if fd not in keep:
            os.dup2(devnull, fd)
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in keep:
            with contextlib.suppress(OSError):
                os.close(fd)


def drop_privileges(uid: int, gid: int) -> None:
    if os.getuid() != 0 and os.geteuid() != 0:
        return
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    if os.geteuid() == 0:  # fail closed: never run user code as root
        raise OSError("could not drop root")


def baseline_address_space() -> int:
    with open("/proc/self/statm", "rb") as fh:
        pages = int(fh.read().split()[0])
    return pages * os.sysconf("SC_PAGE_SIZE")


_LIMITS = (
    resource.RLIMIT_AS, resource.RLIMIT_CPU, resource.RLIMIT_FSIZE, resource.RLIMIT_NOFILE,
    resource.RLIMIT_NPROC, resource.RLIMIT_CORE, resource.RLIMIT_MEMLOCK, resource.RLIMIT_MSGQUEUE,
)  # fmt: skip


def read_limits() -> list[tuple[int, int]]:
    """The limits ``set_rlimits`` sets, and the baseline it reads, read only."""
    baseline_address_space()
    return [resource.getrlimit(limit) for limit in _LIMITS]


def set_rlimits(*, memory_mb: int, cpu_seconds: int, max_open_files: int, file_bytes: int) -> None:
    budget = baseline_address_space() + memory_mb * 1024 * 1024
    for limit, value in (
        (resource.RLIMIT_AS, budget),
        (resource.RLIMIT_CPU, cpu_seconds),
        (resource.RLIMIT_FSIZE, file_bytes),
        (resource.RLIMIT_NOFILE, max_open_files),
        (resource.RLIMIT_NPROC, 0),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_MEMLOCK, 0),
        (resource.RLIMIT_MSGQUEUE, 0),
    ):
        # The CPU hard limit sits one second above the soft one: SIGXCPU, then SIGKILL.
        hard = value + 1 if limit == resource.RLIMIT_CPU else value
        resource.setrlimit(limit, (value, hard))
