"""The plan of a run's own root (pure: read from a real file system, nothing mounted)."""

from __future__ import annotations

import os
import re
from importlib import metadata
from pathlib import Path

import pytest
from terminai_apts.executor.os_layer import isolation, rootfs


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """``usr/lib/python`` with ``lib -> usr/lib`` and ``zone -> /abs/.../usr/share/UTC``."""
    (tmp_path / "usr/lib/python").mkdir(parents=True)
    (tmp_path / "usr/share").mkdir(parents=True)
    (tmp_path / "usr/share/UTC").write_text("tz")
    (tmp_path / "lib").symlink_to("usr/lib")
    (tmp_path / "zone").symlink_to(tmp_path / "usr/share/UTC")
    return tmp_path


def test_links_on_the_way_are_kept_as_written_and_binds_are_real_paths(tree: Path) -> None:
    plan = rootfs.plan((str(tree / "lib/python"), str(tree / "zone")))
    assert dict(plan.links) == {str(tree / "lib"): "usr/lib", str(tree / "zone"): str(tree / "usr/share/UTC")}
    assert [(b.path, b.directory) for b in plan.binds] == [
        (str(tree / "usr/lib/python"), True),
        (str(tree / "usr/share/UTC"), False),
    ]


def test_a_path_inside_a_bound_directory_is_covered_and_a_missing_one_left_out(tree: Path) -> None:
    plan = rootfs.plan((str(tree / "usr/lib"), str(tree / "lib/python"), str(tree / "absent")))
    assert [b.path for b in plan.binds] == [str(tree / "usr/lib")]


def test_binds_are_read_only_nosuid_and_nodev_except_for_devices(tree: Path) -> None:
    plan = rootfs.plan((str(tree / "usr/lib"), "/dev/null"))
    flags = {b.path: b.flags for b in plan.binds}
    required = rootfs.MS_BIND | rootfs.MS_REMOUNT | rootfs.MS_RDONLY | rootfs.MS_NOSUID
    assert all(f & required == required for f in flags.values())
    assert flags[str(tree / "usr/lib")] & rootfs.MS_NODEV
    assert not flags["/dev/null"] & rootfs.MS_NODEV  # /dev/null must stay usable


def test_a_flag_the_source_mount_has_is_kept(tree: Path) -> None:
    # Inside a user namespace a remount must keep the source's locked flags (EPERM otherwise).
    mounted = os.statvfs(tree).f_flag
    bind = rootfs.plan((str(tree / "usr/lib"),)).binds[0]
    for st_flag, ms_flag in ((os.ST_NOEXEC, rootfs.MS_NOEXEC), (os.ST_RELATIME, rootfs.MS_RELATIME)):
        assert bool(bind.flags & ms_flag) == bool(mounted & st_flag)


def test_a_symbolic_link_loop_is_left_out_like_a_missing_path(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    (tmp_path / "c").mkdir()
    plan = rootfs.plan((str(tmp_path / "c"), str(tmp_path / "a/x")))
    assert [b.path for b in plan.binds] == [str(tmp_path / "c")] and plan.links == ()


def test_a_root_that_cannot_be_built_is_reported_and_leaves_the_base_as_it_was(tmp_path: Path) -> None:
    # Where mounts are refused, the run goes on without a root of its own and says so;
    # a half-built tree does not stay over its base directory. Forked: the child's
    # mount namespace is its own.
    broken = rootfs.Plan(binds=(rootfs.Bind(path=str(tmp_path / "gone"), flags=0, directory=True),), links=())
    hardening = isolation.Hardening(filters={}, landlock_abi=0, read_paths=(), root=broken)
    base = tmp_path / "base"
    base.mkdir()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            report = isolation.Isolation(namespaces=True)
            built = isolation.build_root(hardening, report, str(base))
            with open("/proc/self/mountinfo") as fh:
                mounted = any(line.split()[4] == str(base) for line in fh)
            noted = any(note.startswith("no root of its own (") for note in report.notes)
            code = 0 if built is None and noted and not mounted and "minimal-root" not in report.layers() else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_hidden_directory_keeps_a_bind_inside_it_and_nothing_else(tmp_path: Path) -> None:
    # The base interpreter's site-packages lies inside its stdlib: it is covered by an
    # empty directory, and a package of ours that lives there is bound on top.
    stdlib = tmp_path / "lib/python3"
    (stdlib / "site-packages/ours").mkdir(parents=True)
    (stdlib / "site-packages/theirs").mkdir()
    plan = rootfs.plan((str(stdlib), str(stdlib / "site-packages/ours")), hidden=(str(stdlib / "site-packages"),))
    assert [b.path for b in plan.binds] == [str(stdlib), str(stdlib / "site-packages/ours")]
    assert plan.hidden == (str(stdlib / "site-packages"),)


def test_the_landlock_read_set_leaves_the_hidden_directory_out(tmp_path: Path) -> None:
    stdlib = tmp_path / "lib/python3"
    (stdlib / "site-packages").mkdir(parents=True)
    (stdlib / "os.py").write_text("")
    (stdlib / "lib-dynload").mkdir()
    reads = isolation.ReadSet(paths=(str(stdlib),), hidden=(str(stdlib / "site-packages"),))
    assert reads.expanded() == (str(stdlib / "lib-dynload"), str(stdlib / "os.py"))


def test_the_read_set_holds_no_site_packages() -> None:
    reads = isolation.read_set()
    assert not [p for p in reads.paths if os.path.basename(p) in ("site-packages", "dist-packages")]
    assert not [p for p in reads.expanded() if os.path.basename(p) in ("site-packages", "dist-packages")]


_NOT_MODULES = (".dist-info", ".data")


def test_the_read_set_names_every_package_this_one_requires() -> None:
    # The distribution's metadata (what pip installs next to it) against the executor's list.
    requires = metadata.requires("terminai-apts") or []
    names = {re.match(r"[A-Za-z0-9._-]+", r).group(0) for r in requires if "extra ==" not in r}  # type: ignore[union-attr]
    tops = set()
    for name in names:
        files = metadata.distribution(name).files or []
        tops |= {
            f.parts[0].removesuffix(".py")
            for f in files
            if f.parts and not f.parts[0].endswith((".dist-info", ".data"))
        }
    tops -= {"..", "__pycache__"}
    assert tops == set(isolation.DEPENDENCIES)
    paths = isolation.read_set().paths
    assert all(any(p.endswith("/" + top) for p in paths) for top in tops), paths
