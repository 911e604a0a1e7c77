"""Red team: reaching files through descriptors and /proc instead of plain paths.

``O_PATH`` opens are not reads (Landlock does not check them), ``AT_EMPTY_PATH`` turns a
descriptor back into a path for the *at() calls, and /proc's magic links re-open what
they point to: none of these may read, write or re-open anything the run could not reach
by its path.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from terminai_apts.executor import ExecutorSession, SandboxConfig, thermal_spec
from terminai_apts.executor.os_layer import isolation
from terminai_apts.memory import store
from terminai_apts.memory.records import NewMemory

from tests.breach import harness
from tests.breach.support import attack, container, landlock_abi, namespaces_available


@pytest.fixture
def secret() -> Iterator[Path]:
    """World-readable and world-writable: only the sandbox may stand in the way."""
    folder = Path(tempfile.mkdtemp(prefix="terminai-breach-"))
    folder.chmod(0o777)
    path = folder / "secret.txt"
    path.write_text("host secret")
    path.chmod(0o666)
    yield path
    shutil.rmtree(folder, ignore_errors=True)


O_PATH_TRICKS = """
AT_EMPTY_PATH = 0x1000
fd = os.open("{secret}", os.O_PATH)
out["read-o-path"] = attempt(os.read, fd, 16)
out["reopen-via-proc"] = attempt(lambda: os.read(os.open(f"/proc/self/fd/{{fd}}", os.O_RDONLY), 16))
out["openat-empty"] = sc(257, fd, b"", os.O_RDONLY)
out["fchmodat-empty"] = sc(268, fd, b"", 0o777, AT_EMPTY_PATH)
out["fchownat-empty"] = sc(260, fd, b"", 0, 0, AT_EMPTY_PATH)
out["linkat-empty"] = sc(265, fd, b"", -100, b"{secret}.link", AT_EMPTY_PATH)
out["utimensat-fd"] = sc(280, fd, None, None, 0)
out["mmap-o-path"] = "ok" if libc.mmap(None, 4096, 1, 1, fd, 0) not in (None, -1) else "refused"
out["ftruncate-o-path"] = attempt(os.ftruncate, fd, 0)
dirfd = os.open("{folder}", os.O_PATH | os.O_DIRECTORY)
out["openat-beneath-dir"] = attempt(lambda: os.read(os.open("secret.txt", os.O_RDONLY, dir_fd=dirfd), 16))
out["listdir-o-path"] = attempt(os.listdir, dirfd)
"""


@pytest.mark.parametrize("skip", [(), ("minimal-root",)], ids=["all-layers", "landlock-without-own-root"])
def test_o_path_and_at_empty_path_grant_nothing(secret: Path, skip: tuple[str, ...]) -> None:
    if not skip and namespaces_available():
        # The run's own root does not hold the secret: not even an O_PATH descriptor.
        out = attack(f"out['o-path'] = attempt(os.open, '{secret}', os.O_PATH)")
        assert out == {"o-path": "ENOENT"}, out
        return
    out = attack(O_PATH_TRICKS.format(secret=secret, folder=secret.parent), skip=skip)
    out["mmap-o-path"] = "ok" if out["mmap-o-path"] == "ok" else "refused"
    allowed = {k: v for k, v in out.items() if v == "ok"}
    if landlock_abi():
        assert allowed == {}, out
    else:  # documented: without Landlock, reads rest on file permissions (open here)
        assert set(allowed) <= {"reopen-via-proc", "openat-beneath-dir", "listdir-o-path"}, out
    assert secret.read_text() == "host secret" and secret.stat().st_mode & 0o777 == 0o666
    assert not Path(f"{secret}.link").exists()


def test_the_same_descriptor_reads_the_secret_without_landlock(secret: Path) -> None:
    out = attack(O_PATH_TRICKS.format(secret=secret, folder=secret.parent), skip=("landlock", "minimal-root"))
    assert out["reopen-via-proc"] == "ok" and out["openat-beneath-dir"] == "ok", out


MAGIC_LINKS = """
import fcntl, stat
pipes = {{}}
for fd in range(3, 64):
    try:
        if stat.S_ISFIFO(os.fstat(fd).st_mode):
            pipes["res" if fcntl.fcntl(fd, fcntl.F_GETFL) & 3 == os.O_WRONLY else "cmd"] = fd
    except OSError:
        pass
def read(path):
    fd = os.open(path, os.O_RDONLY)
    return os.read(fd, 16)
out["proc-self-root"] = attempt(read, "/proc/self/root{secret}")
out["proc-thread-self-root"] = attempt(read, "/proc/thread-self/root{secret}")
out["proc-self-cwd"] = attempt(read, "/proc/self/cwd{secret}")
out["proc-1-root"] = attempt(read, "/proc/1/root{secret}")
out["cmd-pipe-for-write"] = attempt(os.open, f"/proc/self/fd/{{pipes['cmd']}}", os.O_WRONLY)
out["res-pipe-for-read"] = attempt(os.open, f"/proc/self/fd/{{pipes['res']}}", os.O_RDONLY)
out["proc-self-mem"] = attempt(os.open, "/proc/self/mem", os.O_RDWR)
out["proc-self-map-files"] = attempt(os.listdir, "/proc/self/map_files")
out["proc-self-mountinfo"] = attempt(read, "/proc/self/mountinfo")
out["proc-sys-write"] = attempt(os.open, "/proc/sys/kernel/core_pattern", os.O_WRONLY)
out["sysrq"] = attempt(os.open, "/proc/sysrq-trigger", os.O_WRONLY)
out["dev-tcp-like"] = attempt(read, "/dev/tcp/127.0.0.1/80")
out["dev-kmsg"] = attempt(read, "/dev/kmsg")
out["dev-mem"] = attempt(read, "/dev/mem")
out["sys-class"] = attempt(os.listdir, "/sys/class/net")
"""


def test_proc_magic_links_reopen_nothing_new(secret: Path) -> None:
    out = attack(MAGIC_LINKS.format(secret=secret))
    # A second read end of the run's own result pipe (possible where the run shares the
    # pipe's owner, as inside the image) only reads back what the run wrote itself.
    out.pop("res-pipe-for-read")
    allowed = {k: v for k, v in out.items() if v == "ok"}
    if landlock_abi():
        assert allowed == {}, out
    else:  # documented: reads rest on permissions, writes and pipes on seccomp
        assert not set(allowed) & {"cmd-pipe-for-write", "proc-self-mem", "proc-sys-write", "sysrq"}, out
    assert secret.read_text() == "host secret"


METADATA = """
pids = []
for pid in (*range(1, 32768), *{watched}):
    try:
        pids.append((pid, os.stat(f"/proc/{{pid}}").st_uid))
    except OSError:
        pass
out["processes"] = sorted({{pid for pid, _ in pids}})
out["process-owners"] = sorted({{uid for _, uid in pids}})
out["secret-size"] = attempt(lambda: os.stat("{secret}").st_size)
out["secret-exists"] = os.path.exists("{secret}")
out["secret-access"] = os.access("{secret}", os.F_OK)
out["secret-folder"] = attempt(os.lstat, "{folder}")
out["host-files"] = [p for p in ("/etc/passwd", "/etc/hostname", "/home", "/var", "/usr/bin/env") if os.path.lexists(p)]
exe = attempt(os.readlink, "/proc/self/exe")
out["interpreter-path"] = os.readlink("/proc/self/exe") if exe == "ok" else exe
out["interpreter-bound"] = exe != "ok" or os.path.isfile(out["interpreter-path"])
"""


def _metadata(secret: Path, watched: tuple[int, ...], skip: tuple[str, ...] = ()) -> dict[str, object]:
    return attack(METADATA.format(secret=secret, folder=secret.parent, watched=watched), skip=skip)


def test_metadata_outside_the_run_stays_hidden(secret: Path) -> None:
    with ExecutorSession(SandboxConfig(timeout_seconds=10)) as other:
        assert other.run("x = 1").success
        watched = (os.getpid(), harness.zygote().proc.pid, other._run.pid)
        out = _metadata(secret, watched)
    if not namespaces_available():
        # Landlock governs opening files, not their metadata, and without namespaces the
        # run has no root or /proc of its own: what it sees is the container's file system
        # and processes. So there the guarantee rests on the container: checked below.
        box = container()
        if box is None:
            pytest.xfail("no namespaces and no container here: metadata outside the run is visible")
        assert box.host_pid_namespace != os.readlink("/proc/self/ns/pid")  # the run's, too
        host = _metadata(Path(box.host_secret), watched)
        assert host["secret-exists"] is False and host["secret-size"] == "ENOENT", host
        return
    assert out["processes"] == [1], out  # itself, PID 1 of its own namespace; no host pid
    assert out["secret-exists"] is False and out["secret-access"] is False, out
    assert out["secret-size"] == "ENOENT" and out["secret-folder"] == "ENOENT", out
    assert out["host-files"] == [], out
    # The interpreter is bound at its own path: /proc/self/exe names nothing beyond it.
    assert out["interpreter-bound"] is True, out
    assert os.path.exists(secret)


def test_the_metadata_is_visible_without_the_runs_own_root(secret: Path) -> None:
    # The test above can fail: with the run's own root off, the same probe sees the
    # host's processes (PID namespace or not, /proc is the host's mount) and files.
    watched = (os.getpid(), harness.zygote().proc.pid)
    out = _metadata(secret, watched, skip=("minimal-root",))
    assert set(watched) <= set(out["processes"]), out  # type: ignore[arg-type]
    assert out["secret-exists"] is True and out["secret-size"] == "ok", out
    assert "/etc/passwd" in out["host-files"], out  # type: ignore[operator]


def _mount_table() -> list[str]:
    """The host's mounts wherever a run mounts something of its own (``/``, ``/proc``,
    the temporary directory that holds the runs' directories, every bound path), as this
    process sees them. Elsewhere other users of the machine (container engines) may
    mount and unmount meanwhile."""
    root = isolation.prepare().root
    assert root is not None
    places = ("/", "/proc", tempfile.gettempdir(), *(bind.path for bind in root.binds))
    found = []
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            fields = line.split()
            if any(fields[4] == place or (place != "/" and fields[4].startswith(place + "/")) for place in places):
                found.append(" ".join(fields[3:]))  # from the mount's root on: no ids
    return sorted(found)


def test_runs_leave_the_host_mount_table_unchanged(tmp_path: Path) -> None:
    database = tmp_path / "memory.db"
    store.build(database, [NewMemory(uid="u1", date="2026-01-01", recorded_at="2026-01-01", title="t", content="c")])
    before = _mount_table()
    scratch = SandboxConfig(timeout_seconds=10, security_mode="standard", scratch=True)
    for config in (harness.DEFAULT, scratch):
        out = attack("out['cwd'] = os.getcwd()", config=config, api=thermal_spec(str(database)))
        assert out["cwd"], out
    with ExecutorSession(scratch) as session:  # a live run's mounts are not the host's either
        assert session.run("print(1)").success
        during = _mount_table()
    assert during == before and _mount_table() == before
    assert not [line for line in before if "terminai-run-" in line]
