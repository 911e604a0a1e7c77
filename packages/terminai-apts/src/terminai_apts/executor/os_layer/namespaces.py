"""Per-run namespaces: PID, IPC, network and UTS (with a user namespace when not root).

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

import contextlib
import ctypes
import functools
import os

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
RUN_NAMESPACES = CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWNET | CLONE_NEWUTS
# What a run's uname() names as its host and domain (never the machine's own names).
HOST_NAME = b"sandbox"


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)  # once per process (see rootfs._libc)


def enter_run_namespaces() -> bool:
    """Unshare the run's namespaces; False when the kernel or a filter refuses."""
    libc = _libc()
    uid, gid = os.getuid(), os.getgid()
    flags = RUN_NAMESPACES if os.geteuid() == 0 else RUN_NAMESPACES | CLONE_NEWUSER
    if libc.unshare(flags) != 0:
        return False
    if flags & CLONE_NEWUSER:
        # Map only our own ids, so the namespace grants nothing over anyone else's files.
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
    for call in (libc.sethostname, libc.setdomainname):
        if call(HOST_NAME, len(HOST_NAME)) != 0:
            raise OSError(ctypes.get_errno(), "naming the run's UTS namespace failed")
    return True


# The namespaces a process can return to with setns (what ``enter_run_namespaces``
# changes, root's case: no user namespace); for PID, setns to its own namespace makes
# its next child a member again (the run's namespace held only the one child).
_HOME_KINDS = (("net", CLONE_NEWNET), ("ipc", CLONE_NEWIPC), ("uts", CLONE_NEWUTS), ("pid", CLONE_NEWPID))


class Home:
    """The calling process's own namespaces, held open so it can enter a run's
    namespaces, fork the run into them and come back (``enter_for_child``/``back``).

    Only where no user namespace is needed (root): a process never returns to the user
    namespace it came from. This saves each run a process: the zygote forks the run
    straight into its namespaces instead of a keeper that unshares and forks again
    (two page-table copies and a keeper's copy-on-write faults per run).
    """

    def __init__(self) -> None:
        self.fds: tuple[tuple[int, int], ...] = ()
        opened = []
        try:
            for name, kind in _HOME_KINDS:
                opened.append((os.open(f"/proc/self/ns/{name}", os.O_RDONLY | os.O_CLOEXEC), kind))
            self.fds = tuple(opened)
            # Where setns is refused (a sandboxing runtime, a filter), the way back would
            # fail only after a run's namespaces were entered: find out here instead.
            self.back()
        except OSError:
            for fd, _ in opened:
                os.close(fd)
            self.fds = ()
            raise

    def enter_for_child(self) -> bool:
        """Unshare the run's namespaces in this process (its next child is PID 1 of a new
        PID namespace); False when refused or incomplete, and back home then (a keeper
        then tries, and fails the run closed if naming its UTS namespace fails there too)."""
        if os.geteuid() != 0:
            return False
        try:
            return enter_run_namespaces()
        except OSError:
            self.back()
            return False

    def back(self) -> None:
        """Return to this process's own namespaces (raises: the caller must not go on in
        a run's namespaces, nor fork another run into the same PID namespace)."""
        libc = _libc()
        for fd, kind in self.fds:
            if libc.setns(fd, kind) != 0:
                raise OSError(ctypes.get_errno(), "returning from a run's namespaces failed")

    def close(self) -> None:
        for fd, _ in self.fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.fds = ()


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


_MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 0x2, 0x4, 0x8
_MS_REC, _MS_PRIVATE = 0x4000, 0x40000


def private_tmpfs(path: str, *, size_bytes: int, inodes: int, uid: int, gid: int) -> None:
    """Mount a capped tmpfs on ``path`` in a mount namespace of the caller's own (called
    in the sandboxed process of a run that has its namespaces, before its capabilities go).
    It disappears with the run's last process; raises ``OSError`` on any failure."""
    libc = _libc()
    options = f"size={size_bytes},nr_inodes={inodes},mode=0700,uid={uid},gid={gid}".encode()
    if libc.unshare(CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "scratch tmpfs: unshare(CLONE_NEWNS) failed")
    if libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
        raise OSError(ctypes.get_errno(), "scratch tmpfs: making mounts private failed")
    if libc.mount(b"tmpfs", path.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, options) != 0:
        raise OSError(ctypes.get_errno(), "scratch tmpfs: mount failed")


_CAP_VERSION_3 = 0x20080522


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def read_capabilities() -> int:
    """The effective capabilities (low word), read with the call ``drop_capabilities``
    makes to clear them."""
    header = _CapHeader(_CAP_VERSION_3, 0)
    data = (_CapData * 2)()
    if _libc().capget(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capget failed")
    return int(data[0].effective)


def drop_capabilities() -> None:
    """Clear every capability (a new user namespace grants a full set within it)."""
    header = _CapHeader(_CAP_VERSION_3, 0)
    data = (_CapData * 2)()
    if _libc().capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")
