"""The ``terminai-sandbox`` console script.

Every session start waits on ``run``, so a ``run`` command line that
:func:`~terminai_sandbox.launcher.options.parse_run` accepts goes straight to the launcher:
click is not imported (it is a fifth of a warm launch's own cost), and once the session's
exit code is in the ledger the process ends without the interpreter's teardown. Everything
else (other commands, ``run --help``, a command line the shared option table cannot parse)
goes to the click group in :mod:`terminai_sandbox.cli`, which handles it as usual. Errors
become the same messages and exit codes on both paths.
"""

from __future__ import annotations

import os
import sys


def _say(line: str) -> None:
    sys.stderr.write(line + "\n")


def _launch(args: list[str]) -> int | None:
    """Run a session for ``run ARGS``; None when ``parse_run`` declines the command line."""
    from terminai_sandbox.errors import Interrupted, SandboxError  # noqa: PLC0415  (not needed by click's path)
    from terminai_sandbox.launcher import session  # noqa: PLC0415
    from terminai_sandbox.launcher.options import limits_from, parse_run, request_from  # noqa: PLC0415

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


def main() -> None:
    if sys.argv[1:2] == ["run"]:
        code = _launch(sys.argv[2:])
        if code is not None:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code & 0xFF)
    from terminai_sandbox.cli import main as cli  # noqa: PLC0415

    cli()
