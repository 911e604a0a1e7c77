"""Host side: the client of one zygote process (the fork server of runs).

Requests are short (spawn a run, end a run) and serialised by a lock; the zygote never
sees a caller's code, setup or results (those travel on the run's own pipes). The answer
to an end that needs no report is read only before the next request: the run is already
killed by then (by the host itself), so no caller waits for the zygote's round trip.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import socket
import subprocess
import threading

from terminai_apts.errors import ExecutorError
from terminai_apts.executor.host import zygote_start

_CONTROL_TIMEOUT = 15.0
_MAX_MESSAGE = 4096


class ZygoteClient:
    """Client of one zygote process: short spawn/end requests, serialised by a lock.

    Answers are read in the order the requests went out. Two are read later than the
    request, off the caller's path: an end that needs no report (the run is already
    killed by the host), and, once a client has asked for a second run (it serves fresh
    runs one after another), one spawn asked ahead, whose run is handed to the next
    caller. Such a run is a keeper waiting for its setup: no caller's data is in it.
    """

    def __init__(self, module: str = zygote_start.ZYGOTE, args: tuple[str, ...] = ()) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            proc = subprocess.Popen(
                zygote_start.command(module, theirs.fileno(), args),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=zygote_start.environment(),
                pass_fds=(theirs.fileno(),),
                cwd="/",
            )
        finally:
            theirs.close()
        self._serve(proc, ours)

    @classmethod
    def adopt(cls, proc: zygote_start.Spawned, control: socket.socket) -> ZygoteClient:
        """The client of a production zygote already started by ``zygote_start.start``."""
        client = cls.__new__(cls)
        client._serve(proc, control)
        return client

    def _serve(self, proc: subprocess.Popen[bytes] | zygote_start.Spawned, ours: socket.socket) -> None:
        self.proc = proc
        ours.settimeout(_CONTROL_TIMEOUT)
        self.control = ours
        self.lock = threading.Lock()
        self.owed: collections.deque[str] = collections.deque()  # ops whose answers are unread
        # Runs asked ahead, answered: pid, the two pipe ends, whether sealed (no API).
        self.stock: list[tuple[int, int, int, bool]] = []
        self.spawned = 0

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _settle(self) -> None:
        """Read every answer still owed (a run asked ahead goes to ``stock``), so the
        next answer read is the next request's."""
        while self.owed:
            if self.owed.popleft() == "spawn":
                self.stock.append(self._run_answer())
            else:
                self.control.recv(_MAX_MESSAGE)

    def _run_answer(self) -> tuple[int, int, int, bool]:
        message, fds, _, _ = socket.recv_fds(self.control, _MAX_MESSAGE, 2)
        try:
            answer = json.loads(message)
            pid, sealed = int(answer["pid"]), answer.get("sealed") is not False
        except (ValueError, KeyError, TypeError, AttributeError):
            for fd in fds:
                os.close(fd)
            raise
        if len(fds) != 2:
            for fd in fds:
                os.close(fd)
            raise _NoPipes
        return pid, fds[0], fds[1], sealed

    def ask_ahead(self, *, sealed_ok: bool = False) -> None:
        """Ask for a run now and read the answer when ``spawn`` is called: a caller sure to
        want one (``terminai-apts exec``) gets it handed over as soon as the zygote is
        ready, not one round trip after asking. Unclaimed, the run ends with the zygote's
        socket. A zygote that cannot be asked is left for ``spawn`` to report."""
        with self.lock:
            if self.stock or "spawn" in self.owed:
                return
            try:
                self.control.send(_SPAWN_SEALED if sealed_ok else _SPAWN)
            except OSError:
                return
            self.owed.append("spawn")

    def spawn(self, *, sealed_ok: bool = False) -> tuple[int, int, int]:
        """A fresh run: its keeper's pid, the command-write and result-read descriptors.
        ``sealed_ok``: the caller injects no API, so a run that entered its root ahead
        suits it (a run whose answer does not say "sealed": false is taken as sealed)."""
        request = _SPAWN_SEALED if sealed_ok else _SPAWN
        with self.lock:
            try:
                self._settle()
                suits = [run for run in self.stock if sealed_ok or not run[3]]
                if not suits:
                    self.control.send(request)
                    self.owed.append("spawn")
                    self._settle()
                    suits = [run for run in self.stock if sealed_ok or not run[3]]
                self.stock.remove(suits[0])
                pid, cmd, res, _ = suits[0]
                run = (pid, cmd, res)
                self.spawned += 1
                if self.spawned > 1:
                    self.control.send(request)  # the next caller's, asked ahead
                    self.owed.append("spawn")
            except _NoPipes as exc:
                self.close()
                raise ExecutorError("the executor zygote answered without the run's pipes", hint="retry") from exc
            except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
                self.close()
                raise ExecutorError(
                    "the executor zygote is not running", hint="retry; it is restarted automatically"
                ) from exc
            return run

    def end(self, pid: int, *, ended: bool = False, wait: bool = False) -> int | None:
        """Kill the run's process group; its wait status when asked (None if unknown).
        ``ended``: the run closed its pipe, so its own exit status is worth a short wait;
        ``wait``: return only once it is reaped and its scratch directory removed.
        Otherwise the caller has already killed the group (``RunChannel.end``), and the
        zygote's answer is read before the next answer that matters."""
        with self.lock:
            report = ended or wait
            try:
                if report:
                    self._settle()
                request = {"op": "end", "pid": pid, "grace": 0.5 if ended else 0, "report": report}
                self.control.send(json.dumps(request).encode())
                if not report:
                    self.owed.append("end")
                    return None
                status = json.loads(self.control.recv(_MAX_MESSAGE))["status"]
            except (OSError, ValueError, KeyError, TypeError):
                self.close()  # the run dies with the zygote (parent-death signal)
                return None
            return status if isinstance(status, int) else None

    def close(self) -> None:
        """End the zygote: on the closed socket it ends its runs (those asked ahead too)
        and removes their directories itself; killed only if it has not exited within a
        second."""
        for _, cmd, res, _ in self.stock:
            for fd in (cmd, res):
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.stock.clear()
        self.control.close()
        try:
            self.proc.wait(timeout=1.0)
        except (subprocess.TimeoutExpired, TimeoutError):
            self.proc.kill()
            self.proc.wait()


_SPAWN = json.dumps({"op": "spawn", "sealed_ok": False}).encode()
_SPAWN_SEALED = json.dumps({"op": "spawn", "sealed_ok": True}).encode()


class _NoPipes(Exception):
    """The zygote answered a spawn without the run's two descriptors."""


_SHARED: ZygoteClient | None = None
_SHARED_LOCK = threading.Lock()


def shared() -> ZygoteClient:
    global _SHARED  # noqa: PLW0603 - one warm zygote per host process
    with _SHARED_LOCK:
        if _SHARED is None or not _SHARED.alive():
            _SHARED = ZygoteClient()
        return _SHARED


def adopt_shared(proc: zygote_start.Spawned, control: socket.socket) -> None:
    """Make a zygote started by ``zygote_start.start`` this process's shared one."""
    global _SHARED  # noqa: PLW0603 - one warm zygote per host process
    with _SHARED_LOCK:
        if _SHARED is not None:
            _SHARED.close()
        _SHARED = ZygoteClient.adopt(proc, control)
