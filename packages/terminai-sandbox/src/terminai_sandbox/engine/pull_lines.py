"""What a pull by digest says while the engine's stream arrives: one line per layer step,
byte counts while a layer downloads (at most every :data:`BYTES_EVERY` seconds per layer).

Shared by the CLI's progress (``contracts``) and the launch kernel (``run`` pulling an
image it does not hold), which prints without click on a terminal only.
"""

from __future__ import annotations

import time

TYPE_CHECKING = False  # not `from typing import ...`: the launch kernel never imports typing
if TYPE_CHECKING:
    from collections.abc import Callable

    from terminai_sandbox.engine.client import PullProgress

BYTES_EVERY = 1.0  # seconds between two byte-count lines of the same layer or blob


def size(n: int) -> str:
    """A byte count for people: 512 B, 3.4 KiB, 12.0 MiB, 1.2 GiB."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{n} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


class PullLines:
    """A pull callback that turns the engine's steps into lines for ``say``."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self.say = say
        self.last: dict[str, float] = {}
        self.said: set[tuple[str, str]] = set()

    def __call__(self, event: PullProgress) -> None:
        if event.total:
            now = time.monotonic()
            if now - self.last.get(event.layer, 0.0) >= BYTES_EVERY or event.current >= event.total:
                self.last[event.layer] = now
                self.say(f"layer {event.layer}: {event.status.lower()} {size(event.current)} of {size(event.total)}")
        elif (event.layer, event.status) not in self.said:  # "Download complete", "Pull complete", ...
            self.said.add((event.layer, event.status))
            self.say(f"layer {event.layer}: {event.status.lower()}")
