"""Progress on stderr for the steps that take a while: stage lines with elapsed time.

A line is printed when stderr is a terminal and ``-q`` was not given; a step that runs
longer than :data:`HEARTBEAT` seconds says it is still running every :data:`HEARTBEAT`
seconds, so a two-minute Debian stage is never silent. Uploads to a registry print one
line per blob and its byte count while it goes out; pulls, per layer, what the engine
reports (its byte counts while a layer downloads). Nothing here goes to stdout.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from terminai_sandbox.engine.pull_lines import BYTES_EVERY, PullLines, size

if TYPE_CHECKING:  # the registry client and the engine's SDK load only when a command uses them
    from terminai_sandbox.engine.client import PullProgress
    from terminai_sandbox.registry import BlobProgress

HEARTBEAT = 2.0  # seconds: steps shorter than this print nothing extra

_state = {"quiet": False}
_started = time.monotonic()


def set_quiet(quiet: bool) -> None:
    _state["quiet"] = quiet


def shown() -> bool:
    """Whether progress is printed: stderr is a terminal and -q was not given."""
    return not _state["quiet"] and sys.stderr.isatty()


def line(message: str) -> None:
    """One progress line, stamped with the time since the command started."""
    if shown():
        sys.stderr.write(f"  · [{time.monotonic() - _started:6.1f} s] {message}\n")
        sys.stderr.flush()


@contextlib.contextmanager
def step(label: str) -> Iterator[None]:
    """Run a step; while it runs longer than HEARTBEAT, say so every HEARTBEAT seconds."""
    if not shown():
        yield
        return
    done = threading.Event()
    begun = time.monotonic()

    def beat() -> None:
        while not done.wait(HEARTBEAT):
            line(f"{label}: {time.monotonic() - begun:.0f} s")

    thread = threading.Thread(target=beat, name="progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
    if time.monotonic() - begun >= HEARTBEAT:
        line(f"{label}: done in {time.monotonic() - begun:.1f} s")


SMALL = 1 << 20  # bytes: blobs below this get no byte-count lines, only the one when sent


def blob_reporter() -> Callable[[BlobProgress], None] | None:
    """A callback for the registry client that prints one line per blob (sent or already
    there) and, while a blob of :data:`SMALL` bytes or more uploads, its byte count at most every :data:`BYTES_EVERY`
    seconds. None when progress is not shown: the client then does no counting at all."""
    if not shown():
        return None
    last: dict[str, float] = {}

    def report(event: BlobProgress) -> None:
        short = event.digest.removeprefix("sha256:")[:12]
        if event.state == "skipped":
            line(f"blob {short}: already there ({size(event.total)})")
        elif event.state == "sent":
            line(f"blob {short}: sent {size(event.total)}")
        elif event.total >= SMALL:  # a small blob's two lines (sent, done) say all there is
            now = time.monotonic()
            if now - last.get(event.digest, 0.0) >= BYTES_EVERY or event.done == event.total:
                last[event.digest] = now
                line(f"blob {short}: {size(event.done)} of {size(event.total)}")

    return report


def pull_reporter() -> Callable[[PullProgress], None] | None:
    """A callback for :meth:`Engine.pull_by_digest`: each layer's steps as the engine names
    them, with byte counts while it downloads (:class:`~terminai_sandbox.engine.pull_lines.PullLines`).
    None when progress is not shown."""
    return PullLines(line) if shown() else None


__all__ = [
    "BYTES_EVERY",
    "HEARTBEAT",
    "SMALL",
    "blob_reporter",
    "line",
    "pull_reporter",
    "set_quiet",
    "shown",
    "size",
    "step",
]
