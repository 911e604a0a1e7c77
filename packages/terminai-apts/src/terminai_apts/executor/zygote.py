"""The warm zygote: pre-imports RestrictedPython, the module proxies of every mode and
the compiled seccomp filters, then forks one keeper per run. It never runs user code and
never sees a caller's code, setup or results: those travel on pipes between the host and
the run, whose ends it hands to the host (``SCM_RIGHTS``) right after the fork.

Control protocol (one JSON message per SOCK_SEQPACKET datagram on the inherited socket):
``{"op": "spawn"}`` -> ``{"pid": N}`` plus the run's command-write and result-read
descriptors (keepers are forked one ahead of demand); ``{"op": "end", "pid": N}`` -> ``{"status": S}`` once the run's
process group is killed and reaped and its scratch directory removed.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import sys
import tempfile
from typing import Any

from terminai_apts.executor import child, guards, isolation
from terminai_apts.executor.limits import become_subreaper
from terminai_apts.executor.policy import MODES

MAX_MESSAGE = 4096


class Zygote:
    def __init__(self, control: socket.socket, runner: child.Runner, hardening: isolation.Hardening) -> None:
        self.control = control
        self.runner = runner
        self.hardening = hardening
        self.proxies = {mode: guards.build_proxies(mode) for mode in MODES}
        self.runs: dict[int, str] = {}  # keeper pid -> its base directory
        self.spare: list[tuple[int, int, int]] = []  # forked keepers no caller has seen
        self.exited: dict[int, int] = {}  # keepers reaped before their end()

    def _fork(self) -> tuple[int, int, int]:
        """A keeper waiting for a caller: its pid, command-write and result-read ends."""
        cmd_r, cmd_w = os.pipe()
        res_r, res_w = os.pipe()
        # The run makes its scratch directory inside, owned by the run's uid.
        base = tempfile.mkdtemp(prefix="terminai-run-")
        os.chmod(base, 0o711)
        pid = os.fork()
        if pid == 0:
            self.control.close()
            for fd in (cmd_w, res_r, *(fd for spare in self.spare for fd in spare[1:])):
                os.close(fd)
            os.setpgid(0, 0)
            child.keeper(cmd_r, res_w, self.hardening, base, self.proxies, self.runner)
        with contextlib.suppress(OSError):  # the keeper may already have done it
            os.setpgid(pid, pid)
        os.close(cmd_r)
        os.close(res_w)
        self.runs[pid] = base
        return pid, cmd_w, res_r

    def spawn(self) -> None:
        """Hand a waiting keeper to the host, then fork its successor ahead of demand."""
        pid, cmd_w, res_r = self.spare.pop() if self.spare else self._fork()
        try:
            socket.send_fds(self.control, [json.dumps({"pid": pid}).encode()], [cmd_w, res_r])
        finally:
            os.close(cmd_w)
            os.close(res_r)
        self.spare.append(self._fork())

    def end(self, pid: int) -> int | None:
        """Kill the run's whole process group, reap the keeper, remove its scratch."""
        if pid not in self.runs:
            return None
        status = self.exited.pop(pid, None)
        if status is None:
            # Not reaped yet, so the group id cannot have been reused by anyone else.
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
            try:
                _, status = os.waitpid(pid, 0)
            except ChildProcessError:
                status = 0
        shutil.rmtree(self.runs.pop(pid), ignore_errors=True)
        self.reap_orphans()
        return status

    def reap_orphans(self) -> None:
        """Reap what was re-parented to this subreaper (already killed with its group),
        and remember the status of a keeper that ended by itself until its end()."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid in self.runs:
                self.exited[pid] = status

    def serve(self) -> None:
        while True:
            message = self.control.recv(MAX_MESSAGE)
            if not message:
                break
            request: dict[str, Any] = json.loads(message)
            if request.get("op") == "spawn":
                self.spawn()
            elif request.get("op") == "end":
                status = self.end(int(request["pid"]))
                self.control.send(json.dumps({"status": status}).encode())
            else:
                self.control.send(json.dumps({"error": "unknown op"}).encode())
        for pid in list(self.runs):
            self.end(pid)
        for _, cmd_w, res_r in self.spare:
            os.close(cmd_w)
            os.close(res_r)


def main(runner: child.Runner = child.run_cell, skip: frozenset[str] = frozenset()) -> None:
    """Serve the control socket whose descriptor number is the first argument."""
    control = socket.socket(fileno=int(sys.argv[1]))
    become_subreaper()
    Zygote(control, runner, isolation.prepare(skip)).serve()


if __name__ == "__main__":
    main()
