"""The seccomp filter is a default-deny allowlist compiled by libseccomp: the system calls
a breach would reach for are refused (and a few show the kernel would have allowed them)."""

from __future__ import annotations

import errno
import fcntl
import struct

import pytest
from terminai_apts.executor.os_layer import seccomp

from tests.breach.harness import breach
from tests.breach.support import EMIT, PRELUDE, attack

# name -> raw call (x86_64 numbers). Each must come back EPERM (clone3: ENOSYS).
CALLS = {
    "io_uring_setup": "sc(425, 8, ctypes.create_string_buffer(120))",
    "unshare-user": "sc(272, 0x10000000)",
    "unshare-net": "sc(272, 0x40000000)",
    "setns": "sc(308, 0, 0)",
    "clone-newuser-thread": "sc(56, 0x10000000 | 0x00010000 | 0x00000100 | 0x00000800, 0, 0, 0, 0)",
    "bpf": "sc(321, 0, ctypes.create_string_buffer(128), 128)",
    "userfaultfd": "sc(323, 1)",
    "perf_event_open": "sc(298, ctypes.create_string_buffer(128), 0, -1, -1, 0)",
    "ptrace-traceme": "sc(101, 0, 0, 0, 0)",
    "keyctl": "sc(250, 0, 0, 0, 0, 0)",
    "add_key": "sc(248, b'user', b'k', b'v', 1, -3)",
    "mount": "sc(165, b'none', b'/tmp', b'tmpfs', 0, None)",
    "umount2": "sc(166, b'/proc', 2)",
    "pivot_root": "sc(155, b'/', b'/')",
    "chroot": "sc(161, b'/')",
    "memfd_create": "sc(319, b'x', 0)",
    "execve": "sc(59, b'/bin/sh', None, None)",
    "execveat": "sc(322, -100, b'/bin/sh', None, None, 0)",
    "fork": "sc(57)",
    "kill-self": "sc(62, os.getpid(), 0)",
    "process_vm_writev": "sc(311, os.getpid(), None, 0, None, 0, 0)",
    "personality": "sc(135, 0x0040000)",
    "prctl-dumpable": "sc(157, 4, 1, 0, 0, 0)",
    "prctl-seccomp": "sc(157, 22, 0, 0, 0, 0)",
    "seccomp": "sc(317, 0, 0, None)",
    "landlock-new-ruleset": "sc(444, None, 0, 1)",
    "setuid": "sc(105, 0)",
    "chmod": "sc(90, b'/tmp', 0o777)",
    "open-write": "sc(257, -100, b'/tmp/x', os.O_WRONLY | os.O_CREAT, 0o600)",
    "openat2": "sc(437, -100, b'/etc/hostname', ctypes.create_string_buffer(24), 24)",
    "ioctl-tiocsti": "sc(16, 0, 0x5412, ctypes.byref(ctypes.c_char(b'x')))",
    "socket": "sc(41, 2, 1, 0)",
    "init_module": "sc(175, None, 0, b'')",
    "kexec_load": "sc(246, 0, 0, None, 0)",
    "reboot": "sc(169, 0xfee1dead, 672274793, 0x4321fedc, None)",
    "swapon": "sc(167, b'/tmp/x', 0)",
    "open_by_handle_at": "sc(304, -100, None, 0)",
    "iopl": "sc(172, 3)",
    "quotactl": "sc(179, 0, None, 0, None)",
    "clone3": "sc(435, ctypes.create_string_buffer(88), 88)",
}


def test_every_named_call_is_refused() -> None:
    body = "".join(f"out[{name!r}] = {call}\n" for name, call in CALLS.items())
    out = attack(body)
    expected = {name: ("ENOSYS" if name == "clone3" else "EPERM") for name in CALLS}
    assert out == expected


def test_the_kernel_would_have_allowed_some_of_them() -> None:
    # Without the filter, the same raw calls reach the kernel: the test above can fail.
    # (Calls a container engine's own profile also refuses would prove nothing there.)
    body = "".join(f"out[{n!r}] = {CALLS[n]}\n" for n in ("io_uring_setup", "memfd_create"))
    out = attack(body + "out['getpriority'] = sc(140, 0, 0)\n", skip=("seccomp", "rlimits"))
    assert out == {"io_uring_setup": "ok", "memfd_create": "ok", "getpriority": "ok"}, out


def test_threads_are_the_only_clone_allowed() -> None:
    rules = [r for r in seccomp.rules(scratch=False) if r.name == "clone"]
    assert len(rules) == 1 and rules[0].compare[0][3] == 0x00010000


def test_a_foreign_abi_kills_the_run() -> None:
    # An x32 system call number (bit 30) on x86_64: libseccomp's architecture check kills.
    result = breach(PRELUDE + "sc(0x40000000 | 39)\n" + EMIT)
    assert not result.success and result.error_type == "SandboxViolation", result


def test_calls_nobody_listed_are_refused_by_default() -> None:
    # Harmless calls a deny-list would let through: the default action refuses them.
    out = attack(
        "out['getpriority'] = sc(140, 0, 0)\n"
        "out['capget'] = sc(125, None, None)\n"
        "out['sched_getparam'] = sc(143, 0, ctypes.create_string_buffer(8))\n"
        "out['sched_getscheduler'] = sc(145, 0)\n"
    )
    assert set(out.values()) == {"EPERM"}, out


@pytest.mark.parametrize("scratch", [False, True])
def test_the_policy_is_an_allowlist(scratch: bool) -> None:
    names = {rule.name for rule in seccomp.rules(scratch=scratch)}
    assert not names & set(seccomp.NAMED_DENIALS) - {"prlimit64", "clone3"}
    program = seccomp.compile_filter(seccomp.rules(scratch=scratch))
    returns = set()
    for at in range(0, len(program), 8):
        code, _, _, k = struct.unpack("<HBBI", program[at : at + 8])
        if code == 0x06:  # BPF_RET | BPF_K
            returns.add(k)
    eperm, enosys = 0x00050000 | errno.EPERM, 0x00050000 | errno.ENOSYS
    assert returns == {seccomp.ACT_ALLOW, seccomp.ACT_KILL_PROCESS, eperm, enosys}


@pytest.mark.parametrize("scratch", [False, True])
def test_the_policy_allows_no_lock_to_be_taken(scratch: bool) -> None:
    """Asking about a lock is allowed; taking one (which a run could hold against the
    memory index's writer) is not, by any command or by ``flock``."""
    policy = seccomp.rules(scratch=scratch)
    assert "flock" not in {rule.name for rule in policy}
    fcntl_commands = {rule.compare[0][2] for rule in policy if rule.name == "fcntl"}
    assert seccomp.LOCKING_FCNTLS == (fcntl.F_SETLK, fcntl.F_SETLKW, fcntl.F_OFD_SETLK, fcntl.F_OFD_SETLKW)
    assert fcntl_commands.isdisjoint(seccomp.LOCKING_FCNTLS), fcntl_commands
    assert {fcntl.F_GETLK, fcntl.F_OFD_GETLK} <= fcntl_commands
