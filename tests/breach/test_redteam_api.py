"""Red team: the injected memory API's SQLite connection and database file.

With the Python layer gone, the run holds the real ``sqlite3.Connection`` (through the
garbage collector) and the database's descriptor. The database must stay unchanged and
nothing may be written next to it or anywhere else, with or without a scratch directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from terminai_apts.executor import SandboxConfig, thermal_spec
from terminai_apts.executor.host import channel
from terminai_apts.memory import store
from terminai_apts.memory.records import NewMemory

from tests.breach import harness
from tests.breach.harness import DEFAULT
from tests.breach.support import EMIT, PRELUDE, attack, in_run

SCRATCH = SandboxConfig(timeout_seconds=10, security_mode="standard", scratch=True)


@pytest.fixture
def database() -> Iterator[Path]:
    """A real index, world-writable in a world-writable directory: file permissions are
    not what must stop these attacks (inside the image the run shares the file's owner)."""
    folder = Path(tempfile.mkdtemp(prefix="terminai-breach-db-"))
    folder.chmod(0o777)
    path = folder / "memory.db"
    memories = [
        NewMemory(uid="u1", date="2026-01-01", recorded_at="2026-01-01", title="plan", content="rollout", tags=("x",))
    ]
    store.build(path, memories)
    path.chmod(0o666)
    yield path
    shutil.rmtree(folder, ignore_errors=True)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


CONNECTION = """
import gc, sqlite3
conns = [o for o in gc.get_objects() if isinstance(o, sqlite3.Connection)]
for conn in conns:
    conn.set_authorizer(None)  # the read-only authorizer, gone
conn = [c for c in conns if c.execute("pragma database_list").fetchall()[0][2]][0]  # the file, not :memory:
def sql(statement):
    conn.execute(statement).fetchall()
    conn.commit()
out["read"] = attempt(sql, "select count(*) from sqlite_master")
out["create-table"] = attempt(sql, "create table owned(x)")
out["query-only-off"] = attempt(sql, "pragma query_only = 0")
out["writable-schema"] = attempt(lambda: [sql("pragma writable_schema = 1"), sql("update sqlite_master set sql = 'x'")])
out["update-schema"] = attempt(sql, "update sqlite_master set sql = 'owned' where name = 'memories'")
out["attach-new"] = attempt(sql, "attach database 'file:{outside}?mode=rwc' as owned")
out["vacuum-into"] = attempt(sql, "vacuum into '{outside}-vacuum'")
def journal_mode(new):  # an immutable connection answers its old mode instead of failing
    got = conn.execute(f"pragma journal_mode = {{new}}").fetchone()[0]
    if got != new:
        raise sqlite3.OperationalError(f"journal mode stayed {{got}}")
out["journal-wal"] = attempt(journal_mode, "wal")
out["temp-table"] = attempt(sql, "create temp table t(x)")
"""


def test_the_raw_connection_cannot_write_anything(database: Path) -> None:
    before, outside = _digest(database), f"/tmp/breach-{uuid.uuid4().hex[:8]}"
    for config in (DEFAULT, SCRATCH):
        out = attack(CONNECTION.format(outside=outside), config=config, api=thermal_spec(str(database)))
        assert out.pop("read") == "ok", out
        writes = ("create-table", "writable-schema", "update-schema", "attach-new", "vacuum-into", "journal-wal")
        assert {name: out[name] for name in writes if out[name] == "ok"} == {}, out
        assert _digest(database) == before
        assert sorted(p.name for p in database.parent.iterdir()) == ["memory.db"]  # no -wal, -journal
        assert not list(Path("/tmp").glob(Path(outside).name + "*"))


DESCRIPTOR = """
import fcntl
fds = {{}}
for fd in range(3, 64):
    try:
        fds[fd] = os.readlink(f"/proc/self/fd/{{fd}}")
    except OSError:
        pass
db = [fd for fd, target in fds.items() if target == "{path}"][0]
out["access-mode"] = fcntl.fcntl(db, fcntl.F_GETFL) & 3
out["pwrite"] = attempt(os.pwrite, db, b"owned", 0)
out["ftruncate"] = attempt(os.ftruncate, db, 0)
out["reopen-rw"] = attempt(os.open, f"/proc/self/fd/{{db}}", os.O_RDWR)
out["open-rw"] = attempt(os.open, "{path}", os.O_RDWR)
out["open-trunc"] = attempt(os.open, "{path}", os.O_RDONLY | os.O_TRUNC)
out["create-journal"] = attempt(os.open, "{path}-journal", os.O_RDWR | os.O_CREAT, 0o666)
out["sibling"] = attempt(os.listdir, "{folder}")
out["unlink"] = attempt(os.unlink, "{path}")
out["rename"] = attempt(os.rename, "{path}", "{path}.moved")
out["write-lock"] = attempt(fcntl.lockf, db, fcntl.LOCK_EX | fcntl.LOCK_NB)
"""


def test_the_database_descriptor_and_path_stay_read_only(database: Path) -> None:
    before = _digest(database)
    seen = in_run(database)
    body = DESCRIPTOR.format(path=seen, folder=os.path.dirname(seen))
    for config in (DEFAULT, SCRATCH):
        out = attack(body, config=config, api=thermal_spec(str(database)))
        assert out.pop("access-mode") == 0, out  # O_RDONLY
        assert {k: v for k, v in out.items() if v == "ok"} == {}, out
    assert _digest(database) == before


def test_the_database_is_writable_when_the_layers_are_off(database: Path) -> None:
    skip = ("landlock", "seccomp", "minimal-root")
    seen = in_run(database, skip=skip)
    body = DESCRIPTOR.format(path=seen, folder=os.path.dirname(seen)).replace('"{path}.moved"', '"/dev/null/x"')
    # The run's own root binds the database read-only: off too.
    out = attack(body, api=thermal_spec(str(database)), skip=skip)
    assert out["open-rw"] == "ok" and out["sibling"] == "ok", out  # only the sandbox stood in the way


HOLD_LOCK = """
import fcntl, struct
fresh = attempt(os.open, "{path}", os.O_RDONLY)  # a descriptor of its own, opened after hardening
out["reopen"] = fresh
held = []
for fd in range(3, 64):
    try:
        if os.readlink(f"/proc/self/fd/{{fd}}") == "{path}":
            held.append(fd)
    except OSError:
        pass
out["descriptors"] = len(held)
shared = struct.pack("hhqqi", fcntl.F_RDLCK, 0, 0, 0, 0) + bytes(4)  # the whole file, shared
for fd in held:
    out[f"setlk:{{fd}}"] = attempt(fcntl.fcntl, fd, fcntl.F_SETLK, shared)
    out[f"ofd-setlk:{{fd}}"] = attempt(fcntl.fcntl, fd, 37, shared)  # F_OFD_SETLK
    out[f"setlkw:{{fd}}"] = sc(72, fd, 7, ctypes.c_char_p(shared))  # F_SETLKW, by number
    out[f"ofd-setlkw:{{fd}}"] = sc(72, fd, 38, ctypes.c_char_p(shared))
    out[f"flock:{{fd}}"] = attempt(fcntl.flock, fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
"""


def _hold(database: Path, skip: frozenset[str] = frozenset()) -> tuple[dict[str, object], str]:
    """Try every way to lock the database from a run that stays alive, then write from the
    host meanwhile; the run's report and what the write did."""
    session = channel.RunChannel(harness.zygote(skip), DEFAULT, thermal_spec(str(database)).to_json())
    try:
        held = session.cell(PRELUDE + HOLD_LOCK.format(path=in_run(database, skip=skip)) + EMIT, 10)
        assert held["success"], held
        out: dict[str, object] = json.loads(held["stdout"])
        writer = sqlite3.connect(database, timeout=0.5)
        try:
            writer.execute("CREATE TABLE host_write (x)")
            writer.commit()  # the host's own write must not wait on a run
            return out, "ok"
        except sqlite3.OperationalError as exc:
            return out, str(exc)
        finally:
            writer.close()
    finally:
        session.end()


def test_a_run_cannot_hold_the_database_against_its_writer(database: Path) -> None:
    out, write = _hold(database)
    assert out.pop("descriptors") >= 1, out  # the run's SQLite connection and version pin
    out.pop("reopen")  # opening the file again to read it is the run's right; locking it is not
    assert {name: result for name, result in out.items() if result == "ok"} == {}, out
    assert write == "ok"


def test_the_database_can_be_held_when_seccomp_is_off(database: Path) -> None:
    """The companion: the run has descriptors to lock (SQLite needs none to read it);
    only the filter's refusal of every locking call keeps the writer free."""
    out, write = _hold(database, frozenset({"seccomp"}))
    assert any(result == "ok" for name, result in out.items() if ":" in name), out
    assert write == "database is locked"
