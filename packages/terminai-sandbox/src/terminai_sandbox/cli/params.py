"""The click parameter types every ``terminai-sandbox`` command takes its paths and numbers through.

A value that is not what its argument claims is refused while the command line is parsed,
before any work starts (a build, a registry round trip, an SBOM of a large layout), with the
same message and hint whichever command it is given to:

* malformed (exit 2, a usage error): an empty path (an unset variable), ``-`` where it does
  not mean standard input or output, a number in other scripts' digits ('٣', '²') or out of
  range;
* a file that cannot be used (exit 3, :class:`~terminai_sandbox.errors.PathError`): a FIFO,
  socket or device where a regular file is read (found by ``stat``, never opened, so a FIFO
  nobody writes does not block), a directory where a file is expected or the reverse, a
  symbolic link to nothing, a file that may not be read, an output whose directory is missing.

A missing input is left to click's ``exists`` or to the command, which knows whether it may
create it. The bad-input matrix (tests/integration/cli/badinput/test_generated.py) walks
every command and generates its cases from these types; a path or number parameter without
one fails it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from terminai_sandbox.common import argpaths
from terminai_sandbox.errors import PathError

_EMPTY_HINT = "the path is empty: name it explicitly (an empty argument is usually an unset variable)"


class HintedUsage(click.BadParameter):
    """A malformed value with its own remedy (the console prints ``hint`` instead of '--help')."""

    def __init__(self, message: str, *, hint: str, ctx: click.Context | None, param: click.Parameter | None) -> None:
        super().__init__(message, ctx=ctx, param=param)
        self.hint = hint


def _text(value: Any) -> str:
    return os.fsdecode(value) if isinstance(value, (str, bytes, os.PathLike)) else str(value)


def _not_blank(value: Any, param: click.Parameter | None, ctx: click.Context | None, *, dash: bool) -> str:
    text = _text(value)
    if text == "":
        raise HintedUsage(argpaths.EMPTY, hint=_EMPTY_HINT, ctx=ctx, param=param)
    if text == "-" and not dash:
        raise HintedUsage(
            argpaths.DASH,
            hint="name a file (./- for a file called '-')",
            ctx=ctx,
            param=param,
        )
    return text


class InputPath(click.Path):
    """A path the command reads: a regular file (``want="file"``), a directory (``"dir"``) or
    either (``"any"``). ``exists`` is click's: a missing path is then a usage error."""

    def __init__(self, *, want: str = "file", exists: bool = False, stdin: bool = False) -> None:
        super().__init__(
            path_type=Path, exists=exists, file_okay=want != "dir", dir_okay=want != "file", allow_dash=stdin
        )
        self.want = want

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        text = _not_blank(value, param, ctx, dash=self.allow_dash)
        if text != "-":
            argpaths.check_input(text, self.want)
        return super().convert(value, param, ctx)


class OutputPath(click.Path):
    """A file the command writes (``-``: standard output where ``stdout`` says so): never an
    existing directory, FIFO, socket or device, and its directory exists."""

    def __init__(self, *, stdout: bool = False) -> None:
        super().__init__(path_type=Path, allow_dash=stdout)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        text = _not_blank(value, param, ctx, dash=self.allow_dash)
        if text != "-":
            argpaths.check_output(text)
        return super().convert(value, param, ctx)


class OutputPrefix(click.ParamType[str, Any]):
    """The start of the names of files the command writes (``keygen``'s PREFIX.key, PREFIX.pub)."""

    name = "prefix"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        text = _not_blank(value, param, ctx, dash=False)
        parent = os.path.dirname(text) or "."
        if not text.endswith(os.sep) and not os.path.isdir(parent):
            raise PathError(f"{text}: its directory {parent} does not exist", hint="create the directory first")
        return text


class OutputDir(click.Path):
    """A directory the command writes into (made when missing): never an existing file."""

    def __init__(self) -> None:
        super().__init__(path_type=Path, file_okay=False)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        argpaths.check_output_dir(_not_blank(value, param, ctx, dash=False))
        return super().convert(value, param, ctx)


class Integer(click.IntRange):
    """A whole number in ASCII digits within ``low``..``high`` (click's own accepts '٣' as 3)."""

    def __init__(self, low: int, high: int) -> None:
        super().__init__(low, high)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and (not value.strip().isascii() or "_" in value or not value.strip()):
            raise HintedUsage(
                f"{value!r} is not a whole number", hint="write it in ASCII digits, like 3", ctx=ctx, param=param
            )
        return super().convert(value, param, ctx)


class Reference(click.ParamType[str, Any]):
    """An image reference (``repo[:tag][@digest]``): the command parses it; an empty one (an
    unset variable) is a usage error here, before any registry or engine is asked."""

    name = "reference"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        text = _text(value)
        if not text.strip():
            raise HintedUsage(
                f"the image reference is empty ({text!r})",
                hint="name an image such as registry.example/terminai/sandbox:1.2.3 (an empty argument is "
                "usually an unset variable)",
                ctx=ctx,
                param=param,
            )
        return text
