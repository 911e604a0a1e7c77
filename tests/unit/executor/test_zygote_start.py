"""The zygote started without ``subprocess`` (``zygote_start.start``, what
``terminai-apts exec`` uses) is the process ``ZygoteClient`` starts: the production
module, only its control socket inherited (stdio on /dev/null), ``/`` as its working
directory, only ``PYTHONPATH`` and ``PATH`` in its environment; and a client adopts it."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from terminai_apts.executor import SandboxConfig
from terminai_apts.executor.host import run, zygote_client, zygote_start
from terminai_apts.executor.process import zygote

from tests.breach.support import proc_stats


def _links(pid: int) -> dict[int, str]:
    folder = f"/proc/{pid}/fd"
    found = {}
    for name in os.listdir(folder):
        try:
            found[int(name)] = os.readlink(f"{folder}/{name}")
        except OSError:
            continue
    return found


@pytest.fixture
def leaked() -> Iterator[str]:
    """An inheritable descriptor of this process (one a caller passed to the command),
    as its /proc link names it."""
    read, write = os.pipe()
    os.set_inheritable(read, True)
    try:
        yield os.readlink(f"/proc/self/fd/{read}")
    finally:
        os.close(read)
        os.close(write)


def test_the_early_zygote_gets_nothing_of_its_caller(leaked: str) -> None:
    proc, control = zygote_start.start()
    client = zygote_client.ZygoteClient.adopt(proc, control)
    try:
        result = run._run_fresh("print(6 * 7)", SandboxConfig(timeout_seconds=10), None, lambda: client)
        assert result.success and result.stdout == "42\n", result.error
        links = _links(proc.pid)
        assert leaked not in links.values(), links
        assert all(links[fd] == "/dev/null" for fd in (0, 1, 2)), links
        assert sum(target.startswith("socket:") for target in links.values()) == 1, links
        assert os.readlink(f"/proc/{proc.pid}/cwd") == "/"
        with open(f"/proc/{proc.pid}/environ", "rb") as fh:
            names = {entry.split(b"=", 1)[0] for entry in fh.read().split(b"\0") if entry}
        assert names == {b"PYTHONPATH", b"PATH"}
        with open(f"/proc/{proc.pid}/cmdline", "rb") as fh:
            argv = fh.read().split(b"\0")
        assert zygote_start.ZYGOTE.encode() in argv
    finally:
        client.close()
    assert proc.returncode == 0  # it ended by itself on the closed socket


def test_a_plain_spawn_would_hand_the_descriptor_on(leaked: str) -> None:
    # What the check above guards against: a new program inherits the caller's
    # inheritable descriptors unless they are closed for it.
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], close_fds=False)
    try:
        assert leaked in _links(child.pid).values()
    finally:
        child.kill()
        child.wait()


def test_the_client_and_the_early_start_share_one_command_line() -> None:
    assert zygote_start.command("m", 7, ("x",))[-3:] == ["m", "7", "x"]
    assert zygote_client.ZygoteClient.__init__.__defaults__ == (zygote_start.ZYGOTE, ())


def test_a_stuck_zygote_is_killed_on_close() -> None:
    # A process that ignores the closed socket (here: one that only sleeps) is killed
    # after the second close() allows it, as a Popen-started one is.
    pid = os.posix_spawn(sys.executable, [sys.executable, "-c", "import time; time.sleep(30)"], dict(os.environ))
    ours, theirs = socket.socketpair()
    theirs.close()
    client = zygote_client.ZygoteClient.adopt(zygote_start.Spawned(pid), ours)
    client.close()
    assert client.proc.returncode == -9


def test_a_run_asked_ahead_is_the_one_spawn_returns() -> None:
    proc, control = zygote_start.start()
    client = zygote_client.ZygoteClient.adopt(proc, control)
    try:
        client.ask_ahead()
        client.ask_ahead()  # asked once only
        assert client.owed.count("spawn") == 1
        result = run._run_fresh("print(1)", SandboxConfig(timeout_seconds=10), None, lambda: client)
        assert result.success and result.stdout == "1\n", result.error
        assert not client.owed.count("spawn") and not client.stock
    finally:
        client.close()
    assert proc.returncode == 0


def test_a_run_asked_ahead_and_never_taken_ends_with_the_zygote() -> None:
    proc, control = zygote_start.start()
    client = zygote_client.ZygoteClient.adopt(proc, control)
    client.ask_ahead()
    # The zygote forks the run once it is up; a loaded machine may take seconds.
    deadline = time.monotonic() + 30
    while not (keepers := _children(proc.pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert keepers, "the zygote forked no run"
    client.close()
    assert proc.returncode == 0
    for pid in keepers:
        assert not os.path.exists(f"/proc/{pid}"), pid


def _children(pid: int) -> list[int]:
    """Processes whose parent is ``pid`` (from /proc: the per-task children list needs a
    kernel option that is often off)."""
    return [child for child, fields in proc_stats().items() if int(fields[1]) == pid]


def test_a_runs_directory_is_made_as_mkdtemp_makes_one() -> None:
    made = [zygote.new_base() for _ in range(3)]
    try:
        assert len(set(made)) == 3
        for path in made:
            name = os.path.basename(path)
            assert os.path.dirname(path) == "/tmp" and name.startswith("terminai-run-") and len(name) == 29
            info = os.lstat(path)
            assert stat.S_ISDIR(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o700
            assert info.st_uid == os.getuid()
    finally:
        for path in made:
            os.rmdir(path)
    assert (
        "tempfile"
        not in subprocess.run(
            [
                sys.executable,
                "-S",
                "-c",
                "import sys; import terminai_apts.executor.process.zygote; print(*sys.modules)",
            ],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
        ).stdout.split()
    )


def test_a_runs_directory_goes_where_tempfile_would_put_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    assert os.path.dirname(zygote.new_base()) == str(tmp_path)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "missing"))  # unusable: the next candidate
    made = zygote.new_base()
    try:
        assert os.path.dirname(made) == "/tmp"
    finally:
        os.rmdir(made)
