"""Layer 6 pieces that can be checked directly: the seccomp program and its effect."""

from __future__ import annotations

import os
import socket
import struct

import pytest
from terminai_apts.executor import SandboxConfig
from terminai_apts.executor.limits import install_seccomp, seccomp_program


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_seccomp_program_shape(machine: str) -> None:
    program = seccomp_program(machine)
    assert len(program) % 8 == 0
    first = struct.unpack("HBBI", program[:8])
    assert first == (0x20, 0, 0, 4)  # arch check comes first
    assert struct.unpack("HBBI", program[-8:])[3] == 0x7FFF0000  # default allow


def test_seccomp_denies_sockets_in_a_forked_process() -> None:
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            os.environ.clear()
            from terminai_apts.executor.limits import set_no_new_privs

            set_no_new_privs()
            install_seccomp()
            try:
                socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                code = 1
            except PermissionError:
                code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def test_config_validation() -> None:
    from terminai_apts.errors import UsageError

    with pytest.raises(UsageError):
        SandboxConfig(security_mode="loose")  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        SandboxConfig(timeout_seconds=0)
    assert SandboxConfig(timeout_seconds=2.5).effective_cpu_seconds == 3
