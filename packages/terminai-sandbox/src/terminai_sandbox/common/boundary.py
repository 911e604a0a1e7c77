"""The error boundary of ``terminai-sandbox``: every failure becomes one error line and its code.

Whatever a command raises (a deliberate :class:`~terminai_sandbox.errors.SandboxError`, a
file that cannot be used, Ctrl-C or SIGTERM, a closed stdout, a bug), :func:`fail` removes
the temporary files not yet renamed into place, prints one ``error:`` line and a ``hint:``
on stderr and, under ``--json``, the JSON error object of docs/EXIT_CODES.md on stdout
(:func:`report`, the one writer of that object), and returns the documented exit code.

Three places call it, each where its failures surface: the click group around a command
(:mod:`terminai_sandbox.cli`), the console script around loading one
(:mod:`terminai_sandbox.console`, which also reports click's usage errors through
:func:`report`), and the launch kernel's click-free ``run`` path
(:mod:`terminai_sandbox.launch.entry`). Standard library only: the kernel imports it on
every session start.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from terminai_sandbox.errors import SandboxError, as_sandbox_error

TYPE_CHECKING = False  # not `from typing import ...`: a launch never imports typing (~3 ms)
if TYPE_CHECKING:
    from types import ModuleType
    from typing import TextIO

BROKEN_PIPE = 141  # 128 + SIGPIPE, as a shell reports a writer whose reader went away


def json_asked(argv: Sequence[str]) -> bool:
    """Whether the command line asks for ``--json`` (before any ``--``).

    ``kube``'s stdout is objects for ``kubectl apply -f -``: an error never goes there.
    """
    options = list(argv[: list(argv).index("--")] if "--" in argv else argv)
    return "--json" in options and "kube" not in options[:1]


def error_object(err: SandboxError) -> str:
    """The JSON error object: one line, ASCII, as scripts parsing stdout read it."""
    import json  # noqa: PLC0415  (only for a failure; a session start never loads it otherwise)

    body = {"ok": False, "error": {"message": err.message, "hint": err.hint, "exit_code": err.exit_code}}
    return json.dumps(body, ensure_ascii=True)


def _write(stream: TextIO | None, text: str) -> None:
    # A reader that went away, or a stream that is closed, cannot be told more: the exit code still says it.
    if stream is None:
        return
    try:
        stream.write(text + "\n")
        stream.flush()
    except (OSError, ValueError):
        pass


def report(err: SandboxError, *, as_json: bool) -> int:
    """Say ``err`` on stderr (under ``as_json`` also its JSON object on stdout); its exit code."""
    if as_json:
        _write(sys.stdout, error_object(err))
    _write(sys.stderr, err.render())
    return err.exit_code


def _durable() -> ModuleType | None:
    # The atomic writer, if anything loaded it: a process that never loaded it has no
    # temporary file pending, and a refused session start need not load it to say so.
    return sys.modules.get("terminai_apts.durable")


def closed_stdout() -> int:
    """The reader of stdout went away (``... | head``): nothing more can be said there, and the
    interpreter's last flush must not fail again, so stdout becomes /dev/null; exit 141."""
    durable = _durable()
    if durable is not None:
        durable.discard_pending()
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return BROKEN_PIPE


def fail(exc: BaseException, *, debug: bool, as_json: bool | None = None) -> int:
    """Report ``exc`` as one error line and its hint; the exit code to end with.

    Temporary files not yet renamed into place are removed first (a failed or interrupted
    write leaves nothing behind). ``as_json``: what a command that parsed its options
    says; None reads the command line's words. ``debug`` prints the traceback of a failure
    that is not a :class:`SandboxError` first.
    """
    if isinstance(exc, BrokenPipeError):
        return closed_stdout()
    durable = _durable()
    if durable is not None:
        target = durable.pending_target()
        if isinstance(exc, OSError) and target is not None:
            durable.name_in(exc, target)  # a full device while writing it: name the file, not "a file"
        durable.discard_pending()
    err = as_sandbox_error(exc)
    if debug and not isinstance(exc, (SandboxError, KeyboardInterrupt)):
        import traceback  # noqa: PLC0415  (only when asked for)

        traceback.print_exception(exc, file=sys.stderr)
    return report(err, as_json=json_asked(sys.argv[1:]) if as_json is None else as_json)
