"""Red team: system-call families the named-denial list does not mention.

A default-deny filter must refuse each of these without anyone having thought of them;
the companion tests show a few of them really do something when the filter is off.
"""

from __future__ import annotations

import pytest
from terminai_apts.executor import SandboxConfig

from tests.breach.harness import breach
from tests.breach.support import EMIT, PRELUDE, attack

BUF = "ctypes.create_string_buffer(256)"

# family -> {name: raw call (x86_64 numbers)}; every one must come back EPERM.
FAMILIES: dict[str, dict[str, str]] = {
    "clock": {
        "clock_settime": f"sc(227, 0, {BUF})",
        "settimeofday": f"sc(164, {BUF}, None)",
        "adjtimex": f"sc(159, {BUF})",
        "clock_adjtime": f"sc(305, 0, {BUF})",
    },
    "scheduling-of-others": {
        "setpriority-user": "sc(141, 2, 0, 19)",  # PRIO_USER: every process of the uid
        "setpriority-pgrp": "sc(141, 1, 0, -20)",
        "ioprio_set-user": "sc(251, 3, 0, (3 << 13))",  # IOPRIO_WHO_USER, idle class
        "sched_setaffinity": "sc(203, 0, 8, ctypes.byref(ctypes.c_ulong(1)))",
        "sched_setscheduler-fifo": "sc(144, 0, 1, ctypes.byref(ctypes.c_int(99)))",
        "sched_setattr": f"sc(314, 0, {BUF}, 0)",
        "migrate_pages": "sc(256, 1, 8, None, None)",
    },
    "zero-copy-between-descriptors": {
        "sendfile": "sc(40, 7, 3, None, 4096)",
        "splice": "sc(275, 3, None, 7, None, 4096, 0)",
        "tee": "sc(276, 3, 7, 4096, 0)",
        "vmsplice": f"sc(278, 7, {BUF}, 1, 0)",
        "copy_file_range": "sc(326, 3, None, 7, None, 4096, 0)",
        "pipe2": "sc(293, ctypes.create_string_buffer(8), 0)",
    },
    "event-and-notification-descriptors": {
        "inotify_init1": "sc(294, 0)",
        "fanotify_init": "sc(300, 0, 0)",
        "eventfd2": "sc(290, 0, 0)",
        "signalfd4": "sc(289, -1, ctypes.create_string_buffer(8), 8, 0)",
        "timerfd_create": "sc(283, 1, 0)",
        "epoll_create1": "sc(291, 0)",
        "pidfd_getfd": "sc(438, 0, 0, 0)",
    },
    "asynchronous-io": {
        "io_setup": "sc(206, 8, ctypes.byref(ctypes.c_ulong(0)))",
        "io_submit": "sc(209, 0, 1, None)",
        "io_uring_enter": "sc(426, 0, 0, 0, 0, None, 0)",
    },
    "mount-api": {
        "fsopen": "sc(430, b'tmpfs', 0)",
        "open_tree": "sc(428, -100, b'/', 1)",
        "move_mount": "sc(429, -100, b'/', -100, b'/tmp', 0)",
        "fspick": "sc(433, -100, b'/', 0)",
        "mount_setattr": f"sc(442, -100, b'/', 0, {BUF}, 32)",
    },
    "memory-policy-and-pinning": {
        "mbind": "sc(237, 0, 4096, 0, None, 0, 0)",
        "set_mempolicy": "sc(238, 0, None, 0)",
        "mlockall": "sc(151, 3)",
        "mlock2": "sc(325, 0, 4096, 0)",
        "memfd_secret": "sc(447, 0)",
        "process_madvise": "sc(440, 0, None, 0, 0, 0)",
        "remap_file_pages": "sc(216, 0, 4096, 0, 0, 0)",
    },
    "file-metadata-writes": {
        "fchmod": "sc(91, 0, 0o777)",
        "fchown": "sc(93, 0, 0, 0)",
        "fchownat": "sc(260, -100, b'/tmp', 0, 0, 0)",
        "fchmodat2": "sc(452, -100, b'/tmp', 0o777, 0)",
        "utimensat": "sc(280, -100, b'/tmp', None, 0)",
        "setxattr": "sc(188, b'/tmp', b'user.owned', b'v', 1, 0)",
        "fsetxattr": "sc(190, 0, b'user.owned', b'v', 1, 0)",
        "mknodat": "sc(259, -100, b'/tmp/owned', 0o10644, 0)",
        "linkat-empty-path": "sc(265, 0, b'', -100, b'/tmp/owned', 0x1000)",  # AT_EMPTY_PATH
        "name_to_handle_at": f"sc(303, -100, b'/etc/passwd', {BUF}, ctypes.byref(ctypes.c_int()), 0)",
    },
    "host-wide-state": {
        "sethostname": "sc(170, b'owned', 5)",
        "setdomainname": "sc(171, b'owned', 5)",
        "sync": "sc(162)",
        "syncfs": "sc(306, 0)",
        "acct": "sc(163, None)",
        "swapoff": "sc(168, b'/swap')",
        "syslog": f"sc(103, 3, {BUF}, 256)",
        "vhangup": "sc(153)",
        "modify_ldt": "sc(154, 1, ctypes.create_string_buffer(16), 16)",
        "ioperm": "sc(173, 0x80, 1, 1)",
        "lookup_dcookie": f"sc(212, 0, {BUF}, 256)",
        "kcmp": "sc(312, 1, 1, 0, 0, 0)",
        "setfsuid": "sc(122, 0)",
        "capset": "sc(126, ctypes.byref(ctypes.c_uint32(0x20080522)), ctypes.create_string_buffer(24))",
    },
    "prctl-options": {
        "PR_SET_MM": "sc(157, 35, 8, 0, 0, 0)",
        "PR_SET_PDEATHSIG": "sc(157, 1, 0, 0, 0, 0)",
        "PR_SET_CHILD_SUBREAPER": "sc(157, 36, 1, 0, 0, 0)",
        "PR_SET_SECUREBITS": "sc(157, 28, 0, 0, 0, 0)",
        "PR_CAP_AMBIENT": "sc(157, 47, 2, 21, 0, 0)",
        "PR_SET_TIMERSLACK": "sc(157, 29, 1, 0, 0, 0)",
        "PR_SET_SPECULATION_CTRL": "sc(157, 53, 0, 8, 0, 0)",
        "PR_SET_SYSCALL_USER_DISPATCH": "sc(157, 59, 1, 0, 0, 0)",
    },
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_call_of_the_family_is_refused(family: str) -> None:
    calls = FAMILIES[family]
    out = attack("".join(f"out[{name!r}] = {call}\n" for name, call in calls.items()))
    assert out == dict.fromkeys(calls, "EPERM"), out


def test_some_of_them_work_without_the_filter() -> None:
    picks = {
        "pipe2": FAMILIES["zero-copy-between-descriptors"]["pipe2"],
        "eventfd2": FAMILIES["event-and-notification-descriptors"]["eventfd2"],
        "inotify_init1": FAMILIES["event-and-notification-descriptors"]["inotify_init1"],
        "PR_SET_TIMERSLACK": FAMILIES["prctl-options"]["PR_SET_TIMERSLACK"],
    }
    out = attack("".join(f"out[{n!r}] = {c}\n" for n, c in picks.items()), skip=("seccomp", "rlimits"))
    assert set(out.values()) == {"ok"}, out


@pytest.mark.slow
def test_cpu_spent_in_the_kernel_counts_too() -> None:
    # Many cheap system calls (system time, not user time) still hit the CPU limit.
    code = PRELUDE + "import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True:\n    libc.getppid()\n"
    result = breach(code, SandboxConfig(timeout_seconds=60, cpu_seconds=1, security_mode="standard"))
    # Killed by the CPU limit (SIGXCPU ignored, then the hard limit), not the wall clock.
    assert result.timed_out and result.error == "CPU time limit exceeded", result
    # Without the limit only the wall clock ends it: the assertion above can fail.
    off = breach(code, SandboxConfig(timeout_seconds=2, cpu_seconds=1, security_mode="standard"), skip=("rlimits",))
    assert off.timed_out and off.error != "CPU time limit exceeded", off


MEMORY_TRICKS = """
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.mremap.restype = ctypes.c_void_p
libc.mremap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_int]
FAILED = ctypes.c_void_p(-1).value
MiB = 1024 * 1024
def grow():
    base = libc.mmap(None, 16 * MiB, 3, 0x22, -1, 0)
    bigger = libc.mremap(base, 16 * MiB, 400 * MiB, 1)  # MREMAP_MAYMOVE
    if bigger in (None, FAILED):
        return errno.errorcode[ctypes.get_errno()]
    ctypes.memset(bigger, 1, 400 * MiB)
    return "ok"
out["mremap-grow"] = grow()
noreserve = libc.mmap(None, 400 * MiB, 3, 0x22 | 0x4000, -1, 0)  # MAP_NORESERVE
out["noreserve"] = "ok" if noreserve not in (None, FAILED) else errno.errorcode[ctypes.get_errno()]
growsdown = libc.mmap(None, 400 * MiB, 3, 0x22 | 0x0100, -1, 0)  # MAP_GROWSDOWN
out["growsdown"] = "ok" if growsdown not in (None, FAILED) else errno.errorcode[ctypes.get_errno()]
huge = libc.mmap(None, 400 * MiB, 3, 0x22 | 0x40000, -1, 0)  # MAP_HUGETLB
out["hugetlb"] = "ok" if huge not in (None, FAILED) else errno.errorcode[ctypes.get_errno()]
small = libc.mmap(None, 4096, 3, 0x22, -1, 0)
out["madvise-dontfork"] = sc(28, ctypes.c_void_p(small), 4096, 10)
libc.sbrk.restype = ctypes.c_void_p
out["brk-grow"] = "ok" if libc.sbrk(ctypes.c_long(400 * MiB)) not in (None, FAILED) else "ENOMEM"
"""


def test_address_space_tricks_stay_within_the_memory_budget() -> None:
    out = attack(MEMORY_TRICKS, config=SandboxConfig(timeout_seconds=10, security_mode="standard", max_memory_mb=64))
    grants = {k: v for k, v in out.items() if k != "madvise-dontfork" and v == "ok"}
    assert grants == {}, out


def test_the_address_space_tricks_work_without_the_limit() -> None:
    config = SandboxConfig(timeout_seconds=10, security_mode="standard", max_memory_mb=64)
    out = attack(MEMORY_TRICKS, config=config, skip=("rlimits",))
    assert out["mremap-grow"] == "ok" and out["noreserve"] == "ok", out


INT_80 = """
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
page = libc.mmap(None, 4096, 7, 0x22, -1, 0)  # read, write, execute
code = bytes([0xB8, 20, 0, 0, 0, 0xCD, 0x80, 0xC3])  # mov eax, 20 (i386 getpid); int 0x80; ret
ctypes.memmove(page, code, len(code))
ctypes.CFUNCTYPE(ctypes.c_int)(page)()
"""


def test_a_raw_syscall_outside_the_native_abi_kills_the_run() -> None:
    # int 0x80 (the i386 ABI) on x86_64: libseccomp's architecture check kills the run.
    result = breach(PRELUDE + INT_80 + EMIT)
    assert not result.success and result.error_type == "SandboxViolation", result
