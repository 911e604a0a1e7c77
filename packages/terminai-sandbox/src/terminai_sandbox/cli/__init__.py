"""``terminai-sandbox``: the click group and the single place errors become exit codes.

Each sub-module under :mod:`terminai_sandbox.cli` defines the commands of one part
(build, supply chain, launcher, ...). Commands parse, call one library function and print;
they never decide exit codes themselves.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from terminai_sandbox._version import __version__
from terminai_sandbox.errors import SandboxError

# Modules that attach commands to ``main``; each exposes ``register(group)``.
_COMMAND_MODULES = (
    "terminai_sandbox.cli.contract_cmd",
    "terminai_sandbox.cli.build_cmd",
    "terminai_sandbox.cli.supply_cmd",
    "terminai_sandbox.cli.launch_cmd",
)

EXIT_CODES_HELP = """\b
Exit codes:
  0   success
  1   unexpected failure
  2   usage error (bad command line)
  3   configuration error (environment variable, flag, file)
  4   container engine unavailable
  5   image build failed          6  lock mismatch      7  build not reproducible
  8   contract not satisfied      9  registry error    10  signing failed
  11  verification failed        12  SBOM error        13  launch refused
  14  in-image health check failed  15  audit ledger broken  16  release failed
  130 interrupted
"""


class _Group(click.Group):
    """Turns every :class:`SandboxError` into its message, hint and stable exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except SandboxError as exc:
            click.echo(exc.render(), err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("error: interrupted", err=True)
            sys.exit(130)


@click.group(cls=_Group, epilog=EXIT_CODES_HELP, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="terminai-sandbox")
def main() -> None:
    """Build, prove, sign, verify and launch the Sovereign Sandbox image."""


def _register_all() -> None:
    for name in _COMMAND_MODULES:
        module = importlib.import_module(name)
        module.register(main)


_register_all()
