"""No writes anywhere but the run's scratch directory (removed after the run); no reads
beyond what a run needs."""

from __future__ import annotations

import functools
import os
import shutil
import site
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from terminai_apts.executor import SandboxConfig
from terminai_apts.executor.os_layer import isolation

from tests.breach.harness import DEFAULT
from tests.breach.support import EVERYTHING_OFF, attack, container, landlock_abi, namespaces_available

WRITES = """
import stat
name = "breach-{tag}"
targets = ["/tmp", "/dev/shm", "/var/tmp", os.path.expanduser("~") if "HOME" in os.environ else "/root", "/", "{here}"]
for base in targets:
    p = os.path.join(base, name)
    out["create:" + base] = attempt(lambda: os.close(os.open(p, os.O_WRONLY | os.O_CREAT, 0o666)))
    out["mkdir:" + base] = attempt(os.mkdir, p + ".d")
    out["symlink:" + base] = attempt(os.symlink, "/etc/passwd", p + ".ln")
    out["fifo:" + base] = attempt(os.mkfifo, p + ".fifo")
out["append-existing"] = attempt(lambda: open("{victim}", "a").write("owned"))
out["truncate-existing"] = attempt(os.truncate, "{victim}", 0)
out["rename-existing"] = attempt(os.rename, "{victim}", "{victim}.moved")
out["chmod-existing"] = attempt(os.chmod, "{victim}", 0o777)
out["unlink-existing"] = attempt(os.unlink, "{victim}")
out["link-existing"] = attempt(os.link, "{victim}", "{victim}.hard")
out["posix-shm"] = attempt(lambda: os.close(os.open("/dev/shm/breach-{tag}-shm", os.O_RDWR | os.O_CREAT, 0o666)))
"""


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """A directory every uid may enter (pytest's own sits under a 0700 parent): file
    permissions must not be what stops these attacks."""
    path = Path(tempfile.mkdtemp(prefix="terminai-breach-"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _victim(tmp_path: Path) -> Path:
    # World-writable, in a world-writable directory: only the sandbox stands in the way.
    victim = tmp_path / "victim.txt"
    victim.write_text("intact")
    victim.chmod(0o666)
    return victim


def _leftovers(tag: str, here: Path) -> list[str]:
    found = []
    for base in ("/tmp", "/dev/shm", "/var/tmp", "/root", "/", str(here)):
        found += [str(p) for p in Path(base).glob(f"breach-{tag}*")] if os.access(base, os.R_OK) else []
    return found


def test_no_write_of_any_kind_outside_scratch(tmp_path: Path) -> None:
    victim, tag = _victim(tmp_path), uuid.uuid4().hex[:8]
    out = attack(WRITES.format(tag=tag, here=tmp_path, victim=victim))
    assert {k: v for k, v in out.items() if v == "ok"} == {}, out
    assert victim.read_text() == "intact" and victim.stat().st_mode & 0o777 == 0o666
    assert _leftovers(tag, tmp_path) == []


def test_the_writes_land_when_every_layer_is_off(tmp_path: Path) -> None:
    victim, tag = _victim(tmp_path), uuid.uuid4().hex[:8]
    try:
        out = attack(WRITES.format(tag=tag, here=tmp_path, victim=victim), skip=EVERYTHING_OFF)
        assert out["create:/tmp"] == "ok" and out["append-existing"] == "ok", out
    finally:
        for path in _leftovers(tag, tmp_path):
            p = Path(path)
            p.rmdir() if p.is_dir() and not p.is_symlink() else p.unlink()


def test_each_layer_alone_refuses_the_write(tmp_path: Path) -> None:
    victim, tag = _victim(tmp_path), uuid.uuid4().hex[:8]
    for only in ("seccomp", "landlock"):
        skip = tuple(s for s in EVERYTHING_OFF if s not in {only, "privileges"})
        out = attack(WRITES.format(tag=tag, here=tmp_path, victim=victim), skip=skip)
        if only == "landlock":
            if not landlock_abi():
                continue  # no Landlock on this kernel: the write guarantee rests on seccomp alone
            # Landlock does not govern metadata (chmod, utime): that rests on seccomp.
            out.pop("chmod-existing")
        assert {k: v for k, v in out.items() if v == "ok"} == {}, (only, out)
    assert victim.read_text() == "intact"
    assert _leftovers(tag, tmp_path) == []


SCRATCH = """
here = os.getcwd()
out["cwd"] = here
with open("notes.txt", "w") as fh:
    fh.write("scratch works")
os.mkdir("sub")
os.rename("notes.txt", "sub/notes.txt")
out["read-back"] = open("sub/notes.txt").read()
out["escape"] = attempt(lambda: open(os.path.join(here, "..", "..", "escaped-{tag}"), "w").write("x"))
out["big"] = attempt(lambda: open("big.bin", "wb").write(b"x" * (3 * 1024 * 1024)))
"""


def test_scratch_is_private_confined_capped_and_removed() -> None:
    tag = uuid.uuid4().hex[:8]
    config = SandboxConfig(timeout_seconds=10, security_mode="standard", scratch=True, scratch_file_mb=2)
    out = attack(SCRATCH.format(tag=tag), config=config)
    assert out["read-back"] == "scratch works"
    assert out["escape"] in {"EACCES", "EPERM", "EROFS"}  # EROFS: the run's own root is read-only
    assert out["big"] == "EFBIG"  # the per-file cap (RLIMIT_FSIZE)
    scratch = Path(str(out["cwd"]))
    assert not scratch.exists() and not scratch.parent.exists()  # removed with the run
    assert not list(Path("/tmp").glob(f"escaped-{tag}"))


READS = """
for path in ["/etc/passwd", "/etc/shadow", "/proc/1/environ", "/proc/1/cmdline", "/proc/self/environ",
             "/proc/self/status", "/root/.bashrc", "/home", "{secret}", "/var/run/docker.sock"]:
    out[path] = attempt(lambda: os.listdir(path) if os.path.isdir(path) else open(path, "rb").read(1))
out["library"] = attempt(lambda: open(os.__file__).read(10))  # the stdlib stays readable
"""


def test_reads_are_confined_to_what_a_run_needs(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret")
    secret.chmod(0o644)
    out = attack(READS.format(secret=secret))
    assert out.pop("library") == "ok"  # in the read set
    if landlock_abi():
        assert {k: v for k, v in out.items() if v == "ok"} == {}, out
    else:  # documented: without Landlock, reads rest on file permissions and the container
        assert out["/etc/shadow"] != "ok" and out["/proc/1/environ"] != "ok", out


def test_the_reads_succeed_when_landlock_is_off(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret")
    secret.chmod(0o644)
    # The run's own root holds neither file: off too.
    out = attack(READS.format(secret=secret), skip=("landlock", "minimal-root"), config=DEFAULT)
    assert out["/etc/passwd"] == "ok" and out[str(secret)] == "ok", out


FOREIGN = """
for path in {targets!r}:
    out[path] = attempt(lambda: open(path, "rb").read(1))
out["stdlib"] = attempt(lambda: open(os.__file__, "rb").read(1))
"""


def _foreign_files() -> list[str]:
    """Files of other packages on this machine: in every site-packages the interpreter
    knows (the base interpreter's included, hidden inside its stdlib), Debian's
    dist-packages and a file beside the shared libraries that is not one."""
    keys: list[str] = []
    modules: list[str] = []
    roots = [*isolation.read_set().hidden, *site.getsitepackages(), "/usr/lib/python3/dist-packages", "/usr/local/lib"]
    for root in roots:
        for where, _, files in os.walk(root):
            if _ours(where):
                continue
            keys += [os.path.join(where, f) for f in files if f.endswith((".pem", ".key"))]
            modules += [os.path.join(where, f) for f in files if f == "__init__.py"][:1]
    found = keys[:20] + modules[:20] + [pytest.__file__ or "", "/usr/lib/os-release"]
    return sorted({f for f in found if os.path.isfile(f) and os.access(f, os.R_OK) and not _ours(f)})


@functools.cache
def _read_set() -> isolation.ReadSet:
    return isolation.read_set()


def _ours(path: str) -> bool:
    """In the read set: this package and what it requires are the run's to read."""
    reads = _read_set()
    real = os.path.realpath(path)

    def within(p: str, parent: str) -> bool:
        return p == parent or p.startswith(parent.rstrip("/") + "/")

    hidden = [h for h in reads.hidden if within(real, h)]
    return any(within(real, p) for p in reads.paths if not hidden or any(within(p, h) for h in hidden))


@pytest.mark.parametrize(
    "skip", [(), ("namespaces", "minimal-root", "privileges")], ids=["all-layers", "landlock-without-root-or-uid"]
)
def test_no_other_package_is_readable(skip: tuple[str, ...]) -> None:
    targets = _foreign_files()
    assert len(targets) >= 2, targets  # the test has something to prove
    out = attack(FOREIGN.format(targets=targets), skip=skip)
    assert out.pop("stdlib") == "ok"
    if landlock_abi() or (namespaces_available() and not skip):
        assert {k: v for k, v in out.items() if v == "ok"} == {}, out
    else:  # documented: without Landlock and namespaces, reads rest on file permissions
        assert container() is not None


def test_other_packages_are_readable_without_landlock_and_the_root() -> None:
    targets = _foreign_files()
    out = attack(FOREIGN.format(targets=targets), skip=("landlock", "minimal-root", "namespaces", "privileges"))
    assert all(v == "ok" for v in out.values()), out
