"""Host side: one run as the host sees it, over the pipes the zygote passed back.

The run is hostile: frames are capped before they are read and checked against their
schema, the deadline and the output cap are the host's, and the run's process group is
always killed and reaped at the end, whatever the run said.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import time
from typing import Any

from terminai_apts.executor import frames
from terminai_apts.executor.host.zygote_client import ZygoteClient
from terminai_apts.executor.policy import SandboxConfig

_READY_LIMIT = 64 * 1024
# Plain code crashes the interpreter by overflowing the C stack: CPython 3.11 to 3.13
# recurse in C without a depth check through `next()` of nested map/filter/zip/itertools
# objects and `hash()` of nested tuples (a 300,000-deep map chain, a 1,000,000-deep tuple).
# The run cannot catch it (the signal ends it); the host names the likely cause.
NATIVE_CRASH_PREFIX = "native stack overflow"
NATIVE_CRASH = (
    NATIVE_CRASH_PREFIX + ": the run crashed with signal {sig} ({name}), most likely from"
    " nesting too deep (iterators wrapping iterators, such as map/filter/zip/itertools"
    " thousands of levels deep, or a tuple nested in itself)"
)
NATIVE_CRASH_HINT = (
    "flatten the nesting: build a list at each step (xs = list(map(f, xs))) instead of"
    " wrapping the previous iterator, and keep nested data under a few thousand levels"
)


class RunChannel:
    """One run seen from the host: the child is hostile, so every limit is enforced here.

    The host writes the setup and each cell to the run's command pipe, reads frames from
    its result pipe under its own deadline and size cap, and always has the zygote kill
    and reap the run's process group at the end, whatever the run said.
    """

    def __init__(self, zygote: ZygoteClient, config: SandboxConfig, api: dict[str, object] | None) -> None:
        self.zygote = zygote
        self.config = config
        # Without an injected API there is no host path to bind: a run that entered its
        # root before this caller came (sealed) suits it.
        self.pid, self.cmd, self.res = zygote.spawn(sealed_ok=api is None)
        # Never block on the run: a run that stops reading must not hold the host past a
        # deadline (a cell larger than the pipe's buffer would, with a blocking write).
        os.set_blocking(self.cmd, False)
        self.ended = False
        self.paused = False
        self.isolation: tuple[str, ...] = ()
        self.notes: tuple[str, ...] = ()
        self.started = time.monotonic()
        self.seq = 0
        self.setup_failure: dict[str, Any] | None = None
        self.awaiting_ready = True
        self.reader = frames.FrameReader()
        self.pending = bytearray(frames.encode(json.dumps({"config": config.to_json(), "api": api}).encode()))
        if not self._flush(time.monotonic()):
            self.setup_failure = self._failure("ChildCrashed", "the run ended before it read its setup")

    def ready(self, timeout: float, *, hold: bool = False) -> dict[str, Any] | None:
        """Read the run's "ready" frame once (a failure result when it is not ready).
        ``hold``: no cell follows yet, so the run is stopped until the next one."""
        if self.awaiting_ready and self.setup_failure is None:
            self.awaiting_ready = False
            deadline = time.monotonic() + timeout
            reply = self._write_by(deadline, timeout) or self._read(deadline, timeout, _READY_LIMIT)
            if "frame" not in reply:
                self.setup_failure = reply
            else:
                try:
                    self.isolation, self.notes = _parse_ready(reply["frame"])
                except frames.FrameError as exc:
                    self.setup_failure = self._failure("ProtocolError", f"the run sent a malformed ready frame: {exc}")
                else:
                    if hold:
                        self.setup_failure = self._hold()
        return self.setup_failure

    def cell(self, code: str, timeout: float, *, hold: bool = True, limit: float | None = None) -> dict[str, Any]:
        """Run one cell under ``timeout``; ``hold``: stop the run once it answered (the
        default; a caller that ends the run right after has no need to). ``limit``: the
        cell's whole limit, named in a timeout (``timeout`` is what the host left of it)."""
        if self.ended:
            return _failure("SessionClosed", "the run has ended", dead=True)
        if not self.awaiting_ready and select.select([self.res], [], [], 0)[0]:
            # Between cells the run has nothing to say: bytes now would be a forged answer.
            if not os.read(self.res, 1 << 20):
                return self._died()
            return self._failure("ProtocolError", "the run sent data nobody asked for")
        deadline = time.monotonic() + timeout
        shown = timeout if limit is None else limit
        if self.paused:
            failure = self._signal(signal.SIGCONT, "continue")
            if failure is not None:
                return failure
            self.paused = False
        # Each cell's answer must echo a number the run learns only by reading that cell:
        # an answer written ahead (or a spare one kept for later) cannot match it.
        self.seq = int.from_bytes(os.urandom(8), "big") >> 11
        self.pending += frames.encode(json.dumps({"code": code, "seq": self.seq}).encode())
        # Setup and code travel in one round trip: the ready frame is read after both.
        failure = self._write_by(deadline, shown) or self.ready(deadline - time.monotonic())
        if failure is not None:
            return failure
        reply = self._read(deadline, shown, 6 * self.config.max_output_bytes + frames.FRAME_OVERHEAD)
        if "frame" not in reply:
            return reply
        try:
            if self.reader.buffer:
                raise frames.FrameError("bytes after the result frame")
            result = frames.parse_result(reply["frame"], self.seq)
        except frames.FrameError as exc:
            return self._failure("ProtocolError", f"the run sent a malformed result: {exc}")
        # The cell is over: from here until the next one the run gets no CPU at all
        # (an escaped run could have answered early and gone on computing).
        failure = self._hold() if hold else None
        if failure is not None:
            return failure
        return _cap(result, self.config.max_output_bytes)

    def _hold(self) -> dict[str, Any] | None:
        """Stop every process of the run (SIGSTOP to its process group, which the run
        cannot leave: seccomp refuses setsid and setpgid; a run's PID-namespace init
        cannot ignore a stop sent from outside it). The group id is the keeper's pid,
        which the zygote does not release before ``end``."""
        failure = self._signal(signal.SIGSTOP, "stop")
        self.paused = failure is None
        return failure

    def _signal(self, sig: int, what: str) -> dict[str, Any] | None:
        try:
            os.killpg(self.pid, sig)
        except ProcessLookupError:
            return None  # nothing of the run is left: the next read says how it ended
        except OSError as exc:
            return self._failure("ChildCrashed", f"the host could not {what} the run ({os.strerror(exc.errno or 0)})")
        return None

    def _flush(self, deadline: float) -> bool:
        """Write what is pending without blocking, waiting at most until ``deadline``;
        False when the run closed its end."""
        while self.pending:
            try:
                del self.pending[: os.write(self.cmd, self.pending)]
            except BlockingIOError:
                left = deadline - time.monotonic()
                if left <= 0:
                    return True
                select.select([], [self.cmd], [], left)
            except OSError:
                return False
        return True

    def _write_by(self, deadline: float, timeout: float) -> dict[str, Any] | None:
        """Everything pending written by ``deadline``, else the run's end as a failure."""
        if not self._flush(deadline):
            return self._failure("ChildCrashed", "the run ended before it read its input")
        if self.pending:
            self.end()
            return _failure("TimeoutError", f"wall-clock limit of {timeout:g}s exceeded", timed_out=True, dead=True)
        return None

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
        if status == frames.OUTLIVED_GRACE:
            return _failure("ChildCrashed", "the run closed its result pipe and did not exit", dead=True)
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
        if sig in (signal.SIGSEGV, signal.SIGBUS):
            return _failure("ChildCrashed", NATIVE_CRASH.format(sig=sig, name=signal.Signals(sig).name), dead=True)
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
        if ended and self.paused:
            # A run that ended by itself between cells left its keeper stopped: it must
            # go on to report the run's status, not be killed as if the run hung.
            with contextlib.suppress(OSError):
                os.killpg(self.pid, signal.SIGCONT)
        if not ended:
            # Killed here, before the zygote hears of it: from now on nothing of the run
            # executes, and the caller need not wait for the zygote's answer. The group
            # id is still the keeper's (the zygote reaps it only once asked, below).
            with contextlib.suppress(OSError):
                os.killpg(self.pid, signal.SIGKILL)
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
