"""``terminai-sandbox preflight | run | audit verify``: launch verified, hardened sessions.

The commands' options are generated from the launch kernel's option tables
(:mod:`terminai_sandbox.launch.options`), which click uses for the help only: the raw
arguments go to the kernel's one parser, and the commands call its session
(:mod:`terminai_sandbox.launch.session`). The console script hands ``run`` command lines to
the kernel's own entry (:mod:`terminai_sandbox.launch.entry`) before click is imported;
these commands serve ``run --help`` and callers that invoke the click group directly.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from terminai_sandbox.cli import params
from terminai_sandbox.cli.json_output import JSON_OPTION, emit
from terminai_sandbox.cli.option_table import table_options
from terminai_sandbox.launch import audit, options, session
from terminai_sandbox.launch.options import (
    PREFLIGHT_OPTIONS,
    RUN_OPTIONS,
    Option,
    limits_from,
    request_from,
)


def _say(line: str) -> None:
    click.echo(line, err=True)


class _KernelParsed(click.Command):
    """A command whose arguments the launch kernel parses; click declares the options for the help.

    ``table`` is the kernel's option table; ``takes_command`` says whether arguments after
    the options are the session's command (``run``) or a mistake (``preflight``).
    """

    def __init__(self, *args: Any, table: Sequence[Option], takes_command: bool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.table = tuple(table)
        self.takes_command = takes_command

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            params = options.parse(args, self.table, command=self.takes_command)
        except options.HelpWanted:
            if not ctx.resilient_parsing:  # completion asks for the parameters, never the help
                click.echo(ctx.get_help(), color=ctx.color)
                ctx.exit()
            params = options.defaults(self.table)
        except options.CommandLineError as exc:
            if not ctx.resilient_parsing:
                raise click.UsageError(str(exc), ctx) from None
            params = options.defaults(self.table)
        if self.takes_command:
            params.setdefault("command", ())
        if isinstance(ctx.obj, dict):  # an error's JSON object follows the parsed --json, not a word of COMMAND
            ctx.obj["as_json"] = bool(params.get("as_json"))
        ctx.params.update(params)
        ctx.args = []
        return []


@click.command("preflight", cls=_KernelParsed, table=PREFLIGHT_OPTIONS, takes_command=False)
@table_options(PREFLIGHT_OPTIONS)
def preflight_cmd(deep: bool, **params: Any) -> None:
    """Run preflight steps 0-6 and report each one.

    The engine must answer within 5 s (TERMINAI_ENGINE_TIMEOUT=SECONDS); registry requests
    within 30 s each (TERMINAI_REGISTRY_TIMEOUT), 120 s in all (TERMINAI_COMMAND_TIMEOUT).
    See docs/DEADLINES.md.
    """
    request = request_from(params)
    config, verified, _, results = session.prepare(request, env=os.environ, say=_say, deep=deep)
    if request.as_json:
        click.echo(
            json.dumps(
                {
                    "image": verified.pinned,
                    "network": config.network.record(),
                    "steps": [
                        {
                            "step": r.number,
                            "name": r.name,
                            "ok": r.ok,
                            "detail": r.detail,
                            "seconds": round(r.seconds, 4),
                        }
                        for r in results
                    ],
                },
                indent=2,
            )
        )
    else:
        click.echo(f"verified: {verified.pinned}")


# Options end at the first argument that is not one (as in `docker run`), so everything after
# the command's name belongs to the command (the kernel's parser; the setting keeps the help's
# usage line right).
@click.command(
    "run",
    cls=_KernelParsed,
    table=RUN_OPTIONS,
    takes_command=True,
    context_settings={"allow_interspersed_args": False},
)
@table_options(RUN_OPTIONS)
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def run_cmd(command: tuple[str, ...], **params: Any) -> None:
    """Preflight, then COMMAND in a hardened container of the verified image (by digest)."""
    sys.exit(session.run(request_from(params), command, limits=limits_from(params), env=os.environ, say=_say))


@click.group("audit")
def audit_group() -> None:
    """Inspect the launcher's hash-chained audit ledger."""


@audit_group.command("verify")
@click.option(
    "--ledger",
    type=params.InputPath(exists=True),
    default=None,
    help="ledger file (default: the one in the state dir; absent there means no launch yet)",
)
@JSON_OPTION
def audit_verify(ledger: Path | None, as_json: bool) -> None:
    """Check every record's hash chain; fails naming the first edited, removed or reordered line."""
    path = ledger or audit.default_path(os.environ)
    count = audit.verify(path)
    emit(as_json, {"ledger": str(path), "records": count}, f"audit ledger {path}: {count} records, chain intact")


def register(group: click.Group) -> None:
    for command in (preflight_cmd, run_cmd, audit_group):
        group.add_command(command)
