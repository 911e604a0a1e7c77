"""The child's seccomp filter: a default-deny allowlist compiled by libseccomp.

libseccomp (Debian's ``libseccomp2``) resolves syscall names for the native
architecture, refuses foreign architectures (and the x32 ABI on x86_64) and emits the
BPF program; this module only states the policy and calls its stable C API. Debian's
``python3-seccomp`` binding is tied to Debian's own interpreter and the PyPI ctypes
binding is unmaintained, so the few calls needed are made through ``ctypes`` here.

The zygote compiles each variant once (``compile_filter``) and every child loads the
exported program with one ``prctl`` (``load_filter``): no per-run compilation.

``compile_filter(..., arch="aarch64")`` builds the same policy for another architecture
(libseccomp translates each rule by syscall name): under qemu-user a filter installed by
an emulated process is not the kernel's to enforce, so the arm64 image's filter is proven
by simulating this program instead (``tests/unit/executor/test_seccomp_aarch64.py``).
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
from dataclasses import dataclass

from terminai_apts.errors import ExecutorError

# libseccomp's action and comparison constants (seccomp.h; stable since 2.x).
ACT_ALLOW = 0x7FFF0000
ACT_KILL_PROCESS = 0x80000000


def act_errno(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)


_NR_SCMP_ERROR = -1
_ARCH_NATIVE = 0  # SCMP_ARCH_NATIVE
_SONAME = "libseccomp.so.2"  # Debian's libseccomp2
_CMP_EQ = 4
_CMP_MASKED_EQ = 7
_ATTR_ACT_BADARCH = 2
_ATTR_CTL_NNP = 3

# What a warm CPython interpreter, SQLite reads and the memory API need once the run
# is hardened. Everything else is refused with EPERM (default deny).
ALLOWED: tuple[str, ...] = (
    # memory
    "brk", "mmap", "munmap", "mprotect", "mremap", "madvise", "mincore", "msync",
    # descriptors already open (the two pipes, the database, files opened read-only)
    "read", "pread64", "readv", "preadv", "preadv2", "write", "pwrite64", "writev",
    "lseek", "close", "close_range", "dup", "dup3", "fadvise64",
    "fstat", "newfstatat", "statx", "stat", "lstat",
    "access", "faccessat", "faccessat2", "readlink", "readlinkat", "getdents64",
    "getcwd", "poll", "ppoll", "select", "pselect6",
    # time, randomness, identity, resource reads
    "clock_gettime", "clock_getres", "clock_nanosleep", "nanosleep", "gettimeofday",
    "time", "getrandom", "uname", "getrusage", "times",
    # an interval timer signals only its own process (the memory API's regex deadline)
    "setitimer", "getitimer", "alarm",
    "getpid", "gettid", "getppid", "getuid", "geteuid", "getgid", "getegid",
    "getgroups", "getresuid", "getresgid", "getpgrp", "getpgid", "getsid",
    "sched_yield", "sched_getaffinity", "getcpu",
    # signals handled in-process (never sent: kill, tgkill and friends are refused)
    "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "sigaltstack", "restart_syscall",
    # threads (clone is allowed only with CLONE_THREAD, below) and their bookkeeping
    "futex", "set_robust_list", "get_robust_list", "set_tid_address", "rseq",
    "arch_prctl", "membarrier",
    # the end
    "exit", "exit_group",
)  # fmt: skip

# Syscalls that modify the file system: allowed only with a scratch directory, and
# then confined to it by Landlock (``landlock.py``).
SCRATCH_WRITES: tuple[str, ...] = (
    "mkdir", "mkdirat", "rmdir", "unlink", "unlinkat", "rename", "renameat",
    "renameat2", "ftruncate", "fsync", "fdatasync", "fallocate",
)  # fmt: skip

# Refused by default deny; listed so tests and docs name them (each has an attack test).
NAMED_DENIALS: tuple[str, ...] = (
    "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "unshare", "setns",
    "clone3", "fork", "vfork", "execve", "execveat", "bpf", "userfaultfd",
    "perf_event_open", "ptrace", "process_vm_readv", "process_vm_writev", "keyctl",
    "add_key", "request_key", "mount", "umount2", "pivot_root", "memfd_create",
    "shmget", "shmat", "semget", "msgget", "mq_open", "kill", "tkill", "tgkill",
    "pidfd_open", "pidfd_send_signal", "pidfd_getfd", "setsid", "setpgid",
    "setrlimit", "prlimit64", "openat2", "creat", "symlink", "link", "chmod",
    "chown", "setuid", "setgid", "personality", "seccomp", "landlock_create_ruleset",
    "flock",
    # the host's process count, memory, load and uptime; its file systems' size and use
    "sysinfo", "statfs", "fstatfs",
)  # fmt: skip

# Open flags that write, create or truncate: refused on open/openat without scratch.
_O_WRITE_MASK = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_CLONE_THREAD = 0x00010000
_CLONE_NAMESPACES = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
_PR_GET_NAME = 16
# ioctl requests a file object may issue on its own descriptors (isatty, non-blocking).
_IOCTLS = (0x5401, 0x541B, 0x5421, 0x5451)  # TCGETS, FIONREAD, FIONBIO, FIOCLEX
# fcntl commands on the run's own descriptors: duplicate, flags, asking about locks.
# Never F_SETOWN(_EX)/F_SETSIG/F_SETLEASE/F_NOTIFY: with O_ASYNC the kernel would send a
# signal to any process the run names, without a kill() the filter could refuse. Never
# F_SETLK(W)/F_OFD_SETLK(W) (nor flock): a lock taken on the memory database's read-only
# descriptor would hold the host's writer off for the run's lifetime; the run's SQLite
# reads ``immutable=1`` and takes none (``memory/pinned.py``).
_FCNTLS = (0, 1, 2, 3, 5, 36, 1030, 1032)  # DUPFD GETFD SETFD GETFL GETLK OFD_GETLK
# DUPFD_CLOEXEC GETPIPE_SZ
# Locking commands, refused by default deny; named for tests and docs.
LOCKING_FCNTLS = (6, 7, 37, 38)  # F_SETLK F_SETLKW F_OFD_SETLK F_OFD_SETLKW
_F_SETFL = 4


class _ArgCmp(ctypes.Structure):
    _fields_ = [
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    ]


@dataclass(frozen=True, slots=True, kw_only=True)
class Rule:
    """One allow rule: ``name`` when every ``(arg, op, a, b)`` comparison holds."""

    name: str
    compare: tuple[tuple[int, int, int, int], ...] = ()
    action: int = ACT_ALLOW


def rules(*, scratch: bool) -> tuple[Rule, ...]:
    """The policy as data (unit-tested without loading it)."""
    out = [Rule(name=name) for name in ALLOWED]
    if scratch:
        out += [Rule(name=name) for name in SCRATCH_WRITES]
        out += [Rule(name="openat"), Rule(name="open")]
    else:
        out += [
            Rule(name="openat", compare=((2, _CMP_MASKED_EQ, _O_WRITE_MASK, 0),)),
            Rule(name="open", compare=((1, _CMP_MASKED_EQ, _O_WRITE_MASK, 0),)),
        ]
    out += [Rule(name="ioctl", compare=((1, _CMP_EQ, request, 0),)) for request in _IOCTLS]
    out += [Rule(name="fcntl", compare=((1, _CMP_EQ, command, 0),)) for command in _FCNTLS]
    out.append(Rule(name="fcntl", compare=((1, _CMP_EQ, _F_SETFL, 0), (2, _CMP_MASKED_EQ, os.O_ASYNC, 0))))
    # Reading its name only: PR_SET_NAME would let a run pass for another process (a
    # kernel thread, say) in the host's process list.
    out.append(Rule(name="prctl", compare=((0, _CMP_EQ, _PR_GET_NAME, 0),)))
    # Threads only: a new process, or any namespace flag, is refused.
    out.append(Rule(name="clone", compare=((0, _CMP_MASKED_EQ, _CLONE_THREAD | _CLONE_NAMESPACES, _CLONE_THREAD),)))
    # glibc falls back from clone3 to clone on ENOSYS, where the flags can be checked.
    out.append(Rule(name="clone3", action=act_errno(errno.ENOSYS)))
    # Reading its own limit is fine; setting one, or reading another process's, is not
    # (pid 0 and new_limit NULL: glibc's getrlimit).
    out.append(Rule(name="prlimit64", compare=((0, _CMP_EQ, 0, 0), (2, _CMP_EQ, 0, 0))))
    out.append(Rule(name="getrlimit"))
    return tuple(out)


def _library() -> ctypes.CDLL:
    # The soname first: the loader finds it in the system's library path at once, where
    # ``find_library`` would run ``ldconfig -p`` in a new process on every zygote start.
    lib: ctypes.CDLL | None
    try:
        lib = ctypes.CDLL(_SONAME, use_errno=True)
    except OSError:
        lib = None
    try:
        if lib is None:
            from ctypes.util import find_library  # noqa: PLC0415 - only where the soname is not found

            lib = ctypes.CDLL(find_library("seccomp") or _SONAME, use_errno=True)
    except OSError as exc:
        raise ExecutorError(
            "libseccomp is not installed, so the executor cannot build its system-call filter",
            hint="install Debian's libseccomp2 (apt-get install libseccomp2)",
        ) from exc
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    lib.seccomp_attr_set.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_syscall_resolve_name_arch.argtypes = [ctypes.c_uint32, ctypes.c_char_p]
    lib.seccomp_arch_resolve_name.restype = ctypes.c_uint32
    lib.seccomp_arch_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_arch_native.restype = ctypes.c_uint32
    lib.seccomp_arch_add.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
    lib.seccomp_arch_remove.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
    lib.seccomp_rule_add_exact_array.argtypes = [
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.POINTER(_ArgCmp),
    ]
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    return lib


def compile_filter(
    policy: tuple[Rule, ...], *, default_action: int = act_errno(errno.EPERM), arch: str | None = None
) -> bytes:
    """The BPF program libseccomp generates for ``policy`` on this architecture, or on
    ``arch`` (libseccomp's name, e.g. ``"aarch64"``) in place of it."""
    lib = _library()
    ctx = lib.seccomp_init(default_action)
    if not ctx:
        raise ExecutorError("libseccomp could not create a filter", hint="check the libseccomp2 installation")
    try:
        token = _ARCH_NATIVE if arch is None else _use_arch(lib, ctx, arch)
        if token == _ARCH_NATIVE:
            arch = None
        # Foreign architectures (and x32) kill the process; the loader sets no_new_privs.
        _check(lib.seccomp_attr_set(ctx, _ATTR_ACT_BADARCH, ACT_KILL_PROCESS), "set the bad-arch action")
        _check(lib.seccomp_attr_set(ctx, _ATTR_CTL_NNP, 0), "leave no_new_privs to the caller")
        for rule in policy:
            # Rules take the native number; libseccomp translates it by name to the
            # filter's architecture, so only the target's number says if it exists there.
            nr = lib.seccomp_syscall_resolve_name(rule.name.encode())
            target_nr = nr if arch is None else lib.seccomp_syscall_resolve_name_arch(token, rule.name.encode())
            if _NR_SCMP_ERROR in (nr, target_nr):
                continue  # not a syscall on this architecture (e.g. `open` on aarch64)
            cmps = (_ArgCmp * max(1, len(rule.compare)))(*(_ArgCmp(*c) for c in rule.compare))
            rc = lib.seccomp_rule_add_exact_array(ctx, rule.action, nr, len(rule.compare), cmps)
            if rc == -errno.EDOM and target_nr < 0:
                continue  # a pseudo number with no native form on this architecture
            _check(rc, f"add the rule for {rule.name}")
        read_fd, write_fd = os.pipe()
        try:
            _check(lib.seccomp_export_bpf(ctx, write_fd), "export the filter")
            os.close(write_fd)
            write_fd = -1
            chunks = []
            while chunk := os.read(read_fd, 65536):
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            os.close(read_fd)
            if write_fd >= 0:
                os.close(write_fd)
    finally:
        lib.seccomp_release(ctx)


def _use_arch(lib: ctypes.CDLL, ctx: int, arch: str) -> int:
    token: int = lib.seccomp_arch_resolve_name(arch.encode())
    if token == 0:
        raise ExecutorError(
            f"libseccomp does not know the architecture {arch!r}", hint="use libseccomp's name (aarch64, x86_64, ...)"
        )
    if token == lib.seccomp_arch_native():
        return _ARCH_NATIVE
    _check(lib.seccomp_arch_add(ctx, token), f"add the architecture {arch}")
    _check(lib.seccomp_arch_remove(ctx, _ARCH_NATIVE), "remove the native architecture")
    return token


def _check(rc: int, what: str) -> None:
    if rc < 0:
        raise ExecutorError(f"libseccomp could not {what} ({os.strerror(-rc)})", hint="report this as a bug")


@functools.cache
def _libc() -> ctypes.CDLL:
    # Loaded in the zygote (``prepare`` warms it), so a run's load is one prctl on its
    # caller's path, not a dlopen (see rootfs._libc).
    return ctypes.CDLL(None, use_errno=True)


def warm() -> None:
    """Load what ``load_filter`` calls (in the zygote, before any run is forked)."""
    _libc().prctl  # noqa: B018 - the attribute lookup binds the C function once


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2


def load_filter(program: bytes) -> None:
    """Install ``program`` on the calling thread (no_new_privs must already be set)."""
    buf = ctypes.create_string_buffer(program, len(program))
    prog = _SockFprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
    libc = _libc()
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "PR_SET_SECCOMP failed")
