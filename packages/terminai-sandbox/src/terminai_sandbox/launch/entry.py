"""``terminai-sandbox run`` without click: the kernel's own way in, and its error boundary.

Every session start waits on ``run``, so the console script (:mod:`terminai_sandbox.console`)
hands a ``run`` command line here before it imports click, which alone costs a warm start
~45 ms on a loaded machine. :func:`launch` parses it with the launch options' one parser
(:mod:`.options`, which the click commands use too); a mistake is reported here as click
would report it (exit 2), and only a request for help is declined, for click to print.

The boundary is the same as the click group's: a :class:`~terminai_sandbox.errors.SandboxError`
becomes its message, hint and exit code; an interrupt exit 130; anything else
:class:`~terminai_sandbox.errors.UnexpectedError` (exit 1, one line and a hint), with the
traceback first when ``--debug`` was given.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from terminai_sandbox.errors import Interrupted, SandboxError, as_sandbox_error
from terminai_sandbox.launch import session
from terminai_sandbox.launch.options import CommandLineError, HelpWanted, limits_from, parse_run, request_from

USAGE_EXIT = 2  # a bad command line, as click exits for one


def say(line: str) -> None:
    sys.stderr.write(line + "\n")


def unexpected(exc: BaseException, debug: bool) -> int:
    """Report an exception nobody turned into a :class:`SandboxError`; the exit code to use."""
    if debug:
        import traceback  # noqa: PLC0415  (only when asked for)

        traceback.print_exception(exc, file=sys.stderr)
    err = as_sandbox_error(exc)  # a file that cannot be used is named, not "unexpected"
    say(err.render())
    return err.exit_code


def launch(args: Sequence[str], *, debug: bool = False) -> int | None:
    """Run a session for ``run ARGS``; its exit code, or None when ARGS ask for help (click prints it)."""
    try:
        params = parse_run(args)
    except HelpWanted:
        return None
    except CommandLineError as exc:  # worded and hinted as the click group words a usage error
        say(f"error: {exc}")
        say("  hint: see 'terminai-sandbox run --help'")
        return USAGE_EXIT
    try:
        return session.run(request_from(params), params["command"], limits=limits_from(params), env=os.environ, say=say)
    except SandboxError as exc:
        say(exc.render())
        return exc.exit_code
    except KeyboardInterrupt:
        say(Interrupted("interrupted").render())
        return Interrupted.exit_code
    except Exception as exc:  # the one place unforeseen failures of a launch become a message
        return unexpected(exc, debug)
