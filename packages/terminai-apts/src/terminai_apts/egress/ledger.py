"""The proxy's records, appended to the project's hash-chained audit ledger.

Same chain and spelling as the launcher's ledger (``terminai_apts.ledger``,
``Chain(prev_prefix=False)``, ``time`` and ``event`` first), under the same exclusive
``flock``, so the launcher and the proxy may share one file and
``terminai-sandbox audit verify`` checks both. The launcher's writer
(``launch/audit.Ledger``) opens the file per append; the proxy cannot: it opens the file
once, before it drops to an unprivileged uid that could not open the user's ledger, and
writes from one thread, in batches (one lock and one fsync per batch), so a flood of
refused connections costs the event loop nothing and the disk little.
"""

from __future__ import annotations

import fcntl
import os
import queue
import threading
import time
from pathlib import Path

from terminai_apts import ledger
from terminai_apts.egress.errors import AuditError, PathError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

CHAIN = ledger.Chain(prev_prefix=False)
EVENT = "egress"
_BATCH = 512


def _now() -> str:
    now = time.time_ns()
    seconds, micro = divmod(now // 1000, 1_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{micro:06d}+00:00"


class LedgerFile:
    """An open ledger file that records are appended to, each batch under one lock."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise PathError.from_os(exc) from None

    def append(self, bodies: Sequence[Mapping[str, object]]) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        try:
            last = ledger.last_line(self.fd)
            prev = ledger.GENESIS
            if last is not None:
                tail = ledger.parse(last)
                if tail is None or not isinstance(tail.get("hash"), str):
                    raise AuditError(f"the last line of {self.path} is corrupt; refusing to extend the chain")
                prev = str(tail["hash"])
            records = []
            for body in bodies:
                record = CHAIN.seal({"time": _now(), "event": EVENT, **body}, prev)
                prev = str(record["hash"])
                records.append(record)
            ledger.append(self.fd, records)
        finally:
            fcntl.flock(self.fd, fcntl.LOCK_UN)

    def close(self) -> None:
        os.close(self.fd)


class LedgerWriter:
    """A thread that appends queued records in batches; :meth:`close` writes what is left."""

    def __init__(self, file: LedgerFile) -> None:
        self.file = file
        self._queue: queue.SimpleQueue[Mapping[str, object] | None] = queue.SimpleQueue()
        self.failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="egress-ledger", daemon=True)
        self._thread.start()

    def put(self, body: Mapping[str, object]) -> None:
        self._queue.put(body)

    def _run(self) -> None:
        done = False
        while not done:
            batch: list[Mapping[str, object]] = []
            item = self._queue.get()
            while True:
                if item is None:
                    done = True
                    break
                batch.append(item)
                if len(batch) >= _BATCH:
                    break
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
            if batch and self.failure is None:
                try:
                    self.file.append(batch)
                except (OSError, AuditError) as exc:
                    self.failure = exc  # reported by close(); the proxy stops serving on it

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join()
        self.file.close()
