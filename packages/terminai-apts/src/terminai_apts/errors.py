"""The error hierarchy of the in-image toolset.

Every deliberate failure is an :class:`AptsError` with a message, an optional hint and a
stable exit code. Library code raises; only ``terminai_apts.cli`` and the ``python -m``
entry points print errors (to stderr) and turn them into exit codes.

The codes are disjoint from ``terminai-sandbox``'s (docs/EXIT_CODES.md): 0, 1, 2, 3 and 130
mean the same in both tools; the toolset's own failure families are 20-27 (28 is retired). Never renumber
one, only add.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar


class AptsError(Exception):
    """Root of every error the toolset raises on purpose."""

    exit_code: ClassVar[int] = 1
    # Every class has a remedy of its own, so no error reaches a user without a hint line
    # (a raise site with a better one passes ``hint=``); a unit test holds every subclass to it.
    default_hint: ClassVar[str] = "see 'terminai-apts COMMAND --help' and docs/EXIT_CODES.md"

    def __init__(self, message: str, *, hint: str | None = None, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint or self.default_hint
        # What a --json reader gets besides the error (a verify report, say): one object on
        # stdout holds both, never a report followed by a second error object.
        self.details = dict(details or {})

    def __str__(self) -> str:
        return self.message

    def render(self) -> str:
        """The text shown on stderr: the message, then the remedy."""
        return f"error: {self.message}\n  hint: {self.hint}"


class UsageError(AptsError):
    """A command-line argument or input value is malformed."""

    exit_code = 2
    default_hint = "see 'terminai-apts COMMAND --help' for the arguments it takes"


class PathError(AptsError):
    """A file or directory named on the command line cannot be used: missing, a directory
    where a file is expected (or the reverse), unreadable, read-only, full, not UTF-8.

    Exit code 3, as in ``terminai-sandbox`` (a refused input or output location)."""

    exit_code = 3
    default_hint = "check the path and its permissions"


class CleanupError(AptsError):
    """The cleanup planner or its governed apply refused or failed."""

    exit_code = 20
    default_hint = "check the folder and the plan; 'terminai-apts cleanup --help' lists the options"


class ApprovalRequired(CleanupError):
    """A governed action was attempted without an explicit approver."""

    exit_code = 21
    default_hint = "name who approved the change with --approved-by NAME"


class JournalError(AptsError):
    """A journal (cleanup write-ahead log, memory journal) is unreadable or inconsistent."""

    exit_code = 22
    default_hint = "check the journal directory; 'terminai-apts memory verify DIR' names the first bad entry"


class IntegrityError(AptsError):
    """A hash chain, snapshot hash or HMAC does not match: something was tampered with."""

    exit_code = 23
    default_hint = "something was changed after it was written; keep the files for review and restore them from a copy"


class MemoryStoreError(AptsError):
    """The memory archive is missing, of the wrong schema, or a query is malformed."""

    exit_code = 24
    default_hint = "rebuild the index with 'terminai-apts memory index DB --journal DIR' or '--archive FILE'"


class MemoryQueryError(UsageError):
    """An argument to the memory API is malformed: wrong type, out of range, or not valid text.

    Every memory query method and ``terminai-apts memory`` sub-command reports bad input
    with this one type (exit code 2, like any usage error).
    """

    default_hint = "see 'terminai-apts memory COMMAND --help' for the values it takes"


class MemoryNotFound(MemoryStoreError, LookupError):
    """No memory has the requested id (a ``LookupError``, as a missing key is)."""

    default_hint = "list the ids with 'terminai-apts memory filter DB'"


class ReadOnlyViolation(MemoryStoreError):
    """Something tried to write through the read-only memory API."""

    exit_code = 25
    default_hint = "the memory API only reads; record through the journal ('terminai-apts memory journal append')"


class ExecutorError(AptsError):
    """The restricted executor could not run (not: the user's code failed)."""

    exit_code = 26
    default_hint = "check the executor's options; 'terminai-apts exec --help' lists them"


class EvolutionError(AptsError):
    """A governed-evolution step was refused or is illegal in the current state."""

    exit_code = 27
    default_hint = "see the proposal's state with 'terminai-apts evolve status'"


class Interrupted(AptsError):
    """The command was interrupted (Ctrl-C); what it was writing was removed."""

    exit_code = 130
    default_hint = "nothing was left half-written; run the command again"


class Terminated(Interrupted):
    """The command was asked to stop (SIGTERM); it cleaned up as for Ctrl-C."""

    exit_code = 143
