"""Sub-commands of one part of the toolset (filled in by the part that owns them)."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Attach this part's sub-commands."""
