"""Nothing outlives the run: every process is gone (PID namespace, group kill, parent-death
signal, the zygote's orphan kill), SysV and POSIX IPC is gone (IPC namespace, or never
created under seccomp), and scratch files are gone (see test_filesystem)."""

from __future__ import annotations

import ctypes
import time
import uuid

import pytest

from tests.breach.support import EVERYTHING_OFF, attack, kill_all, named, namespaces_available

ESCAPE = """
import time
def escape():
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
        except OSError:
            pass
        if os.fork() == 0:  # a grandchild in its own session, re-parented on its parent's exit
            libc.prctl(15, b"{marker}", 0, 0, 0)
            time.sleep(60)
        os._exit(0)
out["fork"] = attempt(escape)
time.sleep(0.2)
"""
# Only where they are refused: an allowed raw vfork/clone would run this code twice.
RAW_SPAWN = """
out["vfork"] = sc(58)
out["clone-process"] = sc(56, 17, 0, 0, 0, 0)  # SIGCHLD, no CLONE_THREAD: a new process
out["setsid"] = attempt(os.setsid)
out["setpgid"] = attempt(os.setpgid, 0, 0)
"""


def test_no_process_can_be_created() -> None:
    marker = "brk" + uuid.uuid4().hex[:10]
    out = attack(ESCAPE.format(marker=marker) + RAW_SPAWN)
    assert set(out.values()) == {"EPERM"} and len(out) == 5, out
    assert named(marker) == []


@pytest.mark.parametrize(
    "kept",
    [
        "namespaces",  # PID 1 of the run's namespace dies: the kernel kills the rest
        "orphans",  # the zygote kills whatever is re-parented to it
    ],
)
def test_an_escaped_process_dies_with_the_run(kept: str) -> None:
    if kept == "namespaces" and not namespaces_available():
        kept = "orphans"  # documented: without namespaces, the zygote's orphan kill holds
    marker = "brk" + uuid.uuid4().hex[:10]
    skip = tuple(s for s in (*EVERYTHING_OFF, "orphans") if s != kept)
    try:
        out = attack(ESCAPE.format(marker=marker), skip=skip)
        assert out["fork"] == "ok", out  # the escape really happened
        time.sleep(0.5)  # the zygote sweeps within 50 ms of going idle
        assert named(marker) == []
    finally:
        kill_all(named(marker))


def test_the_escapee_survives_when_every_layer_is_off() -> None:
    marker = "brk" + uuid.uuid4().hex[:10]
    try:
        out = attack(ESCAPE.format(marker=marker), skip=(*EVERYTHING_OFF, "orphans"))
        assert out["fork"] == "ok"
        time.sleep(0.3)
        assert named(marker) != []
    finally:
        kill_all(named(marker))


IPC = """
IPC_CREAT = 0o1000
out["shmget"] = sc(29, {key}, 100 * 1024 * 1024, IPC_CREAT | 0o666)
out["semget"] = sc(64, {key}, 1, IPC_CREAT | 0o666)
out["msgget"] = sc(68, {key}, IPC_CREAT | 0o666)
out["mq_open"] = sc(240, b"/breach-{key}", os.O_CREAT | os.O_RDWR, 0o666, None)
out["memfd_create"] = sc(319, b"breach", 0)
"""


def _host_shm(key: int) -> list[int]:
    with open("/proc/sysvipc/shm") as fh:
        rows = [line.split() for line in fh.read().splitlines()[1:]]
    return [int(row[1]) for row in rows if int(row[0]) == key]


def _remove_shm(key: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    for shmid in _host_shm(key):
        libc.shmctl(shmid, 0, None)  # IPC_RMID


def test_no_ipc_object_can_be_created() -> None:
    key = int(uuid.uuid4().int % 2**30) + 1
    out = attack(IPC.format(key=key))
    assert set(out.values()) == {"EPERM"}, out
    assert _host_shm(key) == []


def test_ipc_namespace_alone_discards_segments() -> None:
    key = int(uuid.uuid4().int % 2**30) + 1
    try:
        out = attack(IPC.format(key=key), skip=tuple(s for s in EVERYTHING_OFF if s != "namespaces"))
        assert out["shmget"] == "ok", out
        if namespaces_available():
            assert _host_shm(key) == []  # the segment lived in the run's IPC namespace only
        else:  # documented: without namespaces, IPC rests on seccomp alone
            assert _host_shm(key) != []
    finally:
        _remove_shm(key)


def test_segments_outlive_the_run_when_every_layer_is_off() -> None:
    key = int(uuid.uuid4().int % 2**30) + 1
    try:
        out = attack(IPC.format(key=key), skip=EVERYTHING_OFF)
        assert out["shmget"] == "ok"
        assert _host_shm(key) != []
    finally:
        _remove_shm(key)
