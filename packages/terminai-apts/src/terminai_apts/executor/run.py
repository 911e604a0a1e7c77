"""Host side: `execute` and `ExecutorSession`. Validates (layers 1-2), asks the warm
zygote for a fresh run (layers 3-7 happen there), talks to the run directly under its
own deadline and caps, and records the audit line (layer 8).

The host process never runs user code and never applies limits to itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from terminai_apts.errors import ExecutorError, UsageError
from terminai_apts.executor import audit, frames
from terminai_apts.executor.policy import ApiSpec, SandboxConfig
from terminai_apts.executor.validate import Violation, validate_code


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutionResult:
    success: bool
    stdout: str = ""
    error: str | None = None
    error_type: str | None = None
    timed_out: bool = False
    memory_exceeded: bool = False
    output_truncated: bool = False
    duration_ms: float = 0.0
    violations: tuple[Violation, ...] = field(default=())
    refused_by: str | None = None
    line: int = 0
    session_ended: bool = False
    isolation: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {
            "success": self.success, "stdout": self.stdout, "error": self.error,
            "error_type": self.error_type, "timed_out": self.timed_out,
            "memory_exceeded": self.memory_exceeded,
            "output_truncated": self.output_truncated,
            "duration_ms": round(self.duration_ms, 3),
            "violations": [v.to_json() for v in self.violations],
            "refused_by": self.refused_by, "line": self.line,
            "isolation": list(self.isolation),
        }  # fmt: skip


class _Zygote:
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


_CONTROL_TIMEOUT = 15.0
_MAX_MESSAGE = 4096
_READY_LIMIT = 64 * 1024
_SETUP_TIMEOUT = 15.0


_SHARED: _Zygote | None = None
_SHARED_LOCK = threading.Lock()


def _shared() -> _Zygote:
    global _SHARED  # noqa: PLW0603 - one warm zygote per host process
    with _SHARED_LOCK:
        if _SHARED is None or not _SHARED.alive():
            _SHARED = _Zygote()
        return _SHARED


def _check_api(api: ApiSpec | None) -> dict[str, object] | None:
    if api is None:
        return None
    if not isinstance(api, ApiSpec):
        raise UsageError(
            "api must be an ApiSpec (a factory the child calls), not an object",
            hint="host objects never cross into the sandbox; see ApiSpec",
        )
    return api.to_json()


class _Run:
    """One run seen from the host: the child is hostile, so every limit is enforced here.

    The host writes the setup and each cell to the run's command pipe, reads frames from
    its result pipe under its own deadline and size cap, and always has the zygote kill
    and reap the run's process group at the end, whatever the run said.
    """

    def __init__(self, zygote: _Zygote, config: SandboxConfig, api: dict[str, object] | None) -> None:
        self.zygote = zygote
        self.config = config
        self.pid, self.cmd, self.res = zygote.spawn()
        self.ended = False
        self.isolation: tuple[str, ...] = ()
        self.notes: tuple[str, ...] = ()
        self.started = time.monotonic()
        self.seq = 0
        self.setup_failure: dict[str, Any] | None = None
        self.awaiting_ready = True
        self.reader = frames.FrameReader()
        try:
            frames.write_frame(self.cmd, json.dumps({"config": config.to_json(), "api": api}).encode())
        except OSError:
            self.setup_failure = self._failure("ChildCrashed", "the run ended before it read its setup")

    def ready(self, timeout: float) -> dict[str, Any] | None:
        """Read the run's "ready" frame once (a failure result when it is not ready)."""
        if self.awaiting_ready and self.setup_failure is None:
            self.awaiting_ready = False
            reply = self._read(time.monotonic() + timeout, timeout, _READY_LIMIT)
            if "frame" not in reply:
                self.setup_failure = reply
            else:
                try:
                    self.isolation, self.notes = _parse_ready(reply["frame"])
                except frames.FrameError as exc:
                    self.setup_failure = self._failure("ProtocolError", f"the run sent a malformed ready frame: {exc}")
        return self.setup_failure

    def cell(self, code: str, timeout: float) -> dict[str, Any]:
        if self.ended:
            return _failure("SessionClosed", "the run has ended", dead=True)
        if not self.awaiting_ready and select.select([self.res], [], [], 0)[0]:
            # Between cells the run has nothing to say: bytes now would be a forged answer.
            if not os.read(self.res, 1 << 20):
                return self._died()
            return self._failure("ProtocolError", "the run sent data nobody asked for")
        deadline = time.monotonic() + timeout
        try:
            self.seq += 1
            frames.write_frame(self.cmd, json.dumps({"code": code, "seq": self.seq}).encode())
        except OSError:
            return self._failure("ChildCrashed", "the run ended before it read its input")
        # Written before the ready frame is read: setup and code travel in one round trip.
        failure = self.ready(timeout)
        if failure is not None:
            return failure
        reply = self._read(deadline, timeout, 6 * self.config.max_output_bytes + frames.FRAME_OVERHEAD)
        if "frame" not in reply:
            return reply
        try:
            if self.reader.buffer:
                raise frames.FrameError("bytes after the result frame")
            result = frames.parse_result(reply["frame"], self.seq)
        except frames.FrameError as exc:
            return self._failure("ProtocolError", f"the run sent a malformed result: {exc}")
        return _cap(result, self.config.max_output_bytes)

    def _read(self, deadline: float, timeout: float, limit: int) -> dict[str, Any]:
        """One frame from the run by ``deadline`` and within ``limit`` bytes."""
        while True:
            try:
                frame = self.reader.take(limit)
            except frames.FrameError as exc:
                return self._failure("ProtocolError", f"the run sent a malformed frame: {exc}")
            if frame is not None:
                return {"frame": frame}
            left = deadline - time.monotonic()
            if left <= 0:
                self.end()
                return _failure("TimeoutError", f"wall-clock limit of {timeout:g}s exceeded", timed_out=True, dead=True)
            ready, _, _ = select.select([self.res], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.res, 1 << 20)
            if not chunk:
                return self._died()
            self.reader.buffer += chunk

    def _failure(self, kind: str, message: str) -> dict[str, Any]:
        self.end()
        return _failure(kind, message, dead=True)

    def _died(self) -> dict[str, Any]:
        status = self.end(ended=True)
        if status is None:
            return _failure("ChildCrashed", "the executor lost the run", dead=True)
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
        if sig == signal.SIGXCPU:
            return _failure("TimeoutError", "CPU time limit exceeded", timed_out=True, dead=True)
        if sig == signal.SIGKILL:
            # The CPU hard limit kills with SIGKILL too, but never before that much time.
            if time.monotonic() - self.started >= self.config.effective_cpu_seconds:
                return _failure("TimeoutError", "CPU time limit exceeded", timed_out=True, dead=True)
            return _failure("MemoryError", "killed (memory limit)", memory=True, dead=True)
        if sig == signal.SIGSYS:
            return _failure("SandboxViolation", "refused by the seccomp filter", dead=True)
        if sig:
            return _failure("ChildCrashed", f"the run ended by signal {sig}", dead=True)
        return _failure("ChildCrashed", "the run exited unexpectedly", dead=True)

    def end(self, *, ended: bool = False) -> int | None:
        """Kill and reap the run (idempotent); the keeper's wait status when known."""
        if self.ended:
            return None
        self.ended = True
        for fd in (self.cmd, self.res):
            with contextlib.suppress(OSError):
                os.close(fd)
        return self.zygote.end(self.pid, ended=ended, wait=self.config.scratch)


def _parse_ready(payload: bytes) -> tuple[tuple[str, ...], tuple[str, ...]]:
    try:
        data = json.loads(payload)
    except ValueError:
        raise frames.FrameError("not JSON") from None
    if not isinstance(data, dict) or set(data) != {"isolation", "notes"}:
        raise frames.FrameError("unexpected fields")
    layers, notes = data["isolation"], data["notes"]
    if not all(isinstance(v, list) and all(isinstance(i, str) for i in v) for v in (layers, notes)):
        raise frames.FrameError("unexpected types")
    return tuple(layers), tuple(notes)


def _cap(result: dict[str, Any], max_output: int) -> dict[str, Any]:
    """The output cap and error size, enforced by the host whatever the run claims."""
    out = result["stdout"].encode("utf-8", "surrogatepass")
    if len(out) > max_output:
        result["stdout"] = out[:max_output].decode("utf-8", "ignore")
        result["output_truncated"] = True
    if result["error"] is not None:
        result["error"] = result["error"][: frames.MAX_ERROR_CHARS]
    result.update(timed_out=False, session_ended=False)
    return result


def _failure(
    kind: str, message: str, *, timed_out: bool = False, memory: bool = False, dead: bool = False
) -> dict[str, Any]:
    return {
        "success": False, "stdout": "", "error": message, "error_type": kind,
        "timed_out": timed_out, "memory_exceeded": memory, "output_truncated": False,
        "violations": [], "refused_by": "L6-limits" if (timed_out or memory) else None,
        "line": 0, "session_ended": dead,
    }  # fmt: skip


def _from_reply(reply: dict[str, Any], started: float, isolation: tuple[str, ...]) -> ExecutionResult:
    return ExecutionResult(
        success=bool(reply["success"]),
        stdout=reply["stdout"],
        error=reply["error"],
        error_type=reply["error_type"],
        timed_out=bool(reply["timed_out"]),
        memory_exceeded=bool(reply["memory_exceeded"]),
        output_truncated=bool(reply["output_truncated"]),
        duration_ms=(time.perf_counter() - started) * 1000,
        refused_by=reply["refused_by"],
        line=int(reply["line"]),
        session_ended=bool(reply["session_ended"]),
        isolation=isolation,
    )


def _refusal(code: str, config: SandboxConfig, started: float) -> ExecutionResult | None:
    report = validate_code(code, mode=config.security_mode)
    if report.ok:
        return None
    first = report.violations[0]
    return ExecutionResult(
        success=False,
        error=f"refused: {report.summary()}",
        error_type="ValidationError",
        violations=report.violations,
        refused_by=first.rule.split("-")[0] + "-validate",
        line=first.line,
        duration_ms=(time.perf_counter() - started) * 1000,
    )


def _audit(code: str, config: SandboxConfig, result: ExecutionResult) -> None:
    if not config.audit_path:
        return
    limits = tuple(
        name
        for name, hit in (
            ("time", result.timed_out),
            ("memory", result.memory_exceeded),
            ("output", result.output_truncated),
        )
        if hit
    )
    verdict = "ok" if result.success else ("refused" if result.refused_by else "failed")
    audit.record(
        config.audit_path,
        audit.AuditEntry(
            caller=config.caller_id,
            code=code,
            mode=config.security_mode,
            verdict=verdict,
            guard=result.refused_by,
            limits_hit=limits,
            duration_ms=result.duration_ms,
        ),
    )


def _open_run(zygote_factory: Callable[[], _Zygote], config: SandboxConfig, api: dict[str, object] | None) -> _Run:
    """Spawn a run, restarting a dead zygote once (no user code has run at this point)."""
    try:
        return _Run(zygote_factory(), config, api)
    except ExecutorError:
        return _Run(zygote_factory(), config, api)


def _run_fresh(
    code: str, config: SandboxConfig, api: dict[str, object] | None, zygote_factory: Callable[[], _Zygote]
) -> ExecutionResult:
    """Run already-validated ``code`` in a fresh run, always killed and reaped after."""
    started = time.perf_counter()
    run = _open_run(zygote_factory, config, api)
    try:
        reply = run.cell(code, config.timeout_seconds)
    finally:
        run.end()
    return _from_reply(reply, started, run.isolation)


def execute(code: str, config: SandboxConfig | None = None, api: ApiSpec | None = None) -> ExecutionResult:
    """Run ``code`` once in a fresh, hardened run; never raises for user-code failures."""
    config = config or SandboxConfig()
    api_json = _check_api(api)
    result = _refusal(code, config, time.perf_counter()) or _run_fresh(code, config, api_json, _shared)
    _audit(code, config, result)
    return result


class ExecutorSession:
    """One long-lived run shared by several cells (state stays in the run).

    Each cell gets the config's wall-clock limit; CPU and memory are the run's totals.
    A cell that breaks a limit ends the session; so do ``idle_timeout`` seconds without a
    cell and ``max_lifetime`` seconds after opening (the next ``run`` then reports it).
    """

    def __init__(
        self,
        config: SandboxConfig | None = None,
        api: ApiSpec | None = None,
        *,
        idle_timeout: float = 600.0,
        max_lifetime: float = 3600.0,
        _zygote_factory: Callable[[], _Zygote] | None = None,
    ) -> None:
        self.config = config or SandboxConfig()
        self.idle_timeout = idle_timeout
        self.max_lifetime = max_lifetime
        self._zygote = (_zygote_factory or _Zygote)()
        self.closed = False
        self._run = _Run(self._zygote, self.config, _check_api(api))
        if self._run.ready(_SETUP_TIMEOUT) is not None:
            self.close()
            raise ExecutorError("could not start the session's run", hint="retry")
        # The clocks start once the run is ready: a slow start must not eat the session.
        self._opened = self._last = time.monotonic()

    @property
    def isolation(self) -> tuple[str, ...]:
        return self._run.isolation

    def run(self, code: str) -> ExecutionResult:
        started = time.perf_counter()
        now = time.monotonic()
        if not self.closed and (now - self._last > self.idle_timeout or now - self._opened > self.max_lifetime):
            self.close()
        if self.closed:
            return ExecutionResult(
                success=False, error="the session has ended", error_type="SessionClosed", session_ended=True
            )
        self._last = now
        result = _refusal(code, self.config, started)
        if result is None:
            remaining = self.max_lifetime - (now - self._opened)
            timeout = max(0.001, min(self.config.timeout_seconds, remaining))
            result = _from_reply(self._run.cell(code, timeout), started, self._run.isolation)
            if result.session_ended or result.memory_exceeded:
                self.close()
        _audit(code, self.config, result)
        return result

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._run.end()
            self._zygote.close()

    def __enter__(self) -> ExecutorSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
