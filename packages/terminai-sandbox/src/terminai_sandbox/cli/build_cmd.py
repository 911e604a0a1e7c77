"""Commands of one part of the tool (filled in by the part that owns them)."""

from __future__ import annotations

import click


def register(group: click.Group) -> None:
    """Attach this part's commands to ``group``."""
