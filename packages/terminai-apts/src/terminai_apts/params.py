"""What each kind of command-line argument must be, checked while the command line is parsed.

Every ``terminai-apts`` command takes its paths and numbers through these types, so a value
that is not what the argument claims (an empty string from an unset variable, a FIFO or a
device where a file is read, a directory where a file is expected, a dangling link, a
number written in other digits) is refused before any work starts, with the same message
and hint whichever command it is given to. A test walks the whole parser tree and fails on
an argument that has no type from this module or a declared free-text role.

Types raise :class:`~terminai_apts.errors.AptsError` subclasses, not argparse's own
``ArgumentTypeError`` (argparse lets other exceptions through): the error boundary then prints
them with their hint and exit code (2 for a malformed value, 3 or the command family's code
for a file that cannot be used). Only :mod:`os` and :mod:`stat` are used: ``exec`` parses its
command line through here and must not load more.
"""

from __future__ import annotations

import math
import os
import stat
from typing import Any

from terminai_apts.errors import AptsError, PathError, UsageError

_EMPTY_HINT = "name it explicitly; an empty argument is usually an unset variable"
_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}


class Typed:
    """An argument type: called with the word, returns the value; ``role`` names what the
    argument is (the bad-input matrix generates its cases from it)."""

    role = ""

    def __init__(self, option: str) -> None:
        self.option = option
        # argparse names the type in its own messages (a choice, say) by ``__name__``.
        self.__name__ = self.role

    def __call__(self, text: str) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError


class Number(Typed):
    """A whole or decimal number in ASCII digits, finite, within ``low``..``high``."""

    def __init__(self, option: str, kind: type, low: float, high: float) -> None:
        self.kind = kind
        self.low = low
        self.high = high
        self.role = "int" if kind is int else "float"
        super().__init__(option)

    def __call__(self, text: str) -> Any:
        what = "whole number" if self.kind is int else "number"
        # int() and float() accept any script's digits ('٣' is 3) and '1_0': not on a command line.
        if not text.strip() or not text.isascii() or "_" in text:
            raise UsageError(f"{self.option} {text!r} is not a {what}", hint=f"write a {what} in ASCII digits, like 3")
        try:
            value = self.kind(text)
        except (ValueError, OverflowError):
            raise UsageError(f"{self.option} {text!r} is not a {what}", hint=f"write a {what}, like 3") from None
        if self.kind is float and not math.isfinite(value):
            raise UsageError(f"{self.option} {text!r} is not a finite number", hint="write a finite number, like 3")
        if not self.low <= value <= self.high:
            raise UsageError(
                f"{self.option} {text} is out of range ({self.low} to {self.high})",
                hint=f"pass a value from {self.low} to {self.high}",
            )
        return value


def _not_empty(option: str, text: str, *, dash: str | None) -> None:
    if text == "":
        raise UsageError(f"{option} is empty ('')", hint=f"the path is empty: {_EMPTY_HINT}")
    if text == "-" and dash is None:
        raise UsageError(f"{option} '-': this argument does not read standard input", hint="name a file")


class InputPath(Typed):
    """A path the command reads: a regular file (``want="file"``), a directory (``"dir"``) or
    either (``"any"``); ``-`` is standard input only where ``stdin`` says so. Missing is left to
    the command (it knows whether it may create it); any other wrong kind is ``error``."""

    def __init__(
        self,
        option: str,
        *,
        want: str = "file",
        stdin: bool = False,
        error: type[AptsError] = PathError,
        words_files: bool = False,
    ) -> None:
        self.want = want
        self.stdin = stdin
        self.error = error
        # A command that says what a regular file given for its directory is (a memory
        # index where a journal is asked, say) keeps that message.
        self.words_files = words_files
        self.role = {"file": "input-file", "dir": "input-dir", "any": "input-any"}[want]
        super().__init__(option)

    def __call__(self, text: str) -> str:
        _not_empty(self.option, text, dash="stdin" if self.stdin else None)
        if text == "-":
            return text
        try:
            mode = os.stat(text).st_mode  # stat never opens: a FIFO nobody writes does not block
        except FileNotFoundError:
            if os.path.islink(text):
                raise self.error(
                    f"{text}: a symbolic link to a missing file", hint="point the link at a file, or pass the file"
                ) from None
            return text  # missing: the command says what it expected there
        except OSError as exc:
            raise self.error(f"{text}: {exc.strerror}", hint="check the path and its permissions") from None
        kind = stat.S_IFMT(mode)
        if kind in _KINDS:
            raise self.error(
                f"{text} is {_KINDS[kind]}, not a {'directory' if self.want == 'dir' else 'regular file'}",
                hint="pass a regular file" if self.want != "dir" else "pass a directory",
            )
        if self.want == "file" and stat.S_ISDIR(mode):
            raise self.error(f"{text} is a directory, not a file", hint="pass a file, not a directory")
        if self.want == "dir" and stat.S_ISREG(mode) and self.words_files:
            return text
        if self.want == "dir" and not stat.S_ISDIR(mode):
            raise self.error(f"{text} is a file, not a directory", hint="pass a directory")
        if not os.access(text, os.R_OK | (os.X_OK if stat.S_ISDIR(mode) else 0)):
            raise self.error(f"{text}: permission denied", hint="choose a location you may read")
        return text


class OutputPath(Typed):
    """A file the command writes: not empty, ``-`` only where it means stdout, never an
    existing directory, FIFO, socket or device; with ``parent`` its directory must exist."""

    role = "output-file"

    def __init__(self, option: str, *, stdout: bool = False, parent: bool = True) -> None:
        self.stdout = stdout
        self.parent = parent
        super().__init__(option)

    def __call__(self, text: str) -> str:
        _not_empty(self.option, text, dash="stdout" if self.stdout else None)
        if text == "-":
            return text
        try:
            mode = os.stat(text).st_mode
        except OSError:
            mode = None
        if mode is not None and stat.S_ISDIR(mode):
            raise PathError(f"{text} is a directory", hint="name a file to write, not a directory")
        if mode is not None and stat.S_IFMT(mode) in _KINDS:
            raise PathError(f"{text} is {_KINDS[stat.S_IFMT(mode)]}", hint="name a regular file to write")
        where = os.path.dirname(text) or "."
        if self.parent and not os.path.isdir(where):
            raise PathError(
                f"{text}: its directory {where} does not exist", hint="create the directory first or choose another"
            )
        return text


class Text(Typed):
    """Free text (a name, a query, a date expression): the command validates its meaning."""

    role = "text"

    def __call__(self, text: str) -> str:
        return text


class Choice(Typed):
    """One word of a fixed set (argparse's own check would print no hint)."""

    role = "choice"

    def __init__(self, option: str, choices: tuple[str, ...]) -> None:
        self.choices = choices
        super().__init__(option)

    def __call__(self, text: str) -> str:
        if text not in self.choices:
            listed = ", ".join(repr(c) for c in self.choices)  # worded as argparse words it
            raise UsageError(
                f"argument {self.option}: invalid choice: {text!r} (choose from {listed})",
                hint=f"choose one of: {', '.join(self.choices)}",
            )
        return text
