"""Limits hold with the Python layer gone: memory (shared memory included), CPU, processes
and threads, file size (see test_filesystem's scratch test), descriptors."""

from __future__ import annotations

from terminai_apts.executor import SandboxConfig

from tests.breach.harness import breach
from tests.breach.support import EMIT, PRELUDE, attack

SMALL = SandboxConfig(timeout_seconds=10, security_mode="standard", max_memory_mb=64)

MEMORY = """
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
def mapped(flags):
    address = libc.mmap(None, 300 * 1024 * 1024, 3, flags | 0x20, -1, 0)  # RW, MAP_ANONYMOUS
    if address in (None, ctypes.c_void_p(-1).value):
        return errno.errorcode[ctypes.get_errno()]
    ctypes.memset(address, 1, 300 * 1024 * 1024)
    return "ok"
out["heap"] = attempt(lambda: bytearray(300 * 1024 * 1024))
out["shared-anon"] = mapped(0x01)
out["private-anon"] = mapped(0x02)
out["mlock"] = sc(149, 0, 4096)
"""


def test_memory_including_shared_memory_is_capped() -> None:
    out = attack(MEMORY, config=SMALL)
    assert out["heap"] == "MemoryError" and out["shared-anon"] == "ENOMEM" and out["private-anon"] == "ENOMEM", out
    assert out["mlock"] == "EPERM", out


def test_memory_is_uncapped_when_the_limits_are_off() -> None:
    out = attack(MEMORY, config=SMALL, skip=("rlimits",))
    assert out["heap"] == "ok" and out["shared-anon"] == "ok", out


def test_cpu_is_capped_even_with_signals_ignored() -> None:
    code = PRELUDE + (
        "import signal\n"
        "signal.signal(signal.SIGXCPU, signal.SIG_IGN)\n"  # the hard limit then kills
        "while True:\n    pass\n"
    )
    result = breach(code, SandboxConfig(timeout_seconds=30, cpu_seconds=1, security_mode="standard"))
    assert result.timed_out and not result.memory_exceeded, result
    assert "CPU" in (result.error or "")  # the CPU limit ended it, long before the wall clock


def test_the_host_deadline_holds_when_the_run_blocks_every_signal() -> None:
    code = PRELUDE + (
        "import signal, time\n"
        "for s in (signal.SIGTERM, signal.SIGINT, signal.SIGXCPU, signal.SIGALRM):\n"
        "    signal.signal(s, signal.SIG_IGN)\n"
        "time.sleep(60)\n"
    )
    result = breach(code, SandboxConfig(timeout_seconds=1, security_mode="standard"))
    assert result.timed_out and result.session_ended and result.duration_ms < 4_000, result


def test_no_thread_and_no_process() -> None:
    out = attack(
        "import threading\n"
        "out['thread'] = attempt(lambda: threading.Thread(target=lambda: None).start())\n"
        "out['fork'] = attempt(os.fork)\n"
    )
    assert out["thread"] == "RuntimeError" and out["fork"] == "EPERM", out


def test_descriptors_are_capped() -> None:
    out = attack(
        "fds = []\n"
        "def grab():\n"
        "    while len(fds) < 10000:\n"
        "        fds.append(os.open('/dev/null', os.O_RDONLY))\n"
        "out['open'] = attempt(grab)\n"
        "out['count'] = len(fds)\n"
    )
    assert out["open"] == "EMFILE" and int(str(out["count"])) < 32, out


def test_limits_cannot_be_raised_from_inside() -> None:
    out = attack(
        "limit = (ctypes.c_uint64 * 2)(2**62, 2**62)\n"
        "out['setrlimit-as'] = sc(160, 9, limit)\n"  # RLIMIT_AS
        "out['prlimit-cpu'] = sc(302, 0, 0, limit, None)\n"  # RLIMIT_CPU
        "out['prlimit-read'] = sc(302, 0, 9, None, limit)\n"
    )
    assert out == {"setrlimit-as": "EPERM", "prlimit-cpu": "EPERM", "prlimit-read": "ok"}, out


def test_result_of_a_crash_is_a_clean_failure() -> None:
    result = breach(PRELUDE + "ctypes.string_at(0)\n" + EMIT)
    assert not result.success and result.error_type == "ChildCrashed" and "signal 11" in (result.error or "")
