"""Layer 6 (child side): process limits applied in the forked child before user code.

Never called in the host process: only the forked child applies these to itself.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import resource
import struct

_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO_EPERM = 0x00050000 | 1
_RET_KILL_PROCESS = 0x80000000
# classic BPF opcodes
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_RET_K = 0x06

# arch -> (AUDIT_ARCH value, denied syscall numbers: execve, execveat, socket,
# socketpair, connect, bind, listen, accept, accept4, ptrace, process_vm_readv/writev)
_ARCHES: dict[str, tuple[int, tuple[int, ...]]] = {
    "x86_64": (0xC000003E, (59, 322, 41, 53, 42, 49, 50, 43, 288, 101, 310, 311)),
    "aarch64": (0xC00000B7, (221, 281, 198, 199, 203, 200, 201, 202, 242, 117, 270, 271)),
}


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def set_no_new_privs() -> None:
    if _libc().prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS failed")


def seccomp_program(machine: str) -> bytes:
    """The classic BPF program: kill on a foreign arch (or x32), EPERM on denied calls."""
    arch, denied = _ARCHES[machine]
    ins: list[tuple[int, int, int, int]] = [
        (_LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
        (_JEQ_K, 1, 0, arch),
        (_RET_K, 0, 0, _RET_KILL_PROCESS),
        (_LD_W_ABS, 0, 0, 0),  # seccomp_data.nr
    ]
    if machine == "x86_64":  # x32 ABI numbers alias the x86_64 table: refuse them all
        ins += [(_JGE_K, 0, 1, 0x40000000), (_RET_K, 0, 0, _RET_ERRNO_EPERM)]
    for nr in denied:
        ins += [(_JEQ_K, 0, 1, nr), (_RET_K, 0, 0, _RET_ERRNO_EPERM)]
    ins.append((_RET_K, 0, 0, _RET_ALLOW))
    return b"".join(struct.pack("HBBI", *i) for i in ins)


def install_seccomp() -> bool:
    """Install the filter; False when the architecture is unsupported (reported)."""
    machine = platform.machine()
    if machine not in _ARCHES:
        return False
    code = seccomp_program(machine)
    count = len(code) // 8
    buf = ctypes.create_string_buffer(code, len(code))

    class _SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    prog = _SockFprog(count, ctypes.cast(buf, ctypes.c_void_p))
    if _libc().prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "PR_SET_SECCOMP failed")
    return True


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


def set_rlimits(*, memory_mb: int, cpu_seconds: int, max_open_files: int) -> None:
    budget = baseline_address_space() + memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (budget, budget))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (max_open_files, max_open_files))
    resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def harden_child(config: dict[str, object], keep: set[int]) -> list[str]:
    """6a-6f in order; returns notes about optional steps that could not be applied."""
    notes: list[str] = []
    # 6a: empty environment and cwd
    os.environ.clear()
    os.chdir("/")
    # 6b: no privilege gain through exec/setuid binaries
    set_no_new_privs()
    # 6c: unprivileged uid when started as root
    drop_privileges(int(str(config["unprivileged_uid"])), int(str(config["unprivileged_gid"])))
    # 6d: resource limits
    set_rlimits(
        memory_mb=int(str(config["max_memory_mb"])),
        cpu_seconds=int(str(config["cpu_seconds"])),
        max_open_files=int(str(config["max_open_files"])),
    )
    # 6e: seccomp (execve, sockets, ptrace denied)
    if config.get("seccomp", True) and not install_seccomp():
        notes.append(f"seccomp unavailable on {platform.machine()}")
    return notes
