"""Progress on stderr for the steps that take a while: stage lines with elapsed time.

A line is printed when stderr is a terminal and ``-q`` was not given; a step that runs
longer than :data:`HEARTBEAT` seconds says it is still running every :data:`HEARTBEAT`
seconds, so a two-minute Debian stage is never silent. Nothing here goes to stdout.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator

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
