"""The run's own root: a minimal tree in a mount namespace of its own (step 6a, "minimal-root").

Landlock governs opening files, not their metadata: without this step a run could
``stat()``, ``access()`` and ``readlink()`` any path of the host, and the host's ``/proc``
mount listed every host process and its owner. With its namespaces, each run therefore
gets a root that holds only what it may read, at the same absolute paths (so nothing in
the layers above changes):

- a small tmpfs, mounted over the run's base directory in a mount namespace of the run's
  own whose mounts are all private (nothing propagates back to the host's mount table);
- read-only, nosuid bind mounts of the read set (``isolation.read_set``: the interpreter,
  its standard library, this package and its one dependency, the shared libraries,
  time-zone data, ``/dev/null``, ``/dev/urandom``), with an empty read-only directory
  over every site-packages inside them, the symbolic links met on the way to them (``/lib -> usr/lib``), a
  fresh ``/proc`` of the run's own PID namespace (only its own pids), then, once the
  caller's setup is known, the injected API's paths and the scratch tmpfs;
- ``pivot_root`` into it and a lazy unmount of the old root, so no path leads back.

Everything that does not depend on the caller (the plan, and the tree up to ``/proc``)
is built while the run waits for one (``RunRoot.build``, in the keeper's sandboxed
process, forked ahead of demand); the caller's path pays for a few mounts and the pivot
(``RunRoot.enter``). A run asked for by a caller without an injected API (no host path
to bind) is "sealed": it enters its root before the caller comes, and the caller's path
pays only for the scratch mount, if any (the detach of the old root waits for an RCU
grace period, about a millisecond on a busy host). Every failure raises ``OSError``: the
run fails closed.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass

from terminai_apts.executor.os_layer import namespaces

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x1, 0x2, 0x4, 0x8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 0x20, 0x1000, 0x4000, 0x40000
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 0x400, 0x800, 0x200000
MNT_DETACH = 0x2
# statvfs flags -> mount flags: inside a user namespace a remount must keep the flags
# the source mount was locked with (mount(2), EPERM), so every bind keeps its own.
_KEPT_FLAGS = (
    (os.ST_NOSUID, MS_NOSUID),
    (os.ST_NODEV, MS_NODEV),
    (os.ST_NOEXEC, MS_NOEXEC),
    (os.ST_NOATIME, MS_NOATIME),
    (os.ST_NODIRATIME, MS_NODIRATIME),
    (os.ST_RELATIME, MS_RELATIME),
)
_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
_MAX_LINKS = 40  # as the kernel's own path walk (ELOOP beyond)
PROC_OPTIONS = (b"hidepid=invisible,subset=pid", None)  # newest kernels first
_EMPTY = b"size=64k,nr_inodes=64,mode=0755"  # over a hidden directory (room for mount points)


@dataclass(frozen=True, slots=True)
class Bind:
    """One read-only bind mount: the source's real path, and the flags to remount it with."""

    path: str
    flags: int
    directory: bool


@dataclass(frozen=True, slots=True)
class Plan:
    """What every run's root holds; computed once, in the zygote."""

    binds: tuple[Bind, ...]
    links: tuple[tuple[str, str], ...]  # (where, target) exactly as on the host
    hidden: tuple[str, ...] = ()  # directories inside a bind covered by an empty one


def plan(paths: Iterable[str], *, hidden: Iterable[str] = ()) -> Plan:
    """The binds and symbolic links that make each of ``paths`` resolve in the run's root
    as it does on the host. Paths that do not exist are left out (the run could not
    reach them anyway); a path inside another bound one on the same file system is
    covered by it, unless a ``hidden`` directory (one that stays out: an empty, read-only
    directory is mounted over it) lies between them."""
    links: dict[str, str] = {}
    real = sorted({_resolve(path, links) for path in paths if os.path.exists(path)})
    hide = tuple(sorted({os.path.realpath(h) for h in hidden if os.path.isdir(h)}))
    binds: list[Bind] = []
    for path in real:
        info = os.stat(path)
        if any(
            _within(path, b.path)
            and os.stat(b.path).st_dev == info.st_dev
            and not any(_within(path, h) and _within(h, b.path) for h in hide)
            for b in binds
        ):
            continue
        binds.append(_bind(path, info))
    return Plan(binds=tuple(binds), links=tuple(sorted(links.items())), hidden=hide)


def _bind(path: str, info: os.stat_result) -> Bind:
    flags = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID
    if not (stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode)):
        flags |= MS_NODEV  # /dev/null and /dev/urandom must stay usable
    mounted = os.statvfs(path).f_flag
    for st_flag, ms_flag in _KEPT_FLAGS:
        if mounted & st_flag:
            flags |= ms_flag
    return Bind(path=path, flags=flags, directory=stat.S_ISDIR(info.st_mode))


def _within(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def _resolve(path: str, links: dict[str, str]) -> str:
    """``os.path.realpath``, recording every symbolic link met on the way (its real
    location and its target as written), so the run's root can hold the same links."""
    todo = [part for part in path.split("/") if part]
    current, hops = "/", 0
    while todo:
        name = todo.pop(0)
        if name in ("", "."):
            continue
        if name == "..":
            current = os.path.dirname(current)
            continue
        candidate = os.path.join(current, name)
        if not os.path.islink(candidate):
            current = candidate
            continue
        hops += 1
        if hops > _MAX_LINKS:
            raise OSError(errno.ELOOP, f"too many symbolic links resolving {path}")
        target = os.readlink(candidate)
        links[candidate] = target
        if target.startswith("/"):
            current = "/"
        todo = [part for part in target.split("/") if part] + todo
    return current


@functools.cache
def _libc() -> ctypes.CDLL:
    # Once per process: a new handle per call cost about 45 us (dlopen and a new
    # function object), and a root takes some fifty mounts.
    return ctypes.CDLL(None, use_errno=True)


def _mount(source: bytes | None, target: str, fstype: bytes | None, flags: int, data: bytes | None = None) -> None:
    if _libc().mount(source, target.encode(), fstype, ctypes.c_ulong(flags), data) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"run root: mounting on {target} failed: {os.strerror(code)}")


class RunRoot:
    """The run's root while it is built at ``top`` (a tmpfs over the run's base
    directory, visible only in the run's own mount namespace), then entered."""

    def __init__(self, top: str) -> None:
        self.top = top.rstrip("/")

    @classmethod
    def build(cls, top: str, layout: Plan) -> RunRoot:
        """Step 6a's root, up to what needs the caller: a new mount namespace with every
        mount private, the tmpfs, the plan's links and binds, and ``/proc``."""
        if _libc().unshare(namespaces.CLONE_NEWNS) != 0:
            raise OSError(ctypes.get_errno(), "run root: unshare(CLONE_NEWNS) failed")
        # Before any other mount: nothing below may propagate to (or from) the host.
        _mount(None, "/", None, MS_REC | MS_PRIVATE)
        _mount(b"tmpfs", top, b"tmpfs", MS_NOSUID | MS_NODEV, b"size=1m,nr_inodes=4096,mode=0755")
        root = cls(top)
        try:
            for where, target in layout.links:
                os.makedirs(root.inside(os.path.dirname(where)), 0o755, exist_ok=True)
                os.symlink(target, root.inside(where))
            # Outer binds first, then the empty directories over the hidden ones, then
            # the binds inside those (a package that lives in a hidden site-packages).
            inner = [b for b in layout.binds if any(_within(b.path, h) for h in layout.hidden)]
            for bind in layout.binds:
                if bind not in inner:
                    root.bind(bind)
            for hidden in layout.hidden:
                if os.path.isdir(root.inside(hidden)):
                    _mount(b"tmpfs", root.inside(hidden), b"tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, _EMPTY)
            for bind in inner:
                root.bind(bind)
            for hidden in layout.hidden:
                if os.path.isdir(root.inside(hidden)):
                    _mount(None, root.inside(hidden), None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
            root._proc()
        except OSError:
            # Leave the base directory as it was (the run may go on without a root of
            # its own, and then makes its scratch directory there).
            _libc().umount2(top.encode(), MNT_DETACH)
            raise
        return root

    def inside(self, path: str) -> str:
        """Where the run's ``path`` is while the root is being built (once entered: itself)."""
        return self.top + "/" + path.lstrip("/")

    def mount_point(self, path: str) -> None:
        """An empty directory at ``path`` to mount on later (after ``enter``, when the
        tree is read-only: a mount writes nothing to the directory under it)."""
        os.makedirs(self.inside(path), 0o755, exist_ok=True)

    def bind(self, bind: Bind, where: str | None = None) -> None:
        target = self.inside(where or bind.path)
        if not os.path.lexists(target):
            os.makedirs(os.path.dirname(target), 0o755, exist_ok=True)
            if bind.directory:
                os.mkdir(target, 0o755)
            else:
                os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o444))
        _mount(bind.path.encode(), target, None, MS_BIND)
        _mount(None, target, None, bind.flags)

    def add_at(self, source: str, inside: str) -> None:
        """Bind the host's ``source`` (resolved) read-only at ``inside`` in the run's root:
        the injected API's files, at a neutral path that says nothing of the host's."""
        real = os.path.realpath(source)
        self.bind(_bind(real, os.stat(real)), inside)

    def scratch(self, path: str, *, size_bytes: int, inodes: int, uid: int, gid: int) -> None:
        """The run's scratch directory: a tmpfs capped in bytes and inodes, at ``path``."""
        target = self.inside(path)
        os.makedirs(target, 0o755, exist_ok=True)
        options = f"size={size_bytes},nr_inodes={inodes},mode=0700,uid={uid},gid={gid}".encode()
        _mount(b"tmpfs", target, b"tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, options)

    def _proc(self) -> None:
        """A ``/proc`` of the run's PID namespace (it sees its own pids only). Where the
        kernel refuses one, ``/proc`` stays an empty directory: that hides more."""
        target = self.inside("/proc")
        os.mkdir(target, 0o555)
        for options in PROC_OPTIONS:
            try:
                _mount(b"proc", target, b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, options)
            except OSError:
                continue
            return

    def enter(self) -> None:
        """Make the tree read-only, pivot into it and detach the old root for good."""
        _mount(None, self.top, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
        machine = os.uname().machine  # what platform.machine() reads, without importing it
        number = _SYS_PIVOT_ROOT.get(machine)
        if number is None:
            raise OSError(errno.ENOSYS, f"run root: pivot_root is not known on {machine}")
        os.chdir(self.top)
        # pivot_root(".", "."): the old root ends up stacked on the new one, where the
        # lazy unmount below takes it (and every mount under it) away from this namespace.
        libc = _libc()
        if libc.syscall(number, b".", b".") != 0:
            raise OSError(ctypes.get_errno(), "run root: pivot_root failed")
        if libc.umount2(b".", MNT_DETACH) != 0:
            raise OSError(ctypes.get_errno(), "run root: detaching the old root failed")
        os.chdir("/")
        self.top = ""  # the run's paths are its own from now on
