"""Red team: the per-run scratch directory (the only place a run may write).

Nothing a run does in its scratch directory may outlive the run, reach outside it, or
take down the zygote that other callers share.
"""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

import pytest
from terminai_apts.executor import SandboxConfig
from terminai_apts.executor.host import channel

from tests.breach import harness
from tests.breach.support import attack, container, namespaces_available

SCRATCH = SandboxConfig(timeout_seconds=10, security_mode="standard", scratch=True, scratch_file_mb=1)


def _removed(path: Path, within: float = 10.0) -> bool:
    """True once ``path`` is gone (a large tree is removed in the background)."""
    deadline = time.monotonic() + within
    while path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return not path.exists()


DEEP = """
fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
depth = 0
def dig():
    global fd, depth
    while depth < {depth}:  # one level at a time, by descriptor: no PATH_MAX, no chdir
        os.mkdir("d", dir_fd=fd)
        below = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd, depth = below, depth + 1
out["dig"] = attempt(dig)
out["depth"] = depth
out["scratch"] = os.getcwd()
"""


def test_a_tree_deeper_than_the_recursion_limit_is_removed_and_harms_no_one() -> None:
    # shutil.rmtree recurses once per level: 1,500 levels raised RecursionError in the
    # zygote, which died (with every other caller's run) and left the tree in /tmp.
    zygote = harness.zygote()
    other = channel.RunChannel(zygote, harness.DEFAULT, None)
    try:
        assert other.cell("x = 41", 10)["success"]
        out = attack(DEEP.format(depth=1500), config=SCRATCH)
        assert out["dig"] == "ok" and out["depth"] == 1500, out
        assert _removed(Path(str(out["scratch"])).parent), "the scratch tree outlived the run"
        assert zygote.alive(), "the shared zygote died"
        assert other.cell("print(x + 1)", 10)["stdout"] == "42\n", "another caller's run died"
    finally:
        other.end()


UNREADABLE = """
os.mkdir("locked", 0o300)  # write and search, no read: its owner cannot list it
with open("locked/inside.txt", "w") as fh:
    fh.write("x")
os.mkdir("empty", 0)
out["scratch"] = os.getcwd()
"""


def test_directories_left_unreadable_are_removed() -> None:
    # Inside the image the zygote shares the run's uid and has no CAP_DAC_OVERRIDE.
    out = attack(UNREADABLE, config=SCRATCH)
    assert _removed(Path(str(out["scratch"])).parent)


OUT_OF_SCRATCH = """
here = os.getcwd()
parent = os.path.dirname(here)
open("mine.txt", "w").write("x")
os.mkdir("sub")
out["symlink-out"] = attempt(os.symlink, "/etc/passwd", "passwd")
out["hardlink-in"] = attempt(os.link, "/etc/hostname", "hostname")
out["fifo"] = attempt(os.mkfifo, "pipe")
out["mknod-char"] = sc(259, -100, b"null", 0o20666, (1 << 8) | 3)
out["rename-out"] = attempt(os.rename, "mine.txt", "/tmp/{tag}")
out["rename-to-parent"] = attempt(os.rename, "sub", os.path.join(parent, "{tag}"))
out["rename-scratch"] = attempt(os.rename, here, os.path.join(parent, "{tag}-moved"))
out["exchange-with-parent"] = sc(316, -100, here.encode(), -100, parent.encode(), 2)  # RENAME_EXCHANGE
out["rmdir-scratch"] = attempt(os.rmdir, here)
out["mkdir-beside"] = attempt(os.mkdir, os.path.join(parent, "{tag}"))
out["o-tmpfile-out"] = attempt(os.open, "/tmp", os.O_TMPFILE | os.O_WRONLY, 0o600)
out["write-through-proc-cwd"] = attempt(lambda: open("/proc/self/cwd/../{tag}", "w").write("x"))
out["scratch"] = here
"""


def test_nothing_leaves_the_scratch_directory() -> None:
    tag = "rt-" + uuid.uuid4().hex[:8]
    out = attack(OUT_OF_SCRATCH.format(tag=tag), config=SCRATCH)
    scratch = Path(str(out.pop("scratch")))
    assert {k: v for k, v in out.items() if v == "ok"} == {}, out
    assert not list(Path("/tmp").glob(f"{tag}*")) and _removed(scratch.parent)


FILL = """
written = 0
def fill():
    global written
    chunk = b"x" * (1024 * 1024)
    for i in range({files}):
        with open(f"f{{i}}", "wb") as fh:
            fh.write(chunk)  # each file is within the per-file cap
        written += 1
out["fill"] = attempt(fill)
out["mib"] = written
"""


def test_the_scratch_total_is_capped() -> None:
    config = SandboxConfig(
        timeout_seconds=10, security_mode="standard", scratch=True, scratch_file_mb=1, max_memory_mb=32
    )
    if not namespaces_available():
        # Without a mount namespace the total rests on the file system below: in the
        # image, the container's size-limited /tmp. Filling past it must stop there.
        box = container()
        if box is None:
            pytest.xfail("no mount namespace and no container here: the scratch total is not capped")
        out = attack(FILL.format(files=box.tmp_mib + 32), config=config)
        assert "ENOSPC" in str(out["fill"]) and int(str(out["mib"])) <= box.tmp_mib, out
        return
    out = attack(FILL.format(files=96), config=config)
    # 96 files of 1 MiB: three times the run's whole memory budget (the tmpfs's size).
    assert int(str(out["mib"])) <= 32, out


def test_the_scratch_total_is_uncapped_without_its_tmpfs() -> None:
    # The test above can fail: with the namespaces (and so the run's own tmpfs) off.
    config = SandboxConfig(
        timeout_seconds=10, security_mode="standard", scratch=True, scratch_file_mb=1, max_memory_mb=32
    )
    out = attack(FILL.format(files=48), config=config, skip=("namespaces",))
    assert int(str(out["mib"])) > 32, out


def test_no_scratch_run_leaves_its_directory_to_a_concurrent_caller() -> None:
    # Two runs with scratch at once: neither sees the other's directory or files.
    seen: dict[str, dict[str, object]] = {}

    def one(name: str) -> None:
        seen[name] = attack(
            "import time\n"
            f"open('{name}.txt', 'w').write('{name}')\n"
            "time.sleep(0.5)\n"
            "here = os.getcwd()\n"
            "out['mine'] = sorted(os.listdir('.'))\n"
            "out['siblings'] = attempt(os.listdir, os.path.dirname(os.path.dirname(here)))\n",
            config=SCRATCH,
        )

    threads = [threading.Thread(target=one, args=(n,)) for n in ("alpha", "beta")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen["alpha"]["mine"] == ["alpha.txt"] and seen["beta"]["mine"] == ["beta.txt"], seen
    assert seen["alpha"]["siblings"] in {"EACCES", "EPERM"}, seen


DIRECTORY_BOMB = """
import time
end = time.monotonic() + {seconds}
n = 0
while time.monotonic() < end:
    try:
        for _ in range(200):
            os.mkdir(f"d{{n}}")  # each costs the zygote far more to remove than the run to make
            n += 1
    except OSError:
        break  # the run's own tmpfs is full (its inode cap)
out["dirs"] = n
"""


def test_a_slow_clean_up_holds_up_neither_its_caller_nor_anyone_else() -> None:
    # Tens of thousands of directories take the zygote seconds to remove; done in line,
    # that delayed this caller past its deadline and every other caller's spawn (past 15 s,
    # the other caller gives up on the shared zygote and kills it with every run on it).
    config = SandboxConfig(timeout_seconds=10, security_mode="standard", scratch=True)
    harness.breach("print(0)")  # the shared zygote is warm
    started = time.monotonic()
    out = attack(DIRECTORY_BOMB.format(seconds=4), config=config)
    bomb_done = time.monotonic()
    assert int(str(out["dirs"])) > 100, out  # removing them takes about as long as making them
    assert bomb_done - started < 4 + 2.5, "the run's own caller waited for the clean-up"
    other = harness.breach("print(1)")
    assert other.stdout == "1\n" and time.monotonic() - bomb_done < 2.0, "another caller waited for it"
