"""Ask the running kernel what a seccomp program decides: for each (nr, args) case, a
forked child drops to ``nobody``, loads the program and makes the raw system call.

Run as a script (stdin: JSON ``{"program": hex, "cases": [[nr, [a0..a5]], ...]}``;
stdout: one JSON outcome per case), so the forks come from a small interpreter, not from
pytest. A refused call never reaches the kernel's implementation; an allowed one runs for
real, as ``nobody``, with arguments that are bad pointers, bad descriptors or zero.

Outcomes: ``["errno", e]`` (the call returned -1 with errno ``e``), ``["returned", v]``,
``["signal", s]`` (SIGSYS: the filter killed it; SIGALRM: the call was still blocking after a
second; anything else: the call ran and broke the child), ``["gone", status]`` (the call
ended the process itself, or closed the report pipe).
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import struct
import sys

_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_REPORT_FD = 1000  # far above any descriptor a case names
_NOBODY = 65534
_LOST = 250


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _child(libc: ctypes.CDLL, prog: _SockFprog, nr: int, args: list[int], write_fd: int) -> None:
    os.dup2(write_fd, _REPORT_FD)
    os.closerange(3, _REPORT_FD)
    if os.geteuid() == 0:
        os.setgroups([])
        os.setresgid(_NOBODY, _NOBODY, _NOBODY)
        os.setresuid(_NOBODY, _NOBODY, _NOBODY)
    signal.alarm(1)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        os._exit(_LOST - 1)
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        os._exit(_LOST - 2)
    result = libc.syscall(nr, *args)
    err = ctypes.get_errno() if result == -1 else 0
    try:
        os.write(_REPORT_FD, struct.pack("<qq", result, err))
    except OSError:
        os._exit(_LOST)
    os._exit(0)


def _outcome(status: int, report: bytes) -> list[int | str]:
    if len(report) == 16:
        result, err = struct.unpack("<qq", report)
        return ["errno", err] if result == -1 else ["returned", result]
    if os.WIFSIGNALED(status):
        return ["signal", os.WTERMSIG(status)]
    if os.WEXITSTATUS(status) in (_LOST - 1, _LOST - 2):
        raise RuntimeError("the probe could not load the filter")
    return ["gone", os.WEXITSTATUS(status)]


def main() -> None:
    request = json.load(sys.stdin)
    program = bytes.fromhex(request["program"])
    buf = ctypes.create_string_buffer(program, len(program))
    prog = _SockFprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    libc.syscall.argtypes = [ctypes.c_long] * 7
    outcomes = []
    for nr, args in request["cases"]:
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                _child(libc, prog, nr, [ctypes.c_long(a).value for a in args], write_fd)
            finally:
                os._exit(_LOST - 3)
        os.close(write_fd)
        report = os.read(read_fd, 16)
        os.close(read_fd)
        _, status = os.waitpid(pid, 0)
        outcomes.append(_outcome(status, report))
    json.dump(outcomes, sys.stdout)


if __name__ == "__main__":
    main()
