"""The warm zygote: a helper process that pre-imports RestrictedPython and the module
proxies, then forks one fresh child per run (or per session) and enforces the wall clock
by killing the child's process group. It never runs user code itself.

Protocol (JSON lines on stdin/stdout): {"op": "open", "config", "api"} starts a child;
{"op": "cell", "code", "timeout"} runs a cell in it; {"op": "close"} ends it.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import sys
import time
from typing import Any

from terminai_apts.executor import child, guards
from terminai_apts.executor.policy import MODES


class _Child:
    def __init__(
        self, config: dict[str, Any], api: dict[str, object] | None, proxies: dict[str, guards.ModuleProxy]
    ) -> None:
        cmd_r, cmd_w = os.pipe()
        res_r, res_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.setpgid(0, 0)
            os.close(cmd_w)
            os.close(res_r)
            child.serve(cmd_r, res_w, config, api, proxies)
        # The child may already have done it (or already exited).
        with contextlib.suppress(OSError):
            os.setpgid(pid, pid)
        os.close(cmd_r)
        os.close(res_w)
        self.pid, self.cmd, self.res = pid, cmd_w, res_r

    def kill(self) -> int:
        with contextlib.suppress(OSError):
            os.killpg(self.pid, signal.SIGKILL)
        return self.reap()

    def reap(self) -> int:
        for fd in (self.cmd, self.res):
            with contextlib.suppress(OSError):
                os.close(fd)
        try:
            _, status = os.waitpid(self.pid, 0)
        except ChildProcessError:
            return 0
        return status

    def cell(self, code: str, timeout: float) -> dict[str, Any]:
        try:
            child.write_frame(self.cmd, json.dumps({"code": code}).encode())
        except OSError:
            return self._died(self.reap())
        deadline = time.monotonic() + timeout
        buf = b""
        need = 4
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                return _failure("TimeoutError", f"wall-clock limit of {timeout:g}s exceeded", timed_out=True, dead=True)
            ready, _, _ = select.select([self.res], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.res, 1 << 20)
            if not chunk:
                return self._died(self.reap())
            buf += chunk
            if len(buf) >= 4:
                need = 4 + int.from_bytes(buf[:4], "big")
            if len(buf) >= need:
                result: dict[str, Any] = json.loads(buf[4:need])
                return result

    @staticmethod
    def _died(status: int) -> dict[str, Any]:
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            if sig == signal.SIGXCPU:
                return _failure("TimeoutError", "CPU time limit exceeded", timed_out=True, dead=True)
            if sig == signal.SIGKILL:
                return _failure("MemoryError", "killed (memory limit)", memory=True, dead=True)
            if sig == signal.SIGSYS:
                return _failure("SandboxViolation", "refused by the seccomp filter", dead=True)
            return _failure("ChildCrashed", f"child ended by signal {sig}", dead=True)
        return _failure("ChildCrashed", "child exited unexpectedly", dead=True)


def _failure(
    kind: str, message: str, *, timed_out: bool = False, memory: bool = False, dead: bool = False
) -> dict[str, Any]:
    return {
        "success": False, "stdout": "", "error": message, "error_type": kind,
        "timed_out": timed_out, "memory_exceeded": memory, "output_truncated": False,
        "violations": [], "refused_by": "L6-limits" if (timed_out or memory) else None,
        "line": 0, "session_ended": dead,
    }  # fmt: skip


def main() -> None:
    proxies = {mode: guards.build_proxies(mode) for mode in MODES}
    out = sys.stdout
    current: _Child | None = None
    for raw in sys.stdin:
        request = json.loads(raw)
        op = request.get("op")
        reply: dict[str, Any]
        if op == "open":
            if current is not None:
                current.kill()
            config = request["config"]
            current = _Child(config, request.get("api"), proxies[config["security_mode"]])
            reply = {"ok": True, "pid": current.pid}
        elif op == "run":  # one fresh child for exactly one cell
            config = request["config"]
            once = _Child(config, request.get("api"), proxies[config["security_mode"]])
            reply = once.cell(str(request["code"]), float(request["timeout"]))
            if not reply.get("session_ended"):
                once.kill()
        elif op == "cell":
            if current is None:
                reply = _failure("SessionClosed", "no session is open", dead=True)
            else:
                reply = current.cell(str(request["code"]), float(request["timeout"]))
                if reply.get("session_ended"):
                    current = None
        elif op == "close":
            if current is not None:
                current.kill()
            current = None
            reply = {"ok": True}
        else:
            reply = {"ok": False, "error": f"unknown op {op!r}"}
        out.write(json.dumps(reply) + "\n")
        out.flush()
    if current is not None:
        current.kill()


if __name__ == "__main__":
    main()
