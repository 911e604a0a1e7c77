"""The error hierarchy of the in-image toolset.

Every deliberate failure is an :class:`AptsError` with a message, an optional hint and a
stable exit code. Library code raises; only ``terminai_apts.cli`` and the ``python -m``
entry points print errors (to stderr) and turn them into exit codes.

The codes are disjoint from ``terminai-sandbox``'s (docs/EXIT_CODES.md): 0, 1, 2, 3 and 130
mean the same in both tools; the toolset's own failure families are 20-28. Never renumber
one, only add.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar


class AptsError(Exception):
    """Root of every error the toolset raises on purpose."""

    exit_code: ClassVar[int] = 1

    def __init__(self, message: str, *, hint: str | None = None, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint or ""
        # What a --json reader gets besides the error (a verify report, say): one object on
        # stdout holds both, never a report followed by a second error object.
        self.details = dict(details or {})

    def __str__(self) -> str:
        return self.message

    def render(self) -> str:
        """The text shown on stderr: the message, then the remedy."""
        return f"error: {self.message}" + (f"\n  hint: {self.hint}" if self.hint else "")


class UsageError(AptsError):
    """A command-line argument or input value is malformed."""

    exit_code = 2


class PathError(AptsError):
    """A file or directory named on the command line cannot be used: missing, a directory
    where a file is expected (or the reverse), unreadable, read-only, full, not UTF-8.

    Exit code 3, as in ``terminai-sandbox`` (a refused input or output location)."""

    exit_code = 3


class CleanupError(AptsError):
    """The cleanup planner or its governed apply refused or failed."""

    exit_code = 20


class ApprovalRequired(CleanupError):
    """A governed action was attempted without an explicit approver."""

    exit_code = 21


class JournalError(AptsError):
    """A journal (cleanup write-ahead log, memory journal) is unreadable or inconsistent."""

    exit_code = 22


class IntegrityError(AptsError):
    """A hash chain, snapshot hash or HMAC does not match: something was tampered with."""

    exit_code = 23


class MemoryStoreError(AptsError):
    """The memory archive is missing, of the wrong schema, or a query is malformed."""

    exit_code = 24


class MemoryQueryError(UsageError):
    """An argument to the memory API is malformed: wrong type, out of range, or not valid text.

    Every memory query method and ``terminai-apts memory`` sub-command reports bad input
    with this one type (exit code 2, like any usage error).
    """


class MemoryNotFound(MemoryStoreError, LookupError):
    """No memory has the requested id (a ``LookupError``, as a missing key is)."""


class ReadOnlyViolation(MemoryStoreError):
    """Something tried to write through the read-only memory API."""

    exit_code = 25


class ExecutorError(AptsError):
    """The restricted executor could not run (not: the user's code failed)."""

    exit_code = 26


class EvolutionError(AptsError):
    """A governed-evolution step was refused or is illegal in the current state."""

    exit_code = 27


class ContractViolation(AptsError):
    """The installed toolset does not satisfy its contract manifest."""

    exit_code = 28
