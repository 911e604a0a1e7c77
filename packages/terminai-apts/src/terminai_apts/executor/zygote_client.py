"""Host side: the client of one zygote process (the fork server of runs).

Requests are short (spawn a run, end a run) and serialised by a lock; the zygote never
sees a caller's code, setup or results (those travel on the run's own pipes).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading

from terminai_apts.errors import ExecutorError

_CONTROL_TIMEOUT = 15.0
_MAX_MESSAGE = 4096


class ZygoteClient:
    """Client of one zygote process: short spawn/end requests, serialised by a lock."""

    def __init__(self, module: str = "terminai_apts.executor.zygote", args: tuple[str, ...] = ()) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p), "PATH": "/usr/bin:/bin"}
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-P", "-s", "-m", module, str(theirs.fileno()), *args],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=env,
                pass_fds=(theirs.fileno(),),
                cwd="/",
            )
        finally:
            theirs.close()
        ours.settimeout(_CONTROL_TIMEOUT)
        self.control = ours
        self.lock = threading.Lock()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def spawn(self) -> tuple[int, int, int]:
        """A fresh run: its keeper's pid, the command-write and result-read descriptors."""
        with self.lock:
            try:
                self.control.send(json.dumps({"op": "spawn"}).encode())
                message, fds, _, _ = socket.recv_fds(self.control, _MAX_MESSAGE, 2)
                pid = int(json.loads(message)["pid"])
            except (OSError, ValueError, KeyError, TypeError) as exc:
                self.close()
                raise ExecutorError(
                    "the executor zygote is not running", hint="retry; it is restarted automatically"
                ) from exc
            if len(fds) != 2:
                for fd in fds:
                    os.close(fd)
                self.close()
                raise ExecutorError("the executor zygote answered without the run's pipes", hint="retry")
            return pid, fds[0], fds[1]

    def end(self, pid: int, *, ended: bool = False, wait: bool = False) -> int | None:
        """Kill the run's process group; its wait status when asked (None if unknown).
        ``ended``: the run closed its pipe, so its own exit status is worth a short wait;
        ``wait``: return only once it is reaped and its scratch directory removed."""
        with self.lock:
            try:
                request = {"op": "end", "pid": pid, "grace": 0.5 if ended else 0, "report": ended or wait}
                self.control.send(json.dumps(request).encode())
                status = json.loads(self.control.recv(_MAX_MESSAGE))["status"]
            except (OSError, ValueError, KeyError, TypeError):
                self.close()  # the run dies with the zygote (parent-death signal)
                return None
            return status if isinstance(status, int) else None

    def close(self) -> None:
        """End the zygote: on the closed socket it ends its runs and removes their
        directories itself; killed only if it has not exited within a second."""
        self.control.close()
        try:
            self.proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


_SHARED: ZygoteClient | None = None
_SHARED_LOCK = threading.Lock()


def shared() -> ZygoteClient:
    global _SHARED  # noqa: PLW0603 - one warm zygote per host process
    with _SHARED_LOCK:
        if _SHARED is None or not _SHARED.alive():
            _SHARED = ZygoteClient()
        return _SHARED
