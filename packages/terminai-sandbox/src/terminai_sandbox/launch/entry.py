"""``terminai-sandbox run`` without click: the kernel's own way in, and its error boundary.

Every session start waits on ``run``, so the console script (:mod:`terminai_sandbox.console`)
hands a ``run`` command line here before it imports click, which alone costs a warm start
~45 ms on a loaded machine. :func:`launch` parses it with the launch options' one parser
(:mod:`.options`, which the click commands use too); a mistake is reported here as click
would report it (exit 2), and only a request for help is declined, for click to print.

The boundary is the same as the click group's: a :class:`~terminai_sandbox.errors.SandboxError`
becomes its message, hint and exit code; an interrupt exit 130; anything else
:class:`~terminai_sandbox.errors.UnexpectedError` (exit 1, one line and a hint), with the
traceback first when ``--debug`` was given. Under ``--json`` the error is also one JSON
object on stdout, as the click group prints it (``docs/EXIT_CODES.md``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from terminai_sandbox.errors import SandboxError, as_sandbox_error
from terminai_sandbox.launch import session
from terminai_sandbox.launch.options import CommandLineError, HelpWanted, limits_from, parse_run, request_from

USAGE_EXIT = 2  # a bad command line, as click exits for one


def say(line: str) -> None:
    sys.stderr.write(line + "\n")


def unexpected(exc: BaseException, debug: bool, as_json: bool = False) -> int:
    """Report an exception nobody turned into a :class:`SandboxError`; the exit code to use."""
    if debug:
        import traceback  # noqa: PLC0415  (only when asked for)

        traceback.print_exception(exc, file=sys.stderr)
    return report(as_sandbox_error(exc), as_json)  # a file that cannot be used is named, not "unexpected"


def report(err: SandboxError, as_json: bool) -> int:
    """Say ``err`` (and under ``--json`` print it as the click group's JSON error object); its exit code."""
    if as_json:
        import json  # noqa: PLC0415  (only for a failure)

        body = {"ok": False, "error": {"message": err.message, "hint": err.hint, "exit_code": err.exit_code}}
        try:  # noqa: SIM105  (contextlib is not loaded on a session start)
            sys.stdout.write(json.dumps(body, ensure_ascii=True) + "\n")
        except (OSError, ValueError):
            pass
    say(err.render())
    return err.exit_code


def launch(args: Sequence[str], *, debug: bool = False) -> int | None:
    """Run a session for ``run ARGS``; its exit code, or None when ARGS ask for help (click prints it)."""
    try:
        params = parse_run(args)
    except HelpWanted:
        return None
    except CommandLineError as exc:  # worded and hinted as the click group words a usage error
        options = list(args[: list(args).index("--")] if "--" in args else args)
        usage = SandboxError(str(exc), hint="see 'terminai-sandbox run --help'")
        usage.exit_code = USAGE_EXIT
        return report(usage, "--json" in options)
    as_json = bool(params["as_json"])
    try:
        return session.run(request_from(params), params["command"], limits=limits_from(params), env=os.environ, say=say)
    except SandboxError as exc:
        return report(exc, as_json)
    except KeyboardInterrupt as exc:  # worded as the click group words it: message and hint
        return report(as_sandbox_error(exc), as_json)
    except Exception as exc:  # the one place unforeseen failures of a launch become a message
        return unexpected(exc, debug, as_json)
