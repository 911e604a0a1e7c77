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

if TYPE_CHECKING:  # the registry client and the engine's SDK load only when a command uses them
    from terminai_sandbox.engine import PullProgress
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


BYTES_EVERY = 1.0  # seconds between two byte-count lines of the same blob
SMALL = 1 << 20  # bytes: blobs below this get no byte-count lines, only the one when sent


def size(n: int) -> str:
    """A byte count for people: 512 B, 3.4 KiB, 12.0 MiB, 1.2 GiB."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{n} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


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
    them, with byte counts while it downloads (at most every :data:`BYTES_EVERY` seconds per
    layer). None when progress is not shown."""
    if not shown():
        return None
    last: dict[str, float] = {}
    said: set[tuple[str, str]] = set()

    def report(event: PullProgress) -> None:
        if event.total:
            now = time.monotonic()
            if now - last.get(event.layer, 0.0) >= BYTES_EVERY or event.current >= event.total:
                last[event.layer] = now
                line(f"layer {event.layer}: {event.status.lower()} {size(event.current)} of {size(event.total)}")
        elif (event.layer, event.status) not in said:  # "Download complete", "Pull complete", ...
            said.add((event.layer, event.status))
            line(f"layer {event.layer}: {event.status.lower()}")

    return report
