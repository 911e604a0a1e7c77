"""Per-run namespaces: PID, IPC and network (with a user namespace when not root).

Called in the run's first process (the "keeper"): it unshares, then forks the sandboxed
process, which is PID 1 of a fresh PID namespace. When that process ends, the kernel
kills everything left in the namespace, and the IPC namespace (SysV segments, POSIX
message queues) and the empty network namespace go with it.

Inside an unprivileged container (Docker's and Podman's default seccomp profiles refuse
``unshare``) this is unavailable; the run then rests on seccomp, Landlock and the
keeper's process-group kill instead (``docs/SECURITY.md`` says which guarantee rests on
which layer).
"""

from __future__ import annotations

import ctypes
import os

CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
RUN_NAMESPACES = CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWNET


def enter_run_namespaces() -> bool:
    """Unshare the run's namespaces; False when the kernel or a filter refuses."""
    libc = ctypes.CDLL(None, use_errno=True)
    uid, gid = os.getuid(), os.getgid()
    flags = RUN_NAMESPACES if os.geteuid() == 0 else RUN_NAMESPACES | CLONE_NEWUSER
    if libc.unshare(flags) != 0:
        return False
    if flags & CLONE_NEWUSER:
        # Map only our own ids, so the namespace grants nothing over anyone else's files.
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
    return True


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


_CAP_VERSION_3 = 0x20080522


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def drop_capabilities() -> None:
    """Clear every capability (a new user namespace grants a full set within it)."""
    header = _CapHeader(_CAP_VERSION_3, 0)
    data = (_CapData * 2)()
    if ctypes.CDLL(None, use_errno=True).capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")
