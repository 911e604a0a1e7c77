"""Mount what was checked: every host path a session mounts, opened once and handed over as that object.

Preflight resolves and checks each ``SANDBOX_MOUNTS`` source (:mod:`~terminai_sandbox.launch.config`),
but the engine resolves the path again when it creates the container; a session still
running in the same folder can swap a directory for a symbolic link to ``/var/run`` in
between. So right before the engine starts, every source is opened again component by
component without following any link (``O_PATH | O_NOFOLLOW``): a link met now means the
path changed after it was checked, and it is refused. The open object must be a directory
or a regular file (a socket, a FIFO or a device node is refused: a hard link to an engine
socket is a socket). Then:

* **as root**, the object itself is bind-mounted (through ``/proc/self/fd/N``) onto a
  private staging path under ``/run/terminai-sandbox/mounts/SESSION/`` that only root can
  reach, and the engine is given that path: no swap in the project folder can change what
  it mounts;
* **with rootless podman**, the same bind is made inside podman's own user and mount
  namespaces (those of its pause process, which every podman command joins and where the
  user is root): a forked child enters them, walks each source again without following
  links, requires the device and inode held, and binds that object onto a staging path
  under ``$XDG_RUNTIME_DIR/terminai-sandbox/mounts/``. Podman resolves the staging path in
  the namespace holding the bind, so it mounts exactly the checked object;
* **otherwise** (docker as a non-root user: ``mount`` needs privilege in dockerd's mount
  namespace, and a ``/proc/PID/fd/N`` source is refused by the kernel, since runc mounts
  in the container's new mount namespace and a bind's source must lie in the caller's
  own), the engine is given the checked path, a source inside a folder the session writes
  (the working directory, a read-write mount) is refused, and each source is opened again
  right before the engine starts and must still be the same file (device and inode).

The same holds for the files the launcher takes from the project folder:
``.terminai/sandbox.bashrc`` is read no-follow and copied, never mounted, and the
:data:`READ_ONLY` entries of the working directory are mounted read-only over the
read-write workspace so that a session cannot plant what the launcher, git or the host's
tools run later.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Mapping, Sequence

from terminai_apts.records import frozen_record

from terminai_sandbox.errors import ConfigError, SandboxError
from terminai_sandbox.launch import targets
from terminai_sandbox.launch.config import Mount

TYPE_CHECKING = False  # not `from typing import ...`: a launch never imports typing (~3 ms)
if TYPE_CHECKING:
    import ctypes

STAGING_ROOT = "/run/terminai-sandbox/mounts"
NAMESPACE_STAGING = "terminai-sandbox/mounts"  # under rootless podman's runtime directory
CUSTOMIZATION_MAX = 1 << 20  # the files the launcher reads from .terminai/
# What is read from the working directory later, by this launcher or on the host, and so is
# read-only inside the session (a hook written by the agent would run at the user's next
# `git commit`). Sources: this launcher (.terminai/), gitrepository-layout(5) for what git
# reads from its directory (config, hooks, commondir, the config of submodules and
# worktrees), direnv(1) (.envrc), npm's and yarn's project configuration (which name
# programs to run), and the editor folders whose tasks run when the folder is opened
# (VS Code's .vscode/tasks.json, the Dev Containers spec's initializeCommand, run on the host),
# and the start-up files bash(1), dash(1) and zsh(1) read from a home directory (a workspace
# that is one, or a dotfiles repository the user installs from).
# Entries ending in "/" are folders and those ending in "+" files that, when missing, get a
# placeholder the launcher creates (and removes afterwards), mounted read-only in their place:
# empty (which means nothing to their readers), or the text of PLACEHOLDER_TEXT (git refuses
# an empty commondir; "." names the repository's own folder, as a missing one does, so a
# commondir the session writes cannot send the host's git to hooks and config elsewhere).
# The rest are protected when present: the shells read theirs only from a home directory.
READ_ONLY = (
    ".terminai/",
    ".git/hooks/",
    ".git/modules/",
    ".git/worktrees/",
    ".git/config+",
    ".git/config.worktree+",
    ".git/commondir+",
    ".envrc+",
    ".npmrc+",
    ".yarnrc+",
    ".yarnrc.yml+",
    ".vscode/",
    ".devcontainer/",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".inputrc",
    ".zshenv",
    ".zprofile",
    ".zshrc",
    ".zlogin",
)


PLACEHOLDER_TEXT = {".git/commondir": b".\n"}


@frozen_record
class Held:
    """A host path opened without following links: what the engine will mount."""

    path: str
    fd: int
    directory: bool
    device: int
    inode: int


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISLNK, "a symbolic link"),
    ):
        if test(mode):
            return name
    return "not a directory or a regular file"


def hold(path: str, *, what: str) -> Held:
    """Open ``path`` (absolute, already resolved) without following any link; check its type."""
    parts = [part for part in path.split("/") if part]
    fd = os.open("/", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    walked = ""
    try:
        for part in parts:
            walked += "/" + part
            try:
                child = os.open(part, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except OSError as exc:
                raise ConfigError(
                    f"{what} {path} cannot be opened at {walked} ({exc.strerror})",
                    hint="mount a path that exists and that nothing changes while the session starts",
                ) from None
            os.close(fd)
            fd = child
            mode = os.fstat(fd).st_mode
            if stat.S_ISLNK(mode):
                raise ConfigError(
                    f"{what} {path} changed after it was checked: {walked} is now a symbolic link",
                    hint="something is swapping the path while the session starts; mount a folder only you write",
                )
            if walked != path and not stat.S_ISDIR(mode):
                raise ConfigError(f"{what} {path}: {walked} is not a directory")
        info = os.fstat(fd)
        if not (stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)):
            raise ConfigError(
                f"{what} {path} is {_kind(info.st_mode)}: only directories and regular files are mounted",
                hint="a socket (an engine's among them), FIFO or device node would reach the host from the session",
            )
    except BaseException:
        os.close(fd)
        raise
    return Held(path=path, fd=fd, directory=stat.S_ISDIR(info.st_mode), device=info.st_dev, inode=info.st_ino)


def same(held: Held) -> bool:
    """Whether a fresh no-follow walk of ``held.path`` still reaches the object held."""
    try:
        again = hold(held.path, what="the mount source")
    except ConfigError:
        return False
    os.close(again.fd)
    return (again.device, again.inode) == (held.device, held.inode)


def read_customization(project: str, name: str, *, error: type[SandboxError] = ConfigError) -> bytes | None:
    """``.terminai/NAME`` of ``project``, read without following links (None when there is none).

    ``.terminai`` must be a folder and ``NAME`` a regular file of at most 1 MiB, both inside
    the project; anything else raises ``error``, naming the file.
    """
    shown = f"{project}/.terminai/{name}"
    directory = os.open(project, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        try:
            sub = os.open(".terminai", os.O_PATH | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=directory)
        except FileNotFoundError:
            return None
        except OSError:
            raise error(
                f"{project}/.terminai is not a folder of the project (a symbolic link or another file)",
                hint="make .terminai a plain folder inside the project",
            ) from None
        try:
            try:
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=sub)
            except FileNotFoundError:
                return None
            except OSError as exc:
                raise error(
                    f"{shown} cannot be read without following links ({exc.strerror})",
                    hint="make it a regular file inside the project, not a symbolic link",
                ) from None
        finally:
            os.close(sub)
        try:
            info = os.fstat(fd)
            limit = f"it must be a regular file of at most {CUSTOMIZATION_MAX >> 20} MiB"
            if not stat.S_ISREG(info.st_mode):
                raise error(f"{shown} is {_kind(info.st_mode)}, not a regular file: {limit}")
            if info.st_size > CUSTOMIZATION_MAX:
                raise error(f"{shown} is larger than that: {limit}")
            data = os.read(fd, CUSTOMIZATION_MAX + 1)
        finally:
            os.close(fd)
    finally:
        os.close(directory)
    return data[:CUSTOMIZATION_MAX]


def read_bashrc(cwd: str) -> bytes | None:
    """``.terminai/sandbox.bashrc``, read without following links (None when there is none)."""
    return read_customization(cwd, "sandbox.bashrc")


@frozen_record
class Placed:
    """What the engine is given for one mount: the path to mount (``checked``, or its staging
    bind), where, and whether it is read-only."""

    source: str
    target: str
    read_only: bool
    checked: str = ""

    def record(self) -> dict[str, object]:
        return {"source": self.checked or self.source, "target": self.target, "read_only": self.read_only}


@frozen_record
class Overlay:
    """A read-only mount over part of the working directory; ``created``: a placeholder the launcher made."""

    path: str
    created: bool = False


def overlays(cwd: str) -> list[Overlay]:
    """The :data:`READ_ONLY` entries of ``cwd`` to mount read-only, creating missing folder placeholders.

    A symbolic link among them is refused: the read-only mount would land where it leads,
    and the session could replace the link itself.
    """
    found: list[Overlay] = []
    git = os.path.join(cwd, ".git")
    for entry in READ_ONLY:
        name = entry.rstrip("/+")
        path = os.path.join(cwd, name)
        parent = os.path.dirname(path)
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            if name == entry or (parent != cwd and not os.path.isdir(parent)):
                continue  # protected when present; or no .git folder, which the placeholder below covers
            if entry.endswith("/"):
                os.mkdir(path, 0o755)
            else:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
                try:
                    os.write(fd, PLACEHOLDER_TEXT.get(name, b""))
                finally:
                    os.close(fd)
            found.append(Overlay(path=path, created=True))
            continue
        if stat.S_ISLNK(info.st_mode):
            raise ConfigError(
                f"{path} is a symbolic link; the launcher keeps it read-only in the session and cannot follow it",
                hint=f"replace it by the folder or file it points to, or remove it ({name})",
            )
        found.append(Overlay(path=path))
    if not os.path.lexists(git):
        # No repository: an empty read-only .git keeps the session from making one whose
        # config or hooks the host's git would run (git skips an empty .git and looks further up).
        os.mkdir(git, 0o755)
        found.append(Overlay(path=git, created=True))
    return found


def remove_placeholders(placed: list[Overlay]) -> None:
    for overlay in reversed(placed):
        if overlay.created:
            with contextlib.suppress(OSError):  # no longer empty or already gone: never remove what is not ours
                if os.path.isdir(overlay.path):
                    os.rmdir(overlay.path)
                elif _is_placeholder(overlay.path):
                    os.unlink(overlay.path)


def _is_placeholder(path: str) -> bool:
    """Still exactly what the launcher wrote (a file someone filled since is kept)."""
    text = next((t for rel, t in PLACEHOLDER_TEXT.items() if path.endswith("/" + rel)), b"")
    if os.lstat(path).st_size != len(text):
        return False
    with open(path, "rb") as fh:
        return fh.read(len(text) + 1) == text


class Staging:
    """Hold every source, place it where the engine can mount exactly it, release it all at the end."""

    def __init__(
        self, session: str, *, cwd: str, privileged: bool | None = None, namespace: Namespace | None = None
    ) -> None:
        self.session, self.cwd = session, cwd
        self.privileged = os.geteuid() == 0 if privileged is None else privileged
        # Rootless podman's namespaces: sources are bound there instead (never with root).
        self.namespace = None if self.privileged else namespace
        self.held: list[Held] = []
        self.staged: list[str] = []
        self.pending: list[tuple[Held, str]] = []  # binds still to make in ``namespace``
        self.directory: str | None = None
        self.created: list[Overlay] = []

    @property
    def pins(self) -> bool:
        """Whether the engine is given a staging bind of each held object (not its path)."""
        return self.privileged or self.namespace is not None

    def __enter__(self) -> Staging:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _stage_dir(self) -> str:
        if self.directory is None:
            root = STAGING_ROOT if self.namespace is None else os.path.join(self.namespace.runtime, NAMESPACE_STAGING)
            os.makedirs(root, mode=0o700, exist_ok=True)
            os.chmod(root, 0o700)
            sweep(root)
            directory = os.path.join(root, f"{self.session}.{os.getpid()}")
            os.mkdir(directory, 0o700)
            self.directory = directory
        return self.directory

    def place(self, source: str, target: str, *, read_only: bool, writable: tuple[str, ...] = ()) -> Placed:
        """Hold ``source`` and say what the engine should mount at ``target``."""
        held = hold(source, what="the mount source")
        self.held.append(held)
        if self.pins:
            return Placed(source=self._stage(held), target=target, read_only=read_only, checked=source)
        for place in (self.cwd, *writable):
            if place != source and targets.within(source, place):
                raise ConfigError(
                    f"the mount source {source} lies inside {place}, which a session writes: it could be "
                    "swapped between the check and the mount",
                    hint="mount a folder outside the working directory and the read-write mounts, or run as root",
                )
        return Placed(source=source, target=target, read_only=read_only, checked=source)

    def protect(self, path: str) -> Placed:
        """A read-only mount of ``path`` (inside the working directory) over itself."""
        held = hold(path, what="the read-only part of the working directory")
        self.held.append(held)
        if not self.pins:
            return Placed(source=path, target=path, read_only=True, checked=path)
        return Placed(source=self._stage(held), target=path, read_only=True, checked=path)

    def _stage(self, held: Held) -> str:
        stage = os.path.join(self._stage_dir(), str(len(self.held)))
        if held.directory:
            os.mkdir(stage, 0o700)
        else:
            os.close(os.open(stage, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
        if self.namespace is not None:
            # Bound in the namespace by pin() once every source is held: one fork for them all.
            # Removing the staging folder afterwards drops the binds there too (a mount point
            # unlinked in another mount namespace is detached from it).
            self.pending.append((held, stage))
            return stage
        _bind(f"/proc/self/fd/{held.fd}", stage)
        self.staged.append(stage)
        return stage

    def pin(self) -> None:
        """Make the binds queued for rootless podman's namespaces (nothing to do otherwise)."""
        if self.namespace is not None and self.pending:
            pending, self.pending = self.pending, []
            bind_in_namespace(self.namespace, [(held.path, held.device, held.inode, stage) for held, stage in pending])

    def copy_in(self, name: str, data: bytes) -> str:
        """A private, read-only copy of ``data`` the engine can mount (never the project's own file)."""
        if self.pins:
            directory = self._stage_dir()
        else:
            import tempfile  # noqa: PLC0415  (a bashrc without root only)

            directory = self.directory = self.directory or tempfile.mkdtemp(prefix="terminai-session-")
        path = os.path.join(directory, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        os.chmod(path, 0o644)
        return path

    def confirm(self) -> None:
        """Right before the engine starts: without staging, every source must still be the object held."""
        if self.pins:
            return
        for held in self.held:
            if not same(held):
                raise ConfigError(
                    f"the mount source {held.path} changed after it was checked",
                    hint="something is swapping the path while the session starts; mount a folder only you write",
                )

    def close(self) -> None:
        for stage in reversed(self.staged):
            _unbind(stage)
        for held in self.held:
            os.close(held.fd)
        self.held, self.staged = [], []
        remove_placeholders(self.created)
        self.created = []
        if self.directory is not None:
            _remove_tree(self.directory)
            self.directory = None


def _remove_tree(directory: str) -> None:
    """Remove a staging or copy folder: only files and the empty mount points left by unmounting."""
    for name in os.listdir(directory):
        path = os.path.join(directory, name)
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                os.rmdir(path)  # refuses a still-mounted or non-empty folder: never recurse into a mount
            else:
                os.unlink(path)
        except OSError:
            pass
    with contextlib.suppress(OSError):
        os.rmdir(directory)


def sweep(root: str) -> None:
    """Unmount and remove staging folders whose launcher is gone (a launcher killed with SIGKILL)."""
    for name in os.listdir(root):
        pid = name.rpartition(".")[2]
        if not pid.isdigit() or os.path.exists(f"/proc/{pid}"):
            continue
        directory = os.path.join(root, name)
        for entry in os.listdir(directory):
            _unbind(os.path.join(directory, entry))
        _remove_tree(directory)


_MS_BIND, _MS_REC, _MNT_DETACH = 0x1000, 0x4000, 2


_LIBC: list[ctypes.CDLL] = []


def _libc() -> ctypes.CDLL:
    if not _LIBC:
        import ctypes  # noqa: PLC0415  (mounts as root only)

        _LIBC.append(ctypes.CDLL(None, use_errno=True))
    return _LIBC[0]


def _bind(source: str, stage: str) -> None:
    import ctypes  # noqa: PLC0415

    if _libc().mount(source.encode(), stage.encode(), None, _MS_BIND | _MS_REC, None) != 0:
        error = ctypes.get_errno()
        raise ConfigError(
            f"cannot stage the mount source for the engine ({os.strerror(error)})",
            hint="the launcher needs CAP_SYS_ADMIN in the engine's mount namespace to pin mount sources",
        )


def _unbind(stage: str) -> None:
    _libc().umount2(stage.encode(), _MNT_DETACH)  # EINVAL when not mounted: nothing to undo


@frozen_record
class Namespace:
    """Rootless podman's user and mount namespaces, held by its pause process."""

    pid: int
    runtime: str  # podman's runtime directory, where its pause.pid and our staging folders live


_CLONE_NEWNS, _CLONE_NEWUSER = 0x00020000, 0x10000000


def podman_namespace(env: Mapping[str, str]) -> Namespace | None:
    """The namespaces every rootless podman command joins, or None when none can be found.

    Podman keeps them alive with a pause process whose pid it writes to
    ``RUNTIME/libpod/tmp/pause.pid`` (RUNTIME: ``$XDG_RUNTIME_DIR``, else ``/run/user/UID``,
    as podman chooses). Preflight has run podman already, so the process exists. It must be
    this user's and in a user namespace other than ours; anything else (another tmp_dir in
    containers.conf, a pause process gone) leaves the launcher on the unpinned path.
    """
    uid = os.getuid()
    runtime = env.get("XDG_RUNTIME_DIR") or f"/run/user/{uid}"
    try:
        fd = os.open(os.path.join(runtime, "libpod", "tmp", "pause.pid"), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            text = os.read(fd, 32).decode("ascii").strip()
        finally:
            os.close(fd)
        if not text.isdigit():
            return None
        pid = int(text)
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            owner = next((line.split()[1:2] for line in status if line.startswith("Uid:")), [])
        if owner != [str(uid)] or os.readlink(f"/proc/{pid}/ns/user") == os.readlink("/proc/self/ns/user"):
            return None
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return Namespace(pid=pid, runtime=runtime)


def bind_in_namespace(namespace: Namespace, binds: Sequence[tuple[str, int, int, str]]) -> None:
    """Bind each ``(source, device, inode, stage)`` inside ``namespace``, exactly that object.

    A forked child (single-threaded, as entering a user namespace requires) joins the pause
    process's user namespace, where this user is root, then its mount namespace; walks each
    source again without following links; and binds it only if it is still the device and
    inode the launcher checked. Its one message (empty: all bound) comes back through a pipe.
    """
    import ctypes  # noqa: PLC0415  (rootless podman only)

    libc = _libc()
    user = os.open(f"/proc/{namespace.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    try:
        mnt = os.open(f"/proc/{namespace.pid}/ns/mnt", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        os.close(user)
        raise
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover  (runs in the forked child; its result is what the parent tests)
        message = ""
        try:
            os.close(read)
            if libc.setns(user, _CLONE_NEWUSER) != 0 or libc.setns(mnt, _CLONE_NEWNS) != 0:
                message = f"cannot enter rootless podman's namespaces ({os.strerror(ctypes.get_errno())})"
            for source, device, inode, stage in () if message else binds:
                held = hold(source, what="the mount source")
                if (held.device, held.inode) != (device, inode):
                    message = f"the mount source {source} changed after it was checked"
                elif libc.mount(f"/proc/self/fd/{held.fd}".encode(), stage.encode(), None, _MS_BIND | _MS_REC, None):
                    message = f"cannot stage the mount source {source} for podman ({os.strerror(ctypes.get_errno())})"
                if message:
                    break
        except SandboxError as exc:
            message = exc.message
        except BaseException as exc:  # whatever happens, the parent hears of it and refuses
            message = f"cannot stage the mount sources for podman ({type(exc).__name__})"
        os.write(write, (message or "").encode()[:4096])
        os._exit(0)
    os.close(write)
    try:
        chunks = []
        while chunk := os.read(read, 4096):
            chunks.append(chunk)
    finally:
        os.close(read)
        os.waitpid(child, 0)
        os.close(user)
        os.close(mnt)
    message = b"".join(chunks).decode(errors="replace")
    if message:
        raise ConfigError(
            message,
            hint="something is swapping the path while the session starts; mount a folder only you write",
        )


def stage_session(staging: Staging, mounts: Sequence[Mount], cwd: str) -> tuple[list[Placed], str | None]:
    """Every mount of the session as the engine must be given it, and the private copy of the bashrc."""
    writable = tuple(mount.source for mount in mounts if not mount.read_only)
    placed = [staging.place(m.source, m.target, read_only=m.read_only, writable=writable) for m in mounts]
    for overlay in overlays(cwd):
        if overlay.created:
            staging.created.append(overlay)
        placed.append(staging.protect(overlay.path))
    staging.pin()
    data = read_bashrc(cwd)
    return placed, None if data is None else staging.copy_in("sandbox.bashrc", data)
