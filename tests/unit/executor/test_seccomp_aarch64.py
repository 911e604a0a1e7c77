"""The executor's seccomp filter on arm64, proven by simulation.

Under qemu-user an emulated process's filter is not the kernel's to enforce (qemu makes
the host's system calls itself), so the arm64 image's contract suite cannot prove it.
Instead: libseccomp compiles the very policy of ``seccomp.rules`` for ``aarch64``; a
classic-BPF simulator, checked first against this x86_64 kernel on the native program,
then shows that the aarch64 program decides every system call libseccomp knows on both
architectures exactly as the amd64 program does, and kills every other architecture.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import json
import platform
import signal
import struct
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
from terminai_apts.errors import ExecutorError
from terminai_apts.executor.os_layer import seccomp

from tests.unit.executor.bpf_simulator import BadProgram, Program, SeccompData, action

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="seccomp is Linux's")

AUDIT_ARCH_X86_64 = 0xC000003E
AUDIT_ARCH_I386 = 0x40000003
AUDIT_ARCH_AARCH64 = 0xC00000B7
AUDIT_ARCH_ARM = 0x40000028
AUDIT_ARCH_RISCV64 = 0xC00000F3
X32_BIT = 0x40000000
EPERM = seccomp.act_errno(errno.EPERM)
VARIANTS = (False, True)  # scratch directory? (the two programs the zygote compiles)
PROBE = Path(__file__).with_name("seccomp_kernel_probe.py")
# The numbers this host's kernel may define (x86_64 reaches 46x in Linux 6.x).
NATIVE_NUMBERS = range(0, 480)

# The native programs exactly as seccomp.py exported them before it learnt to build for
# another architecture, per libseccomp release (its code generator may change between
# releases; where a release is not listed, the kernel comparison below still stands).
NATIVE_SHA256 = {
    (version, "x86_64"): {
        False: "d047992c9fad7cf68a7979c13de417aa95336091129f7a588ba6f2633cecc232",
        True: "5d9f643d1cec98bf0fc2df0a514c8cc334e94674d64edae2b424e662bee2a524",
    }
    for version in ("2.5.4", "2.6.0")  # Debian 12's and the image's (trixie)
}

# Calls amd64 has and aarch64 does not, and what an aarch64 libc calls instead (with the
# argument shift of the *at forms: their first argument is the directory descriptor).
# None: the call has no counterpart; its amd64 decision is checked on its own below.
AMD64_ONLY_REPLACED_BY = {
    "open": ("openat", 1), "stat": ("newfstatat", 1), "lstat": ("newfstatat", 1),
    "access": ("faccessat", 1), "readlink": ("readlinkat", 1), "poll": ("ppoll", 0),
    "select": ("pselect6", 0), "time": ("clock_gettime", 0), "alarm": ("setitimer", 0),
    "mkdir": ("mkdirat", 1), "rmdir": ("unlinkat", 1), "unlink": ("unlinkat", 1),
    "rename": ("renameat", 1), "getpgrp": ("getpgid", 0),
    # x86_64 keeps its thread pointer in FS, set through arch_prctl; aarch64 writes
    # TPIDR_EL0 from user space, with no system call at all.
    "arch_prctl": None,
}  # fmt: skip


@cache
def _lib() -> ctypes.CDLL:
    lib = ctypes.CDLL("libseccomp.so.2")
    lib.seccomp_syscall_resolve_num_arch.restype = ctypes.c_void_p
    lib.seccomp_syscall_resolve_num_arch.argtypes = [ctypes.c_uint32, ctypes.c_int]
    lib.seccomp_syscall_resolve_name_arch.argtypes = [ctypes.c_uint32, ctypes.c_char_p]
    lib.seccomp_version.restype = ctypes.POINTER(ctypes.c_uint * 3)
    return lib


def _libseccomp_version() -> str:
    return ".".join(str(v) for v in _lib().seccomp_version().contents)


@cache
def syscall_names(arch: int) -> dict[str, int]:
    """Every system call libseccomp knows on ``arch``: name -> number."""
    lib, libc = _lib(), ctypes.CDLL(None)
    libc.free.argtypes = [ctypes.c_void_p]
    names = {}
    for nr in range(0, 1024):
        ptr = lib.seccomp_syscall_resolve_num_arch(arch, nr)
        if ptr:
            names[ctypes.string_at(ptr).decode()] = nr
            libc.free(ptr)
    return names


@cache
def program(scratch: bool, arch: str | None = None) -> bytes:
    return seccomp.compile_filter(seccomp.rules(scratch=scratch), arch=arch)


Args = tuple[int, int, int, int, int, int]
_NOTHING: Args = (-1, -1, -1, -1, -1, -1)  # bad pointers, bad descriptors, invalid flags
_ZERO: Args = (0, 0, 0, 0, 0, 0)


def _violations(op: int, a: int, b: int) -> Iterator[int]:
    if op == 4:  # SCMP_CMP_EQ: one off, and equal in the low word only (64-bit compare)
        yield a + 1
        yield a | 1 << 32
    else:  # SCMP_CMP_MASKED_EQ (mask a, value b): each masked bit flipped, a bit outside it
        for bit in range(64):
            if a >> bit & 1:
                yield b ^ 1 << bit
        yield b | 1 << 40


def argument_patterns() -> tuple[Args, ...]:
    """For every rule with comparisons: arguments that meet them all, and arguments that
    miss each one in turn; the other arguments are bad pointers and descriptors."""
    out: dict[Args, None] = {_NOTHING: None, _ZERO: None}
    for rule in seccomp.rules(scratch=False) + seccomp.rules(scratch=True):
        if not rule.compare:
            continue
        meet = list(_NOTHING)
        for arg, op, a, b in rule.compare:
            meet[arg] = a if op == 4 else b
        out[tuple(meet)] = None  # type: ignore[index]
        for arg, op, a, b in rule.compare:
            for value in _violations(op, a, b):
                miss = list(meet)
                miss[arg] = value
                out[tuple(miss)] = None  # type: ignore[index]
    return tuple(out)


def compared_names() -> frozenset[str]:
    return frozenset(r.name for s in VARIANTS for r in seccomp.rules(scratch=s) if r.compare)


def _shift(args: Args, by: int) -> Args:
    return (*([-100] * by), *args)[:6]  # type: ignore[return-value]


def decide(prog: bytes, nr: int, arch: int, args: Args) -> int:
    return action(prog, SeccompData(nr=nr, arch=arch, args=args))


# ---- the refactor left the native program alone ----


@pytest.mark.parametrize("scratch", VARIANTS)
def test_the_native_program_is_byte_identical_to_before(scratch: bool) -> None:
    key = (_libseccomp_version(), platform.machine())
    if key not in NATIVE_SHA256:
        pytest.skip(f"no recorded program for libseccomp {key[0]} on {key[1]}")
    assert hashlib.sha256(program(scratch)).hexdigest() == NATIVE_SHA256[key][scratch]


@pytest.mark.parametrize("scratch", VARIANTS)
def test_naming_the_native_architecture_is_the_native_program(scratch: bool) -> None:
    assert program(scratch, platform.machine()) == program(scratch)


def test_an_unknown_architecture_is_refused_with_a_hint() -> None:
    with pytest.raises(ExecutorError, match="architecture 'vax'") as caught:
        seccomp.compile_filter(seccomp.rules(scratch=False), arch="vax")
    assert caught.value.hint


def test_the_aarch64_program_is_another_program_for_aarch64() -> None:
    for scratch in VARIANTS:
        prog = program(scratch, "aarch64")
        assert prog != program(scratch)
        # its first check is the architecture word, against AUDIT_ARCH_AARCH64 only
        assert decide(prog, 0, AUDIT_ARCH_X86_64, _ZERO) == seccomp.ACT_KILL_PROCESS
        assert decide(prog, 172, AUDIT_ARCH_AARCH64, _ZERO) == seccomp.ACT_ALLOW  # getpid


# ---- the simulator agrees with the kernel ----


def _kernel(prog: bytes, cases: list[tuple[int, Args]]) -> list[list[int | str]]:
    request = json.dumps({"program": prog.hex(), "cases": cases})
    done = subprocess.run(
        [sys.executable, str(PROBE)], input=request, capture_output=True, text=True, check=True, timeout=600
    )
    outcomes: list[list[int | str]] = json.loads(done.stdout)
    return outcomes


def _expected(act: int) -> str:
    if act == seccomp.ACT_KILL_PROCESS:
        return f"signal {signal.SIGSYS.value}"
    if act & 0xFFFF0000 == 0x00050000:
        return f"errno {act & 0xFFFF}"
    assert act == seccomp.ACT_ALLOW, hex(act)
    return "allowed"


def _observed(outcome: list[int | str], act: int) -> str:
    kind, value = outcome
    if kind == "signal" and value == signal.SIGSYS.value:
        return f"signal {value}"
    # An errno the filter would have given is the filter's only if the simulator says the
    # filter gave it; every other outcome means the call reached the kernel.
    if kind == "errno" and _expected(act) == f"errno {value}":
        return f"errno {value}"
    if kind == "errno" and value == errno.EPERM:
        return "errno 1"  # the default deny's answer: never taken for "allowed"
    return "allowed"


# uretprobe (335, Linux 6.11) and uprobe (336, 6.17) skip seccomp by the kernel's design:
# they work only from the trampoline the kernel itself maps (SIGILL or ENXIO otherwise).
PASSED_THROUGH_SECCOMP = frozenset({335, 336})


@cache
def answered_before_seccomp() -> frozenset[int]:
    """Numbers this kernel answers before any seccomp filter runs: a program that refuses
    everything (but the probe's own report and exit) does not refuse them."""
    marked = seccomp.act_errno(errno.ENOTRECOVERABLE)
    refuse_all = b"".join(
        struct.pack("<HBBI", *insn)
        for insn in (
            (0x20, 0, 0, 0),  # A = nr
            (0x15, 2, 0, 1),  # write: the probe's report
            (0x15, 1, 0, 231),  # exit_group: its exit
            (0x06, 0, 0, marked),
            (0x06, 0, 0, seccomp.ACT_ALLOW),
        )
    )
    cases = [(nr, _ZERO) for nr in NATIVE_NUMBERS]
    outcomes = _kernel(refuse_all, cases)
    return frozenset(
        nr
        for (nr, _), out in zip(cases, outcomes, strict=True)
        if out != ["errno", errno.ENOTRECOVERABLE] and nr not in (1, 231)
    )


def kernel_cases() -> list[tuple[int, Args]]:
    names = syscall_names(AUDIT_ARCH_X86_64)
    compared = {names[n] for n in compared_names() if n in names}
    skipped = answered_before_seccomp()
    assert skipped <= PASSED_THROUGH_SECCOMP, sorted(skipped)
    cases = [(nr, args) for nr in NATIVE_NUMBERS if nr not in skipped for args in (_NOTHING, _ZERO)]
    cases += [(nr, args) for nr in sorted(compared) for args in argument_patterns()]
    # the x32 ABI (getpid, read) and numbers no kernel defines
    cases += [(X32_BIT | 39, _ZERO), (X32_BIT | 0, _NOTHING), (-1, _ZERO), (1000, _ZERO), (0x7FFFFFFF, _ZERO)]
    return cases


@pytest.mark.slow
@pytest.mark.parametrize("scratch", VARIANTS)
def test_the_simulator_decides_as_the_kernel_on_the_native_program(scratch: bool) -> None:
    if platform.machine() != "x86_64":
        pytest.skip("the probe's cases are x86_64 numbers")
    prog = program(scratch)
    cases = kernel_cases()
    outcomes = _kernel(prog, cases)
    assert len(outcomes) == len(cases)
    acts = [decide(prog, nr, AUDIT_ARCH_X86_64, args) for nr, args in cases]
    mismatches = [
        (nr, args, _expected(act), outcome)
        for (nr, args), act, outcome in zip(cases, acts, outcomes, strict=True)
        if _expected(act) != _observed(outcome, act)
    ]
    assert mismatches == [], mismatches
    # The comparison can fail: all three kinds of decision were seen from the kernel.
    seen = {_expected(a).split()[0] for a in acts}
    assert seen == {"allowed", "errno", "signal"}
    assert sum(_expected(a) == "allowed" for a in acts) > 100


def test_the_simulator_refuses_what_seccomp_refuses() -> None:
    ld_abs_b = bytes.fromhex("3000000000000000")  # BPF_LD|BPF_B|BPF_ABS: not for seccomp
    with pytest.raises(BadProgram):
        Program.parse(ld_abs_b).run(SeccompData(nr=0, arch=0))
    with pytest.raises(BadProgram):
        Program.parse(bytes.fromhex("0000000000000000")).run(SeccompData(nr=0, arch=0))  # off the end
    with pytest.raises(BadProgram):
        Program.parse(b"\x00" * 7)


# ---- the aarch64 program decides as the amd64 program ----


@dataclass(frozen=True, slots=True)
class Both:
    amd64: bytes
    aarch64: bytes


def _both(scratch: bool) -> Both:
    return Both(program(scratch), program(scratch, "aarch64"))


def shared_differences(progs: Both) -> tuple[list[tuple[str, Args, str, str]], set[int]]:
    """Each (name, arguments) the two programs decide differently, and the decisions seen."""
    amd64, aarch64 = syscall_names(AUDIT_ARCH_X86_64), syscall_names(AUDIT_ARCH_AARCH64)
    compared, everything = compared_names(), argument_patterns()
    differ, decisions = [], set()
    for name in sorted(set(amd64) & set(aarch64)):
        for args in everything if name in compared else (_NOTHING, _ZERO):
            left = decide(progs.amd64, amd64[name], AUDIT_ARCH_X86_64, args)
            right = decide(progs.aarch64, aarch64[name], AUDIT_ARCH_AARCH64, args)
            decisions.add(left)
            if left != right:
                differ.append((name, args, hex(left), hex(right)))
    return differ, decisions


@pytest.mark.parametrize("scratch", VARIANTS)
def test_every_shared_system_call_is_decided_alike(scratch: bool) -> None:
    assert len(set(syscall_names(AUDIT_ARCH_X86_64)) & set(syscall_names(AUDIT_ARCH_AARCH64))) > 250
    differ, decisions = shared_differences(_both(scratch))
    assert differ == []
    assert decisions == {seccomp.ACT_ALLOW, EPERM, seccomp.act_errno(errno.ENOSYS)}


Policy = tuple[seccomp.Rule, ...]
MUTANTS: dict[str, Callable[[Policy], Policy]] = {
    "a rule dropped": lambda p: tuple(r for r in p if r.name != "getpid"),
    "one fcntl command dropped": lambda p: tuple(r for r in p if not (r.name == "fcntl" and r.compare[0][2] == 5)),
    "openat with any flags": lambda p: tuple(seccomp.Rule(name="openat") if r.name == "openat" else r for r in p),
}


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_the_comparison_catches_an_aarch64_program_that_differs(mutant: str) -> None:
    policy = MUTANTS[mutant](seccomp.rules(scratch=False))
    assert policy != seccomp.rules(scratch=False)
    differ, _ = shared_differences(Both(program(False), seccomp.compile_filter(policy, arch="aarch64")))
    assert differ


@pytest.mark.parametrize("scratch", VARIANTS)
def test_every_policy_name_is_a_system_call_on_both_or_justified(scratch: bool) -> None:
    amd64, aarch64 = syscall_names(AUDIT_ARCH_X86_64), syscall_names(AUDIT_ARCH_AARCH64)
    named = {r.name for r in seccomp.rules(scratch=scratch)} | set(seccomp.NAMED_DENIALS)
    assert named <= set(amd64)
    missing_on_aarch64 = {n for n in named if n not in aarch64}
    allowed_missing = missing_on_aarch64 - set(seccomp.NAMED_DENIALS)
    assert allowed_missing <= set(AMD64_ONLY_REPLACED_BY), allowed_missing
    # the refused ones aarch64 lacks have only *at or clone forms there, refused alike
    assert missing_on_aarch64 - allowed_missing == {"chmod", "chown", "creat", "fork", "link", "symlink", "vfork"}


@pytest.mark.parametrize("scratch", VARIANTS)
def test_calls_only_amd64_has_are_decided_as_their_aarch64_replacement(scratch: bool) -> None:
    progs = _both(scratch)
    amd64, aarch64 = syscall_names(AUDIT_ARCH_X86_64), syscall_names(AUDIT_ARCH_AARCH64)
    only_amd64 = sorted(set(amd64) - set(aarch64))
    differ = []
    for name in only_amd64:
        replacement = AMD64_ONLY_REPLACED_BY.get(name)
        for args in argument_patterns():
            left = decide(progs.amd64, amd64[name], AUDIT_ARCH_X86_64, args)
            if name == "arch_prctl":
                assert left == seccomp.ACT_ALLOW
            elif replacement is None:
                # every other amd64-only call is refused by the default deny
                if left != EPERM:
                    differ.append((name, args, hex(left), "default deny"))
            else:
                other, shift = replacement
                right = decide(progs.aarch64, aarch64[other], AUDIT_ARCH_AARCH64, _shift(args, shift))
                if left != right:
                    differ.append((name, args, hex(left), f"{other}: {right:#x}"))
    assert differ == []


@pytest.mark.parametrize("scratch", VARIANTS)
def test_calls_only_aarch64_has_are_refused(scratch: bool) -> None:
    progs = _both(scratch)
    amd64, aarch64 = syscall_names(AUDIT_ARCH_X86_64), syscall_names(AUDIT_ARCH_AARCH64)
    only_aarch64 = sorted(set(aarch64) - set(amd64))
    for name in only_aarch64:
        assert decide(progs.aarch64, aarch64[name], AUDIT_ARCH_AARCH64, _ZERO) == EPERM, name


@pytest.mark.parametrize("scratch", VARIANTS)
@pytest.mark.parametrize(
    "foreign", [AUDIT_ARCH_X86_64, AUDIT_ARCH_I386, AUDIT_ARCH_ARM, AUDIT_ARCH_RISCV64, 0, 0xFFFFFFFF]
)
def test_a_foreign_architecture_is_killed_by_the_aarch64_program(scratch: bool, foreign: int) -> None:
    prog = program(scratch, "aarch64")
    for nr in (*range(0, 480), X32_BIT | 39, 0xFFFFFFFF):
        for args in (_NOTHING, _ZERO):
            assert decide(prog, nr, foreign, args) == seccomp.ACT_KILL_PROCESS, (hex(foreign), nr)


@pytest.mark.parametrize("scratch", VARIANTS)
def test_the_amd64_program_kills_x32_i386_and_aarch64(scratch: bool) -> None:
    prog = program(scratch)
    for nr in range(0, 480):
        assert decide(prog, X32_BIT | nr, AUDIT_ARCH_X86_64, _ZERO) == seccomp.ACT_KILL_PROCESS, nr
        for foreign in (AUDIT_ARCH_I386, AUDIT_ARCH_AARCH64, AUDIT_ARCH_ARM):
            assert decide(prog, nr, foreign, _ZERO) == seccomp.ACT_KILL_PROCESS, (hex(foreign), nr)
