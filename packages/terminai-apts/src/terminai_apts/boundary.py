"""The error boundary of the toolset's command lines: every failure becomes one error line.

``terminai-apts`` and ``python -m terminai_apts.action.cleanup`` run their command through
:func:`guarded`. Whatever happens below (a deliberate :class:`AptsError`, a file that is a
directory or read-only, a full disk, bytes that are not UTF-8, a corrupt SQLite file, a
closed stdin, Ctrl-C, a bug) the process prints one ``error:`` line and a ``hint:`` on
stderr (and, under ``--json``, one JSON object on stdout), removes the temporary files it
had not renamed into place yet, and exits with the documented code (docs/EXIT_CODES.md).
Nothing here prints a traceback unless ``TERMINAI_DEBUG=1`` asks for it.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import io
import json
import os
import signal
import sys
from collections.abc import Callable, Sequence
from typing import Any, BinaryIO, NoReturn

from terminai_apts import errors
from terminai_apts.errors import AptsError, MemoryStoreError, PathError, UsageError

# Ctrl-C is 130 (128 + SIGINT) and SIGTERM 143 (128 + 15): errors.Interrupted and errors.Terminated.
BROKEN_PIPE = 141  # 128 + SIGPIPE: the reader of stdout went away (``| head``)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the process is, like Ctrl-C: every path that cleans up after
    an interrupt (a run's children, an apply's journal, temporary files) does so for it too."""


def _on_sigterm(signum: int, frame: object) -> None:
    # Once: a second SIGTERM while the first one's clean-up runs must not cut it short.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise Terminated


_HINTS = {
    errno.ENOENT: "check the path; the parent directory must exist",
    errno.EISDIR: "pass a file, not a directory",
    errno.ENOTDIR: "a component of the path is a file, not a directory",
    errno.EACCES: "choose a location you may read and write",
    errno.EPERM: "choose a location you may read and write",
    errno.EROFS: "the file system is read-only; choose a writable location",
    errno.ENOSPC: "the device is full; free space or choose another location",
    errno.EDQUOT: "the disk quota is exhausted; free space or choose another location",
    errno.EEXIST: "remove it first or choose another name",
}


class ArgumentParser(argparse.ArgumentParser):
    """argparse, with a bad command line reported as every other failure is: one ``error:``
    line, a hint naming the command's help, exit code 2, and under ``--json`` the JSON error
    object on stdout (argparse's own prints the usage and exits before any boundary sees it).
    Sub-parsers are of the same class (argparse makes them of their parent's type)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, hint=f"see '{self.prog} --help'")


def json_asked(argv: Sequence[str]) -> bool:
    """Whether the command line asks for ``--json`` (before a ``--``): what a failure that
    comes before the arguments are parsed goes by."""
    words = list(argv)
    return "--json" in words[: words.index("--") if "--" in words else len(words)]


def what_is(path: str | os.PathLike[str]) -> str:
    """What stands at ``path`` when a regular file was expected, in words for an error
    (a FIFO, a device or a directory is not "missing"); links are followed."""
    import stat  # noqa: PLC0415  (only on this error path)

    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "does not exist" if not os.path.islink(path) else "is a link to nothing"
    except OSError as exc:
        return f"cannot be examined ({exc.strerror})"
    kinds = (
        (stat.S_ISDIR, "is a directory, not a file"),
        (stat.S_ISFIFO, "is a FIFO (named pipe), not a file"),
        (stat.S_ISSOCK, "is a socket, not a file"),
        (stat.S_ISCHR, "is a character device, not a file"),
        (stat.S_ISBLK, "is a block device, not a file"),
    )
    return next((words for test, words in kinds if test(mode)), "is not a regular file")


def path_error(exc: OSError, subject: str | None = None) -> PathError:
    """The one-line error for a failed file operation: what, which path, why, what to do."""
    where = exc.filename if exc.filename is not None else (subject or "a file")
    if isinstance(where, bytes):
        where = os.fsdecode(where)
    reason = exc.strerror or type(exc).__name__
    return PathError(f"{where}: {reason}", hint=_HINTS.get(exc.errno or 0, "check the path and its permissions"))


class _ClosedStdin(io.TextIOBase):
    """Stands in for a closed standard input: reading it is a usage error, not a crash."""

    def _refuse(self) -> NoReturn:
        raise UsageError(
            "standard input is closed",
            hint="pipe the input in (for example: echo 'print(1)' | terminai-apts exec) or pass a file",
        )

    def read(self, size: int | None = -1, /) -> str:
        self._refuse()

    def readline(self, size: int | None = -1, /) -> str:  # type: ignore[override]
        self._refuse()

    def isatty(self) -> bool:
        return False

    def readable(self) -> bool:
        return True

    @property
    def buffer(self) -> _ClosedStdin:
        # Readers of bytes (exec reads its program as bytes) meet the same refusal.
        return self


class _StrictStdin(io.TextIOBase):
    """Standard input decoded strictly: bytes that are not UTF-8 are a named error, not
    surrogates that fail later with a misleading message."""

    def __init__(self, raw: BinaryIO) -> None:
        self._text = io.TextIOWrapper(raw, encoding="utf-8", errors="strict")

    def _guard(self, read: Callable[[], str]) -> str:
        try:
            return read()
        except UnicodeDecodeError as exc:
            raise PathError(
                f"standard input is not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start})",
                hint="pipe UTF-8 text in (convert it with iconv -t UTF-8)",
            ) from None

    def read(self, size: int | None = -1, /) -> str:
        return self._guard(lambda: self._text.read(size))

    def readline(self, size: int | None = -1, /) -> str:  # type: ignore[override]
        return self._guard(lambda: self._text.readline(-1 if size is None else size))

    def isatty(self) -> bool:
        return self._text.isatty()

    def readable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._text.fileno()

    @property
    def buffer(self) -> BinaryIO:
        return self._text.buffer


# SQLite's messages for a file it could not write, and what they mean for the user.
_SQLITE_WRITE = {
    "database or disk is full": "the device is full; free space or choose another location",
    "unable to open database file": "check the path; the parent directory must exist and be writable",
    "attempt to write a readonly database": "the location is read-only; choose a writable one",
    "disk I/O error": "the device failed or is full; choose another location",
}


def output_encoding_error(exc: UnicodeEncodeError) -> PathError:
    """The error for a result the output stream's encoding cannot hold (``PYTHONIOENCODING=ascii``,
    a C locale): the input was fine, the environment's setting is refused (exit 3)."""
    char = exc.object[exc.start : exc.start + 1]
    return PathError(
        f"the output cannot be written in the {exc.encoding!r} encoding (it holds {char!r})",
        hint="use a UTF-8 locale (LC_ALL=C.UTF-8) or set PYTHONIOENCODING=utf-8",
    )


def _classify(exc: BaseException, subject: str | None) -> AptsError:
    if isinstance(exc, AptsError):
        return exc
    if isinstance(exc, OSError):
        return path_error(exc, subject)
    if isinstance(exc, UnicodeEncodeError) and exc.encoding.replace("-", "").lower() != "utf8":
        return output_encoding_error(exc)
    if isinstance(exc, UnicodeError):
        return PathError(
            f"the input is not valid UTF-8 text ({exc})",
            hint="pass UTF-8 text (convert it with iconv first)",
        )
    if type(exc).__module__ == "sqlite3":
        # The module is named, not imported: this boundary must stay cheap to import.
        where = f"{subject}: " if subject else ""
        for text, hint in _SQLITE_WRITE.items():
            if text in str(exc):
                return PathError(f"{where}{exc}", hint=hint)
        return MemoryStoreError(
            f"{where}the database cannot be read: {exc}",
            hint="it is not a memory index or it is damaged; rebuild it with 'terminai-apts memory index'",
        )
    if isinstance(exc, (OverflowError, RecursionError, MemoryError)):
        return UsageError(f"an input is too large to handle ({type(exc).__name__}: {exc})", hint="use smaller values")
    lines = str(exc).strip().splitlines()
    detail = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    return AptsError(
        f"unexpected failure: {detail}",
        hint="rerun with TERMINAI_DEBUG=1 to see the traceback, and report it if it is a bug",
    )


# The result object of `exec --json` (DESIGN §4), for a run that never started: agents
# parse one shape whatever happened.
_EXEC_SHAPE = {
    "success": False,
    "stdout": "",
    "timed_out": False,
    "memory_exceeded": False,
    "output_truncated": False,
    "duration_ms": 0,
    "violations": [],
}


def report(err: AptsError, *, as_json: bool, exec_shape: bool = False) -> None:
    """Print ``err``: one error line and its hint on stderr; under ``as_json`` also a JSON object on stdout."""
    if as_json:
        error = {"message": err.message, "hint": err.hint, "exit_code": err.exit_code}
        body: dict[str, object] = {**err.details, "ok": False, "error": error}
        if exec_shape:
            body = {**_EXEC_SHAPE, "ok": False, "error": err.message, "error_type": type(err).__name__, **error}
        with contextlib.suppress(OSError, ValueError):  # stdout is gone; stderr still gets the line
            print(json.dumps(body, ensure_ascii=True), flush=True)
    with contextlib.suppress(OSError, ValueError):
        print(err.render(), file=sys.stderr, flush=True)


def _handle_sigterm(handler: Any) -> Any:
    """Install ``handler`` for SIGTERM; the previous one (outside the main thread, where
    Python cannot handle signals, nothing changes)."""
    try:
        return signal.signal(signal.SIGTERM, handler if handler is not None else signal.SIG_DFL)
    except ValueError:
        return None


def _discard_pending() -> None:
    """The atomic writer's temporary files not renamed into place yet. Only a command that
    imported it can have any, so one that did not (``exec``) is not made to load it (and
    pathlib with it) just to be told there are none."""
    durable = sys.modules.get("terminai_apts.durable")
    if durable is not None:
        durable.discard_pending()


def guarded(
    body: Callable[[], int],
    *,
    as_json: Callable[[], bool] = lambda: False,
    subject: Callable[[], str | None] = lambda: None,
    exec_shape: Callable[[], bool] = lambda: False,
) -> int:
    """Run ``body`` and return its exit code, or report its failure and return that code.

    ``subject`` names the file a command works on (its database, say), for errors that
    do not name one themselves.
    """
    if sys.stdin is None:
        sys.stdin = _ClosedStdin()
    elif not sys.stdin.isatty() and hasattr(sys.stdin, "buffer"):
        sys.stdin = _StrictStdin(sys.stdin.buffer)
    previous = _handle_sigterm(_on_sigterm)
    try:
        code = body()
        if sys.stdout is not None:
            # What is still buffered meets a reader that went away here (141), not in the
            # interpreter's final flush (which exits 120 with a traceback-like message).
            sys.stdout.flush()
        return code
    except BrokenPipeError:
        # Nothing can be said on a closed stdout; point it at /dev/null so the interpreter's
        # final flush does not fail again.
        _discard_pending()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return BROKEN_PIPE
    except KeyboardInterrupt as exc:
        _discard_pending()
        stop = (
            errors.Terminated("terminated (SIGTERM)")
            if isinstance(exc, Terminated)
            else errors.Interrupted("interrupted")
        )
        report(stop, as_json=as_json(), exec_shape=exec_shape())
        return stop.exit_code
    except Exception as exc:  # the one place unforeseen failures become a message
        durable = sys.modules.get("terminai_apts.durable")
        target = durable.pending_target() if durable is not None else None
        if isinstance(exc, OSError) and target is not None:
            durable.name_in(exc, target)  # type: ignore[union-attr]  # a full device while writing it: name it
        _discard_pending()
        if os.environ.get("TERMINAI_DEBUG") == "1":
            import traceback  # noqa: PLC0415  (only when asked for)

            traceback.print_exception(exc, file=sys.stderr)
        err = _classify(exc, subject())
        report(err, as_json=as_json(), exec_shape=exec_shape())
        return err.exit_code
    finally:
        _handle_sigterm(previous)
