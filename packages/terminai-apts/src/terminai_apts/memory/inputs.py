"""Argument checks for the memory API: every bad value becomes one :class:`MemoryQueryError`.

Agents pass whatever their program computed: a ``float`` limit, a one-element date range,
an id past 64 bits, text with a lone surrogate (invalid UTF-8 on a command line decodes to
one). Each is named here with what was expected, instead of surfacing later as an
``OverflowError`` from SQLite or a ``TypeError`` deep in a query.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from terminai_apts.errors import MemoryQueryError

INT64_MAX = (1 << 63) - 1


def text(value: object, what: str, *, optional: bool = False, nul_ok: bool = False) -> str | None:
    """A string that SQLite and the matchers can take: valid UTF-8, no NUL.

    ``nul_ok`` is for full-text query text, where a NUL separates words like a space.
    """
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise MemoryQueryError(f"{what} must be a string, not {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise MemoryQueryError(
            f"{what} is not valid text (it holds a lone surrogate, e.g. from invalid UTF-8)",
            hint="pass UTF-8 text",
        ) from None
    if "\x00" in value and not nul_ok:
        raise MemoryQueryError(f"{what} contains a NUL character", hint="remove the \\x00 from it")
    return value


def integer(value: object, what: str, *, low: int = 0, high: int = INT64_MAX) -> int:
    """An int (not a bool) within ``[low, high]``; ids and offsets stay within SQLite's 64 bits."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise MemoryQueryError(f"{what} must be an integer, not {type(value).__name__}")
    if not low <= value <= high:
        raise MemoryQueryError(f"{what} must be between {low} and {high}, not {value}")
    return value


def number(value: object, what: str) -> float | None:
    """A finite int or float (``min_confidence``), or None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MemoryQueryError(f"{what} must be a number, not {type(value).__name__}", hint="e.g. 0.8")
    if not math.isfinite(value):
        raise MemoryQueryError(f"{what} must be a finite number, not {value}")
    return float(value)


def date_range(value: object) -> tuple[str | None, str | None] | None:
    """``(start, end)``: two dates (either may be None), as a tuple or list."""
    if value is None:
        return None
    if isinstance(value, str | bytes) or not isinstance(value, Sequence) or len(value) != 2:
        raise MemoryQueryError(
            f"date_range must be a pair (start, end), not {value!r}"[:200],
            hint='e.g. date_range=("2025-12-05", "2026-01-04")',
        )
    return text(value[0], "date_range start", optional=True), text(value[1], "date_range end", optional=True)


def tags(value: object) -> Sequence[str] | str | None:
    """Tags as a comma-separated string or a list/tuple of strings."""
    if value is None or isinstance(value, str):
        return text(value, "tags", optional=True)
    if isinstance(value, bytes) or not isinstance(value, Sequence | set | frozenset):
        raise MemoryQueryError(
            f"tags must be a string or a list of strings, not {type(value).__name__}", hint='e.g. tags=["infra"]'
        )
    return tuple(str(text(t, "each tag")) for t in value)


def limit(value: object, cap: int) -> int:
    """A row limit: an integer from 0 to ``cap`` (a larger one is refused, never silently cut)."""
    rows = integer(value, "limit")
    if rows > cap:
        raise MemoryQueryError(
            f"limit must be at most {cap}, not {rows}", hint="page with offset, or narrow the query with dates or tags"
        )
    return rows


def order(value: object, allowed: Sequence[str]) -> str:
    """One of the named orders."""
    if not isinstance(value, str) or value not in allowed:
        raise MemoryQueryError(f"order must be one of {', '.join(allowed)}, not {value!r}"[:200])
    return value
