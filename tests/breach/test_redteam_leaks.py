"""What a run can learn about the machine: not the host's path of its index (bound at a
neutral path), not its host name (a UTS namespace named
"sandbox"), not its process count, memory, uptime or disk use (``sysinfo``, ``statfs``
and ``fstatfs`` refused), and it cannot rename itself in the kernel's view (``comm``:
``PR_SET_NAME`` refused; its command line is its own memory, ``test_process_list``).
Each with the companion showing the leak without the layer that closes it."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from terminai_apts.executor import thermal_spec
from terminai_apts.executor.process import child
from terminai_apts.memory import store
from terminai_apts.memory.records import NewMemory

from tests.breach.support import attack, container, namespaces_available

PROBE = """
out["nodename"] = os.uname().nodename
buf = ctypes.create_string_buffer(512)
out["sysinfo"] = sc(99, buf)
out["statfs"] = sc(137, b"/", buf)
out["fstatfs"] = sc(138, 0, buf)
out["set-name"] = sc(157, 15, b"kworker/0:1", 0, 0, 0)
name = ctypes.create_string_buffer(16)
out["get-name"] = sc(157, 16, name, 0, 0, 0)
"""


def test_the_run_learns_nothing_of_the_machine() -> None:
    out = attack(PROBE)
    assert out["sysinfo"] == out["statfs"] == out["fstatfs"] == "EPERM", out
    assert out["set-name"] == "EPERM" and out["get-name"] == "ok", out
    if namespaces_available():
        assert out["nodename"] == "sandbox", out
    else:  # documented: in a container the run sees the container's name, not the machine's
        assert container() is not None and out["nodename"] != "", out
    assert out["nodename"] != os.uname().nodename or container() is not None, out


def test_the_host_name_leaks_without_the_namespaces() -> None:
    out = attack(PROBE, skip=("namespaces", "minimal-root"))
    assert out["nodename"] == os.uname().nodename, out


def test_the_machine_leaks_without_seccomp() -> None:
    out = attack(PROBE, skip=("seccomp",))
    assert out["sysinfo"] == out["statfs"] == out["fstatfs"] == out["set-name"] == "ok", out


INDEX_PATHS = """
seen = []
for fd in range(64):
    try:
        seen.append(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        pass
for link in ("cwd", "root"):
    seen.append(attempt(os.readlink, f"/proc/self/{link}") and os.readlink(f"/proc/self/{link}"))
for where, dirs, files in os.walk("/run"):
    seen += [os.path.join(where, name) for name in dirs + files]
out["seen"] = seen
where = sys._getframe()  # the run's own globals, where its API object lives
while where is not None and not isinstance(where.f_locals.get("glb"), dict):
    where = where.f_back
out["count"] = where.f_locals["glb"]["thermal"].count("rollout")
"""


@pytest.fixture
def marked_index() -> Iterator[Path]:
    """An index in a directory whose name stands for the user's and project's."""
    folder = Path(tempfile.mkdtemp(prefix="alice-project-"))
    folder.chmod(0o755)
    record = NewMemory(uid="m1", date="2026-01-01", recorded_at="2026-01-01", title="rollout", content="canary")
    store.build(folder / "memory.db", [record])
    (folder / "memory.db").chmod(0o644)
    yield folder / "memory.db"
    shutil.rmtree(folder, ignore_errors=True)


def test_the_index_is_seen_at_a_neutral_path(marked_index: Path) -> None:
    out = attack(INDEX_PATHS, api=thermal_spec(str(marked_index)))
    seen = " ".join(str(s) for s in out["seen"])  # type: ignore[union-attr]
    assert out["count"] == 1, out  # the index works where the run sees it
    if namespaces_available():
        assert "alice-project" not in seen and f"{child.NEUTRAL_API}/0/index" in seen, out
    else:  # documented: without a root of its own, the run sees the container's path
        assert container() is not None


def test_the_index_shows_its_host_path_without_the_root(marked_index: Path) -> None:
    out = attack(INDEX_PATHS, api=thermal_spec(str(marked_index)), skip=("minimal-root",))
    assert str(marked_index) in out["seen"], out  # type: ignore[operator]
