"""A helper process a session needs on the host: started before it, ready within a bound, always stopped.

The egress proxy (``python -m terminai_apts.egress serve``) and the legacy proxy
command's relay (``python -m terminai_apts.egress_bridge``) both print ``listening ADDRESS``
on stdout when they accept connections and exit on SIGTERM. :class:`HelperProcess` starts
one in a session of its own, with a scrubbed environment, a private umask, no core dumps
and a bounded number of open files; it waits for that line (:data:`READY_SECONDS` at most)
and stops it with SIGTERM, then SIGKILL after :data:`STOP_SECONDS`. Its stderr goes to a
private file whose last lines become the error when it fails to start.

Every kernel module is imported by the seal test, so ``subprocess`` and ``signal`` load
inside the functions: only a session with a network policy pays for them.
"""

from __future__ import annotations

import contextlib
import os
import select
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from terminai_sandbox.errors import EgressError

TYPE_CHECKING = False  # not `from typing import ...`: a launch never imports typing (~3 ms)
if TYPE_CHECKING:
    import subprocess

READY_SECONDS = 10.0
STOP_SECONDS = 5.0
#: Open files a helper may hold: its connections are bounded by its own limits well below this.
NOFILE = 4096
#: What a helper inherits of the launcher's environment: enough to find its interpreter's
#: libraries and a locale, nothing that names the user's credentials.
KEPT_ENV = ("PATH", "LANG", "LC_ALL", "TZ")


@contextlib.contextmanager
def _no_core_dumps_inherited() -> Iterator[None]:
    """The launcher's own soft core limit is 0 while it spawns, so the helper starts with it.

    A dump would hold the traffic, so it must be off from the helper's first instruction:
    ``prlimit`` from the parent lands only after the child already runs, and a ``preexec_fn``
    makes ``subprocess`` fork the whole launcher instead of using ``vfork``. Only the soft
    limit is lowered (a lowered hard limit could not be restored); :func:`_harden` then sets
    the helper's hard limit too, so it cannot raise its own.
    """
    import resource  # noqa: PLC0415  (only with a network policy)

    saved = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (0, saved[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_CORE, saved)


def _harden(pid: int) -> None:
    """No core dumps even if it asks, bounded files: set on the child just started."""
    import resource  # noqa: PLC0415  (only with a network policy)

    resource.prlimit(pid, resource.RLIMIT_CORE, (0, 0))
    soft, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)
    bound = NOFILE if hard == resource.RLIM_INFINITY else min(NOFILE, hard)
    resource.prlimit(
        pid, resource.RLIMIT_NOFILE, (bound if soft == resource.RLIM_INFINITY else min(soft, bound), bound)
    )


class HelperProcess:
    """One started helper; :meth:`stop` is idempotent and safe on every path."""

    def __init__(self, what: str, process: subprocess.Popen[bytes], log: Path) -> None:
        self.what = what
        self.process = process
        self.log = log
        self.address = ""
        self.bound = READY_SECONDS
        self.deadline = time.monotonic() + READY_SECONDS

    @classmethod
    def start(
        cls,
        what: str,
        argv: Sequence[str],
        *,
        log: Path,
        env: Mapping[str, str],
        ready_seconds: float = READY_SECONDS,
        wait: bool = True,
    ) -> HelperProcess:
        """Start ``argv`` and wait until it says it listens; :class:`EgressError` when it does not.

        With ``wait=False`` the caller does other work first and calls :meth:`ready` later.
        """
        import subprocess  # noqa: PLC0415  (only with a network policy)

        kept = {name: env[name] for name in KEPT_ENV if name in env}
        with open(log, "wb") as errors, _no_core_dumps_inherited():
            try:
                process = subprocess.Popen(
                    list(argv),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=errors,
                    env=kept,
                    close_fds=True,
                    start_new_session=True,  # the terminal's Ctrl-C is the launcher's to forward
                    umask=0o077,
                )
            except OSError as exc:
                raise EgressError(f"cannot start the {what}: {exc.strerror or exc}") from None
        helper = cls(what, process, log)
        try:
            _harden(process.pid)
        except OSError:
            helper.stop()
            raise
        helper.bound, helper.deadline = ready_seconds, time.monotonic() + ready_seconds
        if wait:
            helper.ready()
        return helper

    def ready(self) -> str:
        """Wait (until the start's bound) for the ``listening`` line; stop the helper and raise if it fails."""
        if not self.address:
            try:
                self.address = self._wait_ready(self.deadline - time.monotonic())
            except BaseException:
                self.stop()
                raise
        return self.address

    def _wait_ready(self, seconds: float) -> str:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + seconds
        buffer = b""
        while b"\n" not in buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise EgressError(
                    f"the {self.what} did not start listening within {self.bound:g} s{self._said()}",
                    hint="see the message above; the session did not start",
                )
            readable, _, _ = select.select([fd], [], [], left)
            if not readable:
                continue
            chunk = os.read(fd, 4096)
            if not chunk:
                self.process.wait(timeout=STOP_SECONDS)
                raise EgressError(
                    f"the {self.what} exited (code {self.process.returncode}) before it listened{self._said()}",
                )
            buffer += chunk
            if len(buffer) > 4096:
                break
        line = buffer.split(b"\n", 1)[0].decode("utf-8", "replace")
        if not line.startswith("listening "):
            raise EgressError(f"the {self.what} said {line[:200]!r} instead of 'listening ADDRESS'{self._said()}")
        return line.removeprefix("listening ").strip()

    def _said(self) -> str:
        try:
            tail = self.log.read_bytes()[-2000:].decode("utf-8", "replace").strip().splitlines()[-3:]
        except OSError:
            return ""
        return (": " + " | ".join(tail)) if tail else ""

    def stop(self) -> int | None:
        """SIGTERM, then SIGKILL after :data:`STOP_SECONDS`; the exit code (None if it was already gone)."""
        import signal  # noqa: PLC0415  (only with a network policy)
        import subprocess  # noqa: PLC0415

        process = self.process
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=STOP_SECONDS)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        if process.stdout is not None:
            process.stdout.close()
        return process.returncode
