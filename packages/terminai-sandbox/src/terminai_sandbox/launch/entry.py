"""``terminai-sandbox run`` without click: the kernel's own way in, and its error boundary.

Every session start waits on ``run``, so the console script (:mod:`terminai_sandbox.console`)
hands a ``run`` command line here before it imports click, which alone costs a warm start
~45 ms on a loaded machine. :func:`launch` parses it with the launch options' one parser
(:mod:`.options`, which the click commands use too); a mistake is reported here as click
would report it (exit 2), and only a request for help is declined, for click to print.

A failure goes to the tool's one error boundary, the click group's too
(:func:`terminai_sandbox.common.boundary.fail`): a :class:`~terminai_sandbox.errors.SandboxError`
becomes its message, hint and exit code; an interrupt exit 130; anything else
:class:`~terminai_sandbox.errors.UnexpectedError` (exit 1, one line and a hint), with the
traceback first when ``--debug`` was given. Under ``--json`` the error is also one JSON
object on stdout (``docs/EXIT_CODES.md``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from terminai_sandbox.common.boundary import fail, report
from terminai_sandbox.errors import SandboxError
from terminai_sandbox.launch import session
from terminai_sandbox.launch.options import CommandLineError, HelpWanted, limits_from, parse_run, request_from

USAGE_EXIT = 2  # a bad command line, as click exits for one


def say(line: str) -> None:
    sys.stderr.write(line + "\n")


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
        return report(usage, as_json="--json" in options)
    as_json = bool(params["as_json"])
    from terminai_sandbox.common import deadlines  # noqa: PLC0415  (stdlib only, as the kernel is)

    try:
        deadlines.begin("run", deadlines.command_seconds(os.environ, "run"))
        return session.run(request_from(params), params["command"], limits=limits_from(params), env=os.environ, say=say)
    except (Exception, KeyboardInterrupt) as exc:  # a launch's failure: to the tool's one boundary
        return fail(exc, debug=debug, as_json=as_json)
    finally:
        deadlines.end()  # the launch's own, not the next caller's in this process
