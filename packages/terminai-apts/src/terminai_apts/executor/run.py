"""Host side: `execute` and `ExecutorSession`. Validates (layers 1-2), asks the warm
zygote for a fresh child (layers 3-7 happen there), records the audit line (layer 8).

The host process never runs user code and never applies limits to itself.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from terminai_apts.errors import ExecutorError, UsageError
from terminai_apts.executor import audit
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

    def to_json(self) -> dict[str, object]:
        return {
            "success": self.success, "stdout": self.stdout, "error": self.error,
            "error_type": self.error_type, "timed_out": self.timed_out,
            "memory_exceeded": self.memory_exceeded,
            "output_truncated": self.output_truncated,
            "duration_ms": round(self.duration_ms, 3),
            "violations": [v.to_json() for v in self.violations],
            "refused_by": self.refused_by, "line": self.line,
        }  # fmt: skip


class _Zygote:
    """Client of one zygote process (requests are serialised by a lock)."""

    def __init__(self) -> None:
        env = {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p), "PATH": "/usr/bin:/bin"}
        self.proc = subprocess.Popen(
            [sys.executable, "-s", "-m", "terminai_apts.executor.zygote"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            close_fds=True,
            cwd="/",
        )
        self.lock = threading.Lock()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def request(self, payload: dict[str, Any], timeout: float) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        with self.lock:
            try:
                self.proc.stdin.write(json.dumps(payload).encode() + b"\n")
                self.proc.stdin.flush()
            except OSError as exc:
                raise ExecutorError(
                    "the executor zygote is not running", hint="retry; it is restarted automatically"
                ) from exc
            ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
            line = self.proc.stdout.readline() if ready else b""
            if not line:
                self.close()
                raise ExecutorError("the executor zygote did not answer", hint="retry; it is restarted automatically")
            reply: dict[str, Any] = json.loads(line)
            return reply

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()


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


def _from_reply(reply: dict[str, Any], started: float) -> ExecutionResult:
    return ExecutionResult(
        success=bool(reply.get("success")),
        stdout=str(reply.get("stdout") or ""),
        error=reply.get("error"),
        error_type=reply.get("error_type"),
        timed_out=bool(reply.get("timed_out")),
        memory_exceeded=bool(reply.get("memory_exceeded")),
        output_truncated=bool(reply.get("output_truncated")),
        duration_ms=(time.perf_counter() - started) * 1000,
        refused_by=reply.get("refused_by"),
        line=int(reply.get("line") or 0),
        session_ended=bool(reply.get("session_ended")),
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


def execute(code: str, config: SandboxConfig | None = None, api: ApiSpec | None = None) -> ExecutionResult:
    """Run ``code`` once in a fresh, hardened child; never raises for user-code failures."""
    config = config or SandboxConfig()
    api_json = _check_api(api)
    started = time.perf_counter()
    result = _refusal(code, config, started)
    if result is None:
        payload = {
            "op": "run",
            "code": code,
            "config": config.to_json(),
            "api": api_json,
            "timeout": config.timeout_seconds,
        }
        try:
            reply = _shared().request(payload, config.timeout_seconds + 10)
        except ExecutorError:
            reply = _shared().request(payload, config.timeout_seconds + 10)
        result = _from_reply(reply, started)
    _audit(code, config, result)
    return result


class ExecutorSession:
    """One long-lived child shared by several cells (state stays in the child).

    Each cell gets the config's wall-clock and CPU limits; memory is the child's total.
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
    ) -> None:
        self.config = config or SandboxConfig()
        self.idle_timeout = idle_timeout
        self.max_lifetime = max_lifetime
        self._zygote = _Zygote()
        self._opened = self._last = time.monotonic()
        self.closed = False
        reply = self._zygote.request({"op": "open", "config": self.config.to_json(), "api": _check_api(api)}, 30)
        if not reply.get("ok"):
            self.close()
            raise ExecutorError("could not start the session child", hint="retry")

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
            reply = self._zygote.request({"op": "cell", "code": code, "timeout": timeout}, timeout + 10)
            result = _from_reply(reply, started)
            if result.session_ended or result.memory_exceeded:
                self.close()
        _audit(code, self.config, result)
        return result

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._zygote.close()

    def __enter__(self) -> ExecutorSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
