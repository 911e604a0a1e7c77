"""Red team: make the host's memory writer wait or fail from a run over a journal directory.

``test_redteam_api.py`` takes record locks and ``flock`` on the index's descriptors. This
goes after what that leaves: a read *lease* (the kernel then holds every ``open`` for
writing, SQLite's included, for ``lease-break-time``, 45 s by default), directory and
inode notification, a shared mapping of the index written or hole-punched (``MADV_REMOVE``),
SQLite itself opened again by the run with each of its lock styles
(POSIX, ``unix-flock``, ``unix-dotfile``) and a read transaction left open, the raw
connection attaching the file without ``immutable``, and the journal writer's own lock
file, ``ROOT/.lock``, which ``MemoryJournal.lock`` takes with a blocking ``flock``.

The run owns the files here, as the image user owns the index inside the image: a lease
needs the file's owner, so ownership is not what must stop it.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from terminai_apts.executor import thermal_spec
from terminai_apts.executor.host import channel
from terminai_apts.memory import store
from terminai_apts.memory.records import NewMemory
from terminai_apts.memory.tiers import LIVE_INDEX

from tests.breach import harness
from tests.breach.harness import DEFAULT
from tests.breach.support import EMIT, PRELUDE, in_run


@pytest.fixture
def journal() -> Iterator[Path]:
    """A journal directory (live index and writer's lock file) owned by the run's uid."""
    root = Path(tempfile.mkdtemp(prefix="terminai-breach-writer-"))
    root.chmod(0o755)
    record = NewMemory(uid="u1", date="2026-01-01", recorded_at="2026-01-01", title="plan", content="rollout")
    store.build(root / LIVE_INDEX, [record])
    (root / ".lock").touch()
    for path in (root / LIVE_INDEX, root / ".lock"):
        if os.getuid() == 0:  # the run drops to this uid; elsewhere it is the caller's own
            os.chown(path, DEFAULT.unprivileged_uid, DEFAULT.unprivileged_gid)
        path.chmod(0o644)
    yield root
    shutil.rmtree(root, ignore_errors=True)


HOLD = """
import fcntl, gc, sqlite3, struct
paths = {{"index": "{index}", "lock": "{lock}"}}
fds = []
for fd in range(3, 64):
    try:
        if os.readlink(f"/proc/self/fd/{{fd}}") in paths.values():
            fds.append(fd)
    except OSError:
        pass
for path in paths.values():
    fresh = os.open(path, os.O_RDONLY)  # reading them again is the run's right
    fds.append(fresh)
out["descriptors"] = len(fds)
for fd in fds:
    name = os.path.basename(os.readlink(f"/proc/self/fd/{{fd}}"))
    out[f"lease:{{name}}:{{fd}}"] = attempt(fcntl.fcntl, fd, fcntl.F_SETLEASE, fcntl.F_RDLCK)
    out[f"flock:{{name}}:{{fd}}"] = attempt(fcntl.flock, fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    out[f"setlk:{{name}}:{{fd}}"] = attempt(fcntl.lockf, fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
PROT_READ, PROT_WRITE, MAP_SHARED, MADV_REMOVE = 1, 2, 1, 9
def map_shared(fd, prot):
    addr = libc.mmap(None, 4096, prot, MAP_SHARED, fd, 0)
    if addr in (None, ctypes.c_void_p(-1).value):
        raise OSError(ctypes.get_errno(), "mmap")
    return addr
def punch_hole(fd):  # MADV_REMOVE frees the file's blocks under a shared mapping
    if libc.madvise(ctypes.c_void_p(map_shared(fd, PROT_READ)), 4096, MADV_REMOVE) != 0:
        raise OSError(ctypes.get_errno(), "madvise")
for fd in fds:
    if os.readlink(f"/proc/self/fd/{{fd}}") == paths["index"]:
        out[f"mmap-write:{{fd}}"] = attempt(map_shared, fd, PROT_READ | PROT_WRITE)
        out[f"madvise-remove:{{fd}}"] = attempt(punch_hole, fd)
        out[f"mmap-read:{{fd}}"] = attempt(map_shared, fd, PROT_READ)  # allowed: reading is the run's right
folder = os.open("{root}", os.O_RDONLY | os.O_DIRECTORY)
out["dnotify"] = attempt(fcntl.fcntl, folder, fcntl.F_NOTIFY, fcntl.DN_MODIFY | fcntl.DN_MULTISHOT)
out["inotify"] = sc(294, 0)  # inotify_init1
out["fanotify"] = sc(300, 0, 0)  # fanotify_init
keep = []
def read_transaction(uri):
    conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=0)
    conn.execute("BEGIN")
    conn.execute("SELECT count(*) FROM memories").fetchall()  # SQLite's shared lock, if it got one
    keep.append(conn)
for vfs in ("unix", "unix-flock", "unix-dotfile"):
    out[f"sqlite:{{vfs}}"] = attempt(read_transaction, f"file:{index}?mode=ro&vfs={{vfs}}")
raw = [c for c in gc.get_objects() if isinstance(c, sqlite3.Connection) and c not in keep]
def attach(conn):
    conn.set_authorizer(None)
    conn.execute("PRAGMA busy_timeout = 0")
    conn.execute("ATTACH DATABASE 'file:{index}?mode=ro' AS again")
    conn.execute("BEGIN")
    conn.execute("SELECT count(*) FROM again.memories").fetchall()
out["attach"] = attempt(attach, raw[0])
"""


def _hold(root: Path, skip: frozenset[str] = frozenset()) -> tuple[dict[str, object], dict[str, str]]:
    """Every hold above from a run that stays alive; what the host's writers then met."""
    index, lock = root / LIVE_INDEX, root / ".lock"
    session = channel.RunChannel(harness.zygote(skip), DEFAULT, thermal_spec(str(root)).to_json())
    try:
        seen = in_run(root, skip=skip)  # where the run sees the journal directory
        body = HOLD.format(index=f"{seen}/{LIVE_INDEX}", lock=f"{seen}/.lock", root=seen)
        held = session.cell(PRELUDE + body + EMIT, 10)
        assert held["success"], held
        out: dict[str, object] = json.loads(held["stdout"])
        return out, _write(index, lock)
    finally:
        session.end()


def _write(index: Path, lock: Path) -> dict[str, str]:
    """The host's writers, each told not to wait: what each met."""
    met: dict[str, str] = {}
    try:  # what sqlite3.connect does first; a lease would hold it for 45 s
        os.close(os.open(index, os.O_RDWR | os.O_NONBLOCK))
        met["open-for-writing"] = "ok"
    except OSError as exc:
        met["open-for-writing"] = errno.errorcode.get(exc.errno or 0, str(exc))
    else:  # (SQLite's blocking open would wait out the lease)
        writer = sqlite3.connect(index, timeout=0.5)
        try:
            writer.execute("CREATE TABLE host_write (x)")
            writer.commit()
            met["commit"] = "ok"
        except sqlite3.OperationalError as exc:
            met["commit"] = str(exc)
        finally:
            writer.close()
    try:  # MemoryJournal.lock: open(ROOT/.lock, "a"), then flock, here without blocking
        fd = os.open(lock, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
        met["journal-lock"] = "ok"
    except OSError as exc:
        met["journal-lock"] = errno.errorcode.get(exc.errno or 0, str(exc))
    return met


def test_no_lease_notification_or_lock_from_a_run_holds_the_writers(journal: Path) -> None:
    out, met = _hold(journal)
    assert int(str(out.pop("descriptors"))) >= 3, out  # the run's index connection, its pin, the fresh opens
    assert {out.pop(name) for name in list(out) if name.startswith("mmap-read:")} == {"ok"}
    assert {name: result for name, result in out.items() if result == "ok"} == {}, out
    assert met == {"open-for-writing": "ok", "commit": "ok", "journal-lock": "ok"}


def test_a_lease_and_the_journal_lock_hold_the_writers_when_seccomp_is_off(journal: Path) -> None:
    """The companion: the run owns the files and has descriptors to them; only the filter
    keeps a lease (45 s for every writer's open) and the journal's lock from it."""
    out, met = _hold(journal, frozenset({"seccomp"}))
    assert any(out[name] == "ok" for name in out if name.startswith("lease:")), out
    assert met["open-for-writing"] in ("EWOULDBLOCK", "EAGAIN"), met
    assert met["journal-lock"] in ("EWOULDBLOCK", "EAGAIN"), met
