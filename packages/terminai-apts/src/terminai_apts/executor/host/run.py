"""Host side: `execute` and `ExecutorSession`. Validates (layers 1-2), asks the warm
zygote for a fresh run (layers 3-7 happen there), talks to the run directly under its
own deadline and caps, and records the audit line (layer 8).

The host process never runs user code and never applies limits to itself.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from terminai_apts.errors import ExecutorError, UsageError
from terminai_apts.executor.host.channel import NATIVE_CRASH_HINT, NATIVE_CRASH_PREFIX, RunChannel
from terminai_apts.executor.host.zygote_client import ZygoteClient, shared
from terminai_apts.executor.policy import ApiSpec, SandboxConfig
from terminai_apts.executor.python_layer.validate import Violation, validate_code

_SETUP_TIMEOUT = 15.0


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

    @property
    def hint(self) -> str | None:
        """What to do about the failure when the host knows more than the error says (a
        native crash): the `  hint:` line, and in JSON only when there is one. Derived,
        not a field: the result's fields are the toolset's contract."""
        if self.error_type == "ChildCrashed" and (self.error or "").startswith(NATIVE_CRASH_PREFIX):
            return NATIVE_CRASH_HINT
        return None

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
        } | ({"hint": self.hint} if self.hint else {})  # fmt: skip


def _check_api(api: ApiSpec | None) -> dict[str, object] | None:
    if api is None:
        return None
    if not isinstance(api, ApiSpec):
        raise UsageError(
            "api must be an ApiSpec (a factory the child calls), not an object",
            hint="host objects never cross into the sandbox; see ApiSpec",
        )
    return api.to_json()


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


def _left(timeout: float, started: float) -> float:
    """What is left of a cell's ``timeout`` after the host's own work on it since
    ``started`` (validation is the program's time too: a hostile program must not buy
    host CPU outside its deadline)."""
    return timeout - (time.perf_counter() - started)


def _validation_timeout(timeout: float, started: float) -> ExecutionResult:
    spent = time.perf_counter() - started
    return ExecutionResult(
        success=False,
        error=f"wall-clock limit of {timeout:g}s exceeded (validating the program took {spent:.3g}s)",
        error_type="TimeoutError",
        timed_out=True,
        refused_by="L6-limits",
        duration_ms=spent * 1000,
    )


def _audit(code: str, config: SandboxConfig, result: ExecutionResult) -> None:
    if not config.audit_path:
        return
    from terminai_apts.executor.host import audit  # noqa: PLC0415 - only runs that keep a log pay for it

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


def _open_run(
    zygote_factory: Callable[[], ZygoteClient], config: SandboxConfig, api: dict[str, object] | None
) -> RunChannel:
    """Spawn a run, restarting a dead zygote once (no user code has run at this point)."""
    try:
        return RunChannel(zygote_factory(), config, api)
    except ExecutorError:
        return RunChannel(zygote_factory(), config, api)


def _run_fresh(
    code: str,
    config: SandboxConfig,
    api: dict[str, object] | None,
    zygote_factory: Callable[[], ZygoteClient],
    started: float | None = None,
) -> ExecutionResult:
    """Run already-validated ``code`` in a fresh run, always killed and reaped after,
    within what is left of the timeout since ``started``."""
    started = time.perf_counter() if started is None else started
    left = _left(config.timeout_seconds, started)
    if left <= 0:
        return _validation_timeout(config.timeout_seconds, started)
    run = _open_run(zygote_factory, config, api)
    try:
        reply = run.cell(code, left, hold=False, limit=config.timeout_seconds)  # ended right below
    finally:
        run.end()
    return _from_reply(reply, started, run.isolation)


def execute(code: str, config: SandboxConfig | None = None, api: ApiSpec | None = None) -> ExecutionResult:
    """Run ``code`` once in a fresh, hardened run; never raises for user-code failures."""
    config = config or SandboxConfig()
    api_json = _check_api(api)
    started = time.perf_counter()
    result = _refusal(code, config, started) or _run_fresh(code, config, api_json, shared, started)
    _audit(code, config, result)
    return result


class ExecutorSession:
    """One long-lived run shared by several cells (state stays in the run).

    Each cell gets the config's wall-clock limit; CPU and memory are the run's totals.
    Between cells the run is stopped (it gets no CPU), and the host never blocks on it:
    each cell is written without blocking, under that cell's deadline.
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
        _zygote_factory: Callable[[], ZygoteClient] | None = None,
    ) -> None:
        self.config = config or SandboxConfig()
        self.idle_timeout = idle_timeout
        self.max_lifetime = max_lifetime
        self._zygote = (_zygote_factory or ZygoteClient)()
        self.closed = False
        self._run = RunChannel(self._zygote, self.config, _check_api(api))
        if self._run.ready(_SETUP_TIMEOUT, hold=True) is not None:
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
        if result is None and _left(self.config.timeout_seconds, started) <= 0:
            result = _validation_timeout(self.config.timeout_seconds, started)  # the run was not touched
        if result is None:
            remaining = self.max_lifetime - (time.monotonic() - self._opened)
            timeout = max(0.001, min(_left(self.config.timeout_seconds, started), remaining))
            reply = self._run.cell(
                code, timeout, limit=min(self.config.timeout_seconds, timeout + (time.perf_counter() - started))
            )
            result = _from_reply(reply, started, self._run.isolation)
            if result.session_ended or result.memory_exceeded:
                self.close()
            if result.hint == NATIVE_CRASH_HINT:
                # The crash is this cell's error; the session ends with it (a fresh run
                # would also be a fresh CPU budget, bought by crashing): said so here.
                note = "; the session has ended with it and its state is gone (start a new session)"
                result = dataclasses.replace(result, error=f"{result.error}{note}")
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
