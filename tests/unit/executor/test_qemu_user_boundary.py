"""What qemu-user does with the executor's two kernel boundaries, so docs/SECURITY.md can
say why the arm64 image proves seccomp by simulation and Landlock not at all.

Each case is a tiny aarch64 program made here (one system call, its result as the exit
status), run by Debian's qemu-aarch64-static: no cross compiler, no arm64 root needed.
"""

from __future__ import annotations

import errno
import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

QEMU = shutil.which("qemu-aarch64-static") or shutil.which("qemu-aarch64")
# `make test` installs qemu-user-static (scripts/ensure-host-tools) before it runs: there, and
# under CI, a missing qemu is a failure, not a skip; a bare `make test-fast` may lack it.
_MISSING = "qemu-user is not installed (apt-get install qemu-user-static, or make host-tools)"
pytestmark = pytest.mark.skipif(QEMU is None and not os.environ.get("CI"), reason=_MISSING)


@pytest.fixture(autouse=True)
def _qemu_present() -> None:
    if QEMU is None:
        pytest.fail(_MISSING)


# aarch64 system call numbers (asm-generic/unistd.h)
GETPPID, PRCTL, SECCOMP, LANDLOCK_CREATE_RULESET, EXIT = 173, 167, 277, 444, 93
PR_SET_SECCOMP, SECCOMP_MODE_FILTER, SECCOMP_SET_MODE_FILTER = 22, 2, 1
LANDLOCK_CREATE_RULESET_VERSION = 1
_BASE = 0x400000
_HEADERS = 64 + 56  # ELF header, one program header


def _movz(reg: int, imm: int) -> int:
    return 0xD2800000 | imm << 5 | reg


def aarch64_program(nr: int, *args: int) -> bytes:
    """A static aarch64 ELF that makes ``nr(args)`` and exits with its low byte."""
    code = [_movz(i, a) for i, a in enumerate(args)] + [_movz(8, nr), 0xD4000001, _movz(8, EXIT), 0xD4000001]
    text = b"".join(struct.pack("<I", c) for c in code)
    size = _HEADERS + len(text)
    header = struct.pack(
        "<4sBBBBB7xHHIQQQIHHHHHH", b"\x7fELF", 2, 1, 1, 0, 0, 2, 183, 1, _BASE + _HEADERS, 64, 0, 0, 64, 56, 1, 0, 0, 0
    )
    segment = struct.pack("<IIQQQQQQ", 1, 5, 0, _BASE, _BASE, size, size, 0x1000)  # PT_LOAD, R+X
    return header + segment + text


def run(tmp_path: Path, nr: int, *args: int) -> int:
    binary = tmp_path / f"call-{nr}"
    binary.write_bytes(aarch64_program(nr, *args))
    binary.chmod(0o755)
    assert QEMU is not None
    return subprocess.run([QEMU, str(binary)], check=False, timeout=30).returncode


def failed_with(code: int) -> int:
    return -code & 0xFF


def test_an_emulated_system_call_reaches_the_host(tmp_path: Path) -> None:
    # the probe itself works: the emulated program's parent is this test's process
    assert run(tmp_path, GETPPID) == os.getpid() & 0xFF


def test_qemu_refuses_to_install_a_seccomp_filter(tmp_path: Path) -> None:
    # The host kernel would read the (NULL) program and answer EFAULT; qemu refuses first,
    # since a guest filter would be applied to qemu's own x86_64 system calls.
    assert run(tmp_path, PRCTL, PR_SET_SECCOMP, SECCOMP_MODE_FILTER, 0) == failed_with(errno.EINVAL)
    assert run(tmp_path, SECCOMP, SECCOMP_SET_MODE_FILTER, 0, 0) == failed_with(errno.ENOSYS)


def test_qemu_does_not_pass_landlock_through(tmp_path: Path) -> None:
    # The host kernel answers its ABI version (a Landlock-enabled host); qemu-user 7.2
    # does not know the call. When a newer qemu does, docs/SECURITY.md's table changes.
    assert run(tmp_path, LANDLOCK_CREATE_RULESET, 0, 0, LANDLOCK_CREATE_RULESET_VERSION) == failed_with(errno.ENOSYS)
