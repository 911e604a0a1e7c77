"""The ``terminai-sandbox`` console script.

Every session start waits on ``run``, so a ``run`` command line that
:func:`~terminai_sandbox.launch.options.parse_run` accepts goes straight to the launcher:
click is not imported (it is a fifth of a warm launch's own cost), and once the session's
exit code is in the ledger the process ends without the interpreter's teardown. Everything
else (other commands, ``run --help``, a command line the shared option table cannot parse)
goes to the click group in :mod:`terminai_sandbox.cli`, which handles it as usual. Errors
become the same messages and exit codes on both paths.

No path prints a traceback unless asked: an exception that is not a
:class:`~terminai_sandbox.errors.SandboxError` becomes
:class:`~terminai_sandbox.errors.UnexpectedError` (exit 1, one line and a hint). With
``--debug`` as the first argument the traceback follows the message.
"""

from __future__ import annotations

import os
import sys

DEBUG_FLAG = "--debug"


def _say(line: str) -> None:
    sys.stderr.write(line + "\n")


def _unexpected(exc: BaseException, debug: bool) -> int:
    """Report an exception nobody turned into a :class:`SandboxError`; the exit code to use."""
    from terminai_sandbox.errors import UnexpectedError  # noqa: PLC0415

    if debug:
        import traceback  # noqa: PLC0415  (only when asked for)

        traceback.print_exception(exc, file=sys.stderr)
    _say(UnexpectedError.wrapping(exc).render())
    return UnexpectedError.exit_code


def _launch(args: list[str], *, debug: bool = False) -> int | None:
    """Run a session for ``run ARGS``; None when ``parse_run`` declines the command line."""
    from terminai_sandbox.errors import Interrupted, SandboxError  # noqa: PLC0415  (not needed by click's path)
    from terminai_sandbox.launch import session  # noqa: PLC0415
    from terminai_sandbox.launch.options import limits_from, parse_run, request_from  # noqa: PLC0415

    params = parse_run(args)
    if params is None:
        return None
    try:
        return session.run(
            request_from(params), params["command"], limits=limits_from(params), env=os.environ, say=_say
        )
    except SandboxError as exc:
        _say(exc.render())
        return exc.exit_code
    except KeyboardInterrupt:
        _say(Interrupted("interrupted").render())
        return Interrupted.exit_code
    except Exception as exc:  # the one place unforeseen failures become a message
        return _unexpected(exc, debug)


def main() -> None:
    debug = sys.argv[1:2] == [DEBUG_FLAG]
    if debug:
        del sys.argv[1]
    if sys.argv[1:2] == ["run"]:
        code = _launch(sys.argv[2:], debug=debug)
        if code is not None:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code & 0xFF)
    try:
        from terminai_sandbox.cli import main as cli  # noqa: PLC0415

        cli.main(prog_name="terminai-sandbox")
    except SystemExit:
        raise
    except Exception as exc:  # the one place unforeseen failures become a message
        sys.stdout.flush()
        sys.exit(_unexpected(exc, debug))
