"""The warm zygote: pre-imports RestrictedPython, the module proxies of every mode and
the compiled seccomp filters, then forks one keeper per run (as root, the run's sandboxed
process itself, straight into its namespaces). It never runs user code and
never sees a caller's code, setup or results: those travel on pipes between the host and
the run, whose ends it hands to the host (``SCM_RIGHTS``) right after the fork.

Control protocol (one JSON message per SOCK_SEQPACKET datagram on the inherited socket):
``{"op": "spawn", "sealed_ok": bool}`` -> ``{"pid": N, "sealed": bool}`` plus the run's
command-write and result-read descriptors (keepers are forked ahead of demand: one at
start, ``SPARES`` once a second run was asked for; a sealed run has entered its root
already and takes no injected API, so it goes only to a caller that said ``sealed_ok``);
``{"op": "end", "pid": N, "grace": S, "report": bool}`` -> ``{"status": W}`` once the
run's process group is killed (with ``report``: reaped, W its wait status, and its
scratch directory removed; otherwise both follow once the keeper has exited, which its
SIGCHLD announces).
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import select
import signal
import socket
import sys
import time
from typing import Any

from terminai_apts.executor.frames import OUTLIVED_GRACE
from terminai_apts.executor.os_layer import isolation
from terminai_apts.executor.os_layer.limits import become_subreaper
from terminai_apts.executor.policy import MODES, Mode
from terminai_apts.executor.process import child
from terminai_apts.executor.python_layer import module_proxies

MAX_MESSAGE = 4096
MAX_GRACE = 0.5
SWEEP_IDLE = 0.05  # a due sweep waits for this much quiet on the control socket...
SWEEP_EVERY = 1.0  # ...but never longer than this once something has ended
CLEAN_INLINE = 0.1  # seconds of a finished run's clean-up done before answering
MAX_ROUNDS = 64  # sweep rounds: each may orphan the next generation
SPARES = 2  # keepers waiting ahead of demand once a second run was asked for


class Zygote:
    """The fork server. It uses no CPU while idle: it blocks on the control socket and on
    a wake-up pipe that the kernel's SIGCHLD fills (``signal.set_wakeup_fd``), and looks
    for processes a run left re-parented to it only after a child ended."""

    def __init__(
        self,
        control: socket.socket,
        runner: child.Runner,
        hardening: isolation.Hardening,
        proxies: dict[Mode, dict[str, module_proxies.ModuleProxy]],
    ) -> None:
        self.control = control
        self.runner = runner
        self.hardening = hardening
        self.skip = hardening.skip
        self.proxies = proxies
        self.runs: dict[int, str] = {}  # keeper pid -> its base directory
        self.dying: set[int] = set()  # killed keepers not reaped yet (still in ``runs``)
        # Forked keepers no caller has seen, oldest first: pid, the host's two pipe ends,
        # and whether the run is sealed (its root entered ahead: no injected API).
        self.spare: list[tuple[int, int, int, bool]] = []
        self.served = 0
        self.cleaners: set[int] = set()  # processes removing a finished run's directory
        self.due: float | None = None  # since when a sweep is due (None: nothing ended)
        # Runs forked straight into their namespaces (root); None: by a keeper each.
        self.home = isolation.run_namespaces_home(hardening)
        # Whether a run can be sealed at all: it needs a root of its own (so namespaces).
        self.sealable = hardening.root is not None
        # Each run checks, once its parent-death signal is set, that the zygote had not
        # died already (inside a run's PID namespace getppid() cannot tell).
        self.pidfd = _own_pidfd()
        self.wake, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.own_fds = (self.wake, wake_w)
        signal.signal(signal.SIGCHLD, _ignore)
        signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)

    def _forked(self) -> None:
        """In a new child: nothing of the zygote's control or wake-up machinery stays."""
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        self.control.close()
        if self.home is not None:
            self.home.close()
        for fd in (*self.own_fds, *(fd for spare in self.spare for fd in spare[1:3])):
            os.close(fd)

    def _fork(self, *, sealed: bool) -> tuple[int, int, int, bool]:
        """A keeper waiting for a caller: its pid, command-write and result-read ends, and
        whether it is sealed (``child.keeper``)."""
        cmd_r, cmd_w = os.pipe()
        res_r, res_w = os.pipe()
        # The run makes its scratch directory inside, owned by the run's uid.
        base = new_base()
        os.chmod(base, 0o711)  # noqa: S103 - traverse only: the run's uid enters its own subdirectory
        # As root the run is forked straight into its namespaces (no keeper): the zygote
        # enters them for the fork alone and goes back to its own right after.
        home = self.home
        if home is not None and not home.enter_for_child():
            home.close()  # refused here: each run's keeper tries (and reports) instead
            home = self.home = None
            self.sealable = False  # refused to root: no run gets namespaces, nor a root
        pid = -1
        try:
            pid = os.fork()
        finally:
            if home is not None and pid != 0:
                home.back()  # raises: the zygote ends rather than fork from a run's namespaces
        if pid == 0:
            self._forked()
            os.close(cmd_w)
            os.close(res_r)
            os.setpgid(0, 0)
            child.keeper(
                cmd_r,
                res_w,
                self.hardening,
                base,
                self.proxies,
                self.runner,
                entered=home is not None,
                sealed=sealed,
                zygote=self.pidfd,
            )
        with contextlib.suppress(OSError):  # the keeper may already have done it
            os.setpgid(pid, pid)
        os.close(cmd_r)
        os.close(res_w)
        self.runs[pid] = base
        return pid, cmd_w, res_r, sealed

    def spawn(self, *, sealed_ok: bool = False) -> None:
        """Hand the oldest waiting keeper that suits the caller to the host, then fork
        successors ahead of demand. ``sealed_ok``: the caller has no injected API, so a
        sealed run suits it (any run does; a caller with an API needs an unsealed one).
        The first keeper, unsealed (it suits anyone), is forked as the zygote starts
        (``serve``), while its first caller is still starting; none follows the first
        request (a one-shot command or a session never sends another); from the second
        on, ``SPARES`` of the kind asked for wait (back-to-back runs then find one ready
        although a keeper takes longer to prepare than a short run takes)."""
        sealed_ok = sealed_ok and self.sealable  # else every run suits everyone: say so
        suits = [spare for spare in self.spare if sealed_ok or not spare[3]]
        if suits:
            self.spare.remove(suits[0])
        pid, cmd_w, res_r, sealed = suits[0] if suits else self._fork(sealed=sealed_ok)
        try:
            message = json.dumps({"pid": pid, "sealed": sealed}).encode()
            socket.send_fds(self.control, [message], [cmd_w, res_r])
        except OSError:
            # The host went away (a run asked ahead that nobody will take): end the keeper.
            self.end(pid, 0, report=False)
            return
        finally:
            os.close(cmd_w)
            os.close(res_r)
        self.served += 1
        while self.served > 1 and sum(spare[3] == sealed_ok for spare in self.spare) < SPARES:
            self.spare.append(self._fork(sealed=sealed_ok))

    def end(self, pid: int, grace: float, *, report: bool) -> None:
        """Kill the run's whole process group and answer; then reap and clean up.

        ``report``: the caller needs the run's wait status (it died on its own) or its
        scratch gone, so the keeper gets ``grace`` seconds to exit by itself before the
        kill, and the answer waits for the reap and the removal. Otherwise the answer goes
        out right after the SIGKILL (from then on nothing of the run executes) and the
        reaping follows once the keeper has exited (``reap_dying``).

        A keeper is reaped only once its end was asked for: until then its pid, which is
        also the run's process-group id, cannot be reused, so the host may stop, continue
        and kill the group by that id for as long as it has not asked for the end.
        """
        if pid not in self.runs:
            self._answer(None)
            return
        status = None
        deadline = time.monotonic() + (grace if report else 0)
        while status is None and time.monotonic() < deadline:
            done, found = os.waitpid(pid, os.WNOHANG)
            if done:
                status = found
            else:
                time.sleep(0.001)
        outlived_grace = status is None and grace > 0
        if status is None:
            # Not reaped yet, so the group id cannot have been reused by anyone else.
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
            if not report:
                # Reaped when its SIGCHLD comes (``child_event``): the next caller does
                # not wait for the run's namespaces to be torn down.
                self._answer(None)
                self.dying.add(pid)
                # A run that had already ended (its group killed by the host) sent its
                # SIGCHLD before it was dying here: no signal will come again for it.
                self.reap_dying(block=False)
                self._sweep_due()
                return
            try:
                _, status = os.waitpid(pid, 0)
            except ChildProcessError:
                status = 0
        elif not report:
            self._answer(None)
        self.dying.discard(pid)
        self.discard(self.runs.pop(pid))
        if report:
            # A run that closed its pipe and did not exit was killed here: its SIGKILL says
            # nothing of the run (the host must not read it as the memory limit's).
            self._answer(OUTLIVED_GRACE if outlived_grace else status)
        self._sweep_due()

    def reap_dying(self, *, block: bool) -> None:
        """Reap the killed keepers that have exited (all of them with ``block``) and
        remove their directories."""
        for pid in list(self.dying):
            try:
                done = os.waitpid(pid, 0 if block else os.WNOHANG)[0]
            except ChildProcessError:
                done = pid
            if done:
                self.dying.discard(pid)
                self.discard(self.runs.pop(pid))

    def _answer(self, status: int | None) -> None:
        with contextlib.suppress(OSError):  # a host that went away learns nothing more
            self.control.send(json.dumps({"status": status}).encode())

    def discard(self, base: str) -> None:
        """Remove a finished run's directory: in line when that is quick (no scratch, or
        a few files), else in a child process, because a run can leave a tree that takes
        seconds to remove and no caller (its own or the next) may wait for that."""
        if remove_tree(base, budget=CLEAN_INLINE):
            return
        pid = os.fork()
        if pid == 0:
            try:
                self._forked()
                remove_tree(base)
            finally:
                os._exit(0)
        self.cleaners.add(pid)

    def _sweep_due(self) -> None:
        if self.due is None:
            self.due = time.monotonic()

    def child_event(self) -> None:
        """SIGCHLD arrived: reap finished clean-up processes; if any other child ended
        (a stopped or continued keeper also signals), a sweep is due."""
        with contextlib.suppress(OSError):
            while os.read(self.wake, 4096):
                pass
        for pid in list(self.cleaners):
            with contextlib.suppress(ChildProcessError):
                if os.waitpid(pid, os.WNOHANG)[0]:
                    self.cleaners.discard(pid)
        self.reap_dying(block=False)
        try:
            ended = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            ended = None
        if ended is not None:
            self._sweep_due()

    def sweep(self) -> None:
        """Reap and kill whatever a run left re-parented to this subreaper: a process that
        escaped its group and outlived its parents (possible only if seccomp and the
        process limit both failed, and no PID namespace was available). Keepers are left
        to ``end``."""
        self.due = None
        for _ in range(MAX_ROUNDS):  # each round may orphan the next generation
            strays = [pid for pid in _children() if pid not in self.runs]
            left = False
            for pid in strays:
                if pid not in self.cleaners and "orphans" not in self.skip:
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
                try:
                    done = os.waitpid(pid, os.WNOHANG)[0]
                except ChildProcessError:
                    done = pid
                if done:
                    self.cleaners.discard(pid)
                elif pid not in self.cleaners and "orphans" not in self.skip:
                    left = True  # killed, not yet dead: look again
            if not left:
                return
            time.sleep(0.001)

    def serve(self) -> None:
        self.spare.append(self._fork(sealed=False))
        while True:
            # Idle, this blocks with no timeout. A sweep reads all of /proc (about a
            # millisecond): done once the control socket has been quiet for SWEEP_IDLE
            # after a child ended, and at least every SWEEP_EVERY while busy; never on a
            # caller's path.
            timeout = None if self.due is None else SWEEP_IDLE
            ready, _, _ = select.select([self.control.fileno(), self.wake], [], [], timeout)
            if self.wake in ready:
                self.child_event()
            if self.due is not None and (not ready or time.monotonic() - self.due > SWEEP_EVERY):
                self.sweep()
            if self.control.fileno() not in ready:
                continue
            try:
                message = self.control.recv(MAX_MESSAGE)
            except ConnectionResetError:
                # The host closed its end with answers unread (late ones, a run asked
                # ahead): an end of input like any other.
                message = b""
            if not message:
                break
            request: dict[str, Any] = json.loads(message)
            if request.get("op") == "spawn":
                self.spawn(sealed_ok=request.get("sealed_ok") is True)
            elif request.get("op") == "end":
                grace = min(float(request.get("grace", 0)), MAX_GRACE)
                self.end(int(request["pid"]), grace, report=bool(request.get("report")))
            else:
                self.control.send(json.dumps({"error": "unknown op"}).encode())
        for pid in list(self.runs):
            if pid not in self.dying:
                self.end(pid, 0, report=False)
        self.reap_dying(block=True)
        self.sweep()


def new_base() -> str:
    """A new directory for a run, as ``tempfile.mkdtemp`` makes one (an unpredictable
    name, created exclusively, mode 0700, in the first usable of the directories
    ``tempfile.gettempdir`` considers): written out so the zygote does not load tempfile,
    and shutil, bz2 and lzma with it, for this alone (about 5 ms of its start)."""
    named = [d for d in map(os.environ.get, ("TMPDIR", "TEMP", "TMP")) if d]
    failure: OSError = FileNotFoundError("no temporary directory")
    for parent in (*named, "/tmp", "/var/tmp", "/usr/tmp"):
        for _ in range(100):
            path = os.path.join(parent, f"terminai-run-{os.urandom(8).hex()}")
            try:
                os.mkdir(path, 0o700)
            except FileExistsError:
                continue
            except OSError as exc:  # missing, read-only, not ours: the next candidate
                failure = exc
                break
            return path
    raise failure


def _own_pidfd() -> int | None:
    """A pidfd of this process (None where the kernel has none: before Linux 5.3)."""
    try:
        return os.pidfd_open(os.getpid())
    except (OSError, AttributeError):
        return None


def _ignore(signum: int, frame: object) -> None:
    """SIGCHLD's handler: the wake-up pipe carries the news; nothing to do here."""


_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def remove_tree(path: str, budget: float | None = None) -> bool:
    """Remove a finished run's directory and everything in it, best effort; False when
    ``budget`` seconds ran out first (what is left can be removed by a later call).

    Without recursion and by descriptor: a run can build a tree deeper than Python's
    recursion limit (``shutil.rmtree`` then raised ``RecursionError`` and took the
    zygote down) or than ``PATH_MAX``. Symbolic links are never followed; a directory
    the run left unreadable is made readable first (it is ours when we share its uid).
    Called only once the run is dead, so nothing changes the tree meanwhile.
    """
    deadline = None if budget is None else time.monotonic() + budget
    try:
        fd = os.open(path, _DIRECTORY)
    except OSError:
        return True
    entered: list[str] = []  # the path from ``path`` down to where ``fd`` is
    pending: list[list[str]] = []  # for each level above, its subdirectories still to go
    try:
        todo = _unlink_files(fd, deadline)
        while True:
            if deadline is not None and time.monotonic() > deadline:
                raise _OutOfTime
            if todo:
                sub = todo.pop()
                with contextlib.suppress(OSError):
                    os.chmod(sub, 0o700, dir_fd=fd)
                child_fd = os.open(sub, _DIRECTORY, dir_fd=fd)
                os.close(fd)
                fd = child_fd
                entered.append(sub)
                pending.append(todo)
                todo = _unlink_files(fd, deadline)
                continue
            if not entered:
                break
            parent = os.open("..", _DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = parent
            os.rmdir(entered.pop(), dir_fd=fd)
            todo = pending.pop()
    except _OutOfTime:
        return False
    except OSError:
        return True  # what is left cannot be removed by this process; never loop on it
    finally:
        os.close(fd)
    with contextlib.suppress(OSError):
        os.rmdir(path)
    return True


class _OutOfTime(Exception):
    pass


def _unlink_files(fd: int, deadline: float | None) -> list[str]:
    """Unlink every non-directory in ``fd`` (one listing); the names of its subdirectories."""
    subdirectories = []
    with os.scandir(fd) as entries:
        for entry in entries:
            if deadline is not None and time.monotonic() > deadline:
                raise _OutOfTime
            if entry.is_dir(follow_symlinks=False):
                subdirectories.append(entry.name)
            else:
                os.unlink(entry.name, dir_fd=fd)
    return subdirectories


def _children() -> list[int]:
    """Pids whose parent is this process (scanning /proc: the per-task children list
    needs a kernel option that is often off)."""
    me, found = os.getpid(), []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as fh:
                    stat = fh.read()
                if int(stat[stat.rindex(b")") + 2 :].split()[1]) == me:
                    found.append(int(entry.name))
            except (OSError, ValueError):
                continue
    return found


def main(runner: child.Runner = child.run_cell, skip: frozenset[str] = frozenset()) -> None:
    """Serve the control socket whose descriptor number is the first argument."""
    # Start-up only allocates what lives as long as the zygote: the collector's passes
    # would free nothing. It is on again (for the zygote and every run) below.
    gc.disable()
    control = socket.socket(fileno=int(sys.argv[1]))
    become_subreaper()
    # The modules first: the read set names the shared libraries they mapped.
    proxies = {mode: module_proxies.build_proxies(mode) for mode in MODES}
    zygote = Zygote(control, runner, isolation.prepare(skip), proxies)
    # Everything loaded so far is shared with every run: kept out of the collector, whose
    # passes would otherwise write to (and so copy) those pages in each forked process.
    gc.freeze()
    gc.enable()
    zygote.serve()


if __name__ == "__main__":
    main()
