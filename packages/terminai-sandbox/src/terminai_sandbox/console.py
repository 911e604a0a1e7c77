"""The ``terminai-sandbox`` console script: ``run`` to the launch kernel, everything else to click.

A ``run`` command line goes to :func:`terminai_sandbox.launch.entry.launch` before click is
imported; once the session's exit code is in the ledger the process ends without the
interpreter's teardown. Everything else (other commands, ``run --help``, a command line the
kernel's option table cannot parse) goes to the click group in :mod:`terminai_sandbox.cli`.
Errors become the same messages and exit codes on both paths.

No path prints a traceback unless asked: an exception that is not a
:class:`~terminai_sandbox.errors.SandboxError` becomes
:class:`~terminai_sandbox.errors.UnexpectedError` (exit 1, one line and a hint). With
``--debug`` as the first argument the traceback follows the message.
"""

from __future__ import annotations

import gc
import os
import sys

DEBUG_FLAG = "--debug"


def main() -> None:
    from terminai_sandbox.errors import stop_on_sigterm  # noqa: PLC0415  (the kernel loads it anyway)

    stop_on_sigterm()  # SIGTERM ends a command (a session start too) as Ctrl-C does: cleaned up, exit 143
    debug = sys.argv[1:2] == [DEBUG_FLAG]
    if debug:
        del sys.argv[1]
    if sys.argv[1:2] == ["run"]:
        # No cyclic garbage collection while the kernel loads and preflight runs: its passes
        # over the freshly imported modules find nothing to free (~1 ms of CPU per start),
        # and a launch allocates a few MB at most before it ends with os._exit.
        gc.disable()
        from terminai_sandbox.launch import early  # noqa: PLC0415  (click's path never loads it)

        early.ask(sys.argv[2:], os.environ)  # the engine answers while the kernel loads
        from terminai_sandbox.launch.entry import launch  # noqa: PLC0415

        try:
            code = launch(sys.argv[2:], debug=debug)
        finally:
            early.forget()
            gc.enable()  # for click's path (``run --help``), and for a caller in the same process
        if code is not None:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code & 0xFF)
    if sys.stdin is None:
        # A closed stdin (``<&-``): reading it is then an ordinary end of input, not a crash.
        sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115  (lives as long as the process)
    try:
        from terminai_sandbox.cli import main as cli  # noqa: PLC0415

        code = cli.main(prog_name="terminai-sandbox", obj={"debug": debug}, standalone_mode=False)
    except SystemExit as exc:
        if exc.code == 1 and type(sys.stdout).__name__.endswith("PacifyFlushWrapper"):
            # click's own answer to a closed stdout outside a command (the --help text): exit 1
            # with nothing said. Ours is the documented 141 (docs/EXIT_CODES.md).
            from terminai_sandbox.common.boundary import BROKEN_PIPE  # noqa: PLC0415

            sys.exit(BROKEN_PIPE)
        raise
    except click_usage_errors() as exc:  # a bad command line: the same one error line and a hint (exit 2)
        sys.exit(usage_error(exc))
    except (Exception, KeyboardInterrupt) as exc:  # a failure outside any command (loading one, Ctrl-C early)
        from terminai_sandbox.common.boundary import fail  # noqa: PLC0415

        try:  # noqa: SIM105  (contextlib is not loaded on a session start)
            sys.stdout.flush()
        except (OSError, ValueError):
            pass
        sys.exit(fail(exc, debug=debug))
    try:
        sys.stdout.flush()  # what is still buffered meets a closed reader here, not at exit
    except BrokenPipeError:
        from terminai_sandbox.common.boundary import closed_stdout  # noqa: PLC0415

        sys.exit(closed_stdout())
    except (OSError, ValueError):
        pass
    sys.exit(code if isinstance(code, int) else 0)


def click_usage_errors() -> tuple[type[BaseException], ...]:
    import click  # noqa: PLC0415  (already loaded by the group)

    return (click.ClickException,)


def usage_error(exc: BaseException) -> int:
    """Print click's usage error as ``error:`` and a hint naming the command's help; its exit code."""
    import click  # noqa: PLC0415

    from terminai_sandbox.common.boundary import json_asked, report  # noqa: PLC0415
    from terminai_sandbox.errors import SandboxError  # noqa: PLC0415

    assert isinstance(exc, click.ClickException)
    ctx = getattr(exc, "ctx", None)
    where = ctx.command_path if ctx is not None else "terminai-sandbox"
    if type(exc).__name__ == "NoArgsIsHelpError":  # a bare command name: its help, as click shows it
        click.echo(exc.format_message(), err=True)
        return exc.exit_code
    # A parameter type may know the remedy (cli/params.py: "the path is empty", say); such a
    # malformed value stays a usage error (2).
    own_hint = getattr(exc, "hint", None)
    code, hint = exc.exit_code, own_hint or f"see '{where} --help'"
    param = getattr(exc, "param", None)
    path_refused = isinstance(exc, click.BadParameter) and not isinstance(exc, click.MissingParameter)
    if path_refused and not own_hint and param is not None and isinstance(param.type, click.Path):
        # A path that is missing, or a directory where a file is expected (or the reverse), is a
        # refused file (exit 3, docs/EXIT_CODES.md), whichever layer noticed it first.
        code, hint = 3, "check the path: it must exist and be of the kind the option names (file or directory)"
    err = SandboxError(exc.format_message(), hint=hint)
    err.exit_code = code
    return report(err, as_json=json_asked(sys.argv[1:]))
