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
from terminai_sandbox.errors import Interrupted, SandboxError

# Modules that attach commands to ``main``; each exposes ``register(group)``. They are
# imported only when one of their commands runs (the SBOM stack alone takes ~1 s to
# import, which a session launch must not pay). Names not listed here load every module.
_COMMAND_MODULES = {
    "terminai_sandbox.cli.contract_cmd": ("contract",),
    "terminai_sandbox.cli.build_cmd": ("build", "lock", "contracts", "engine"),
    "terminai_sandbox.cli.supply_cmd": ("keygen", "push", "sign", "verify", "attest"),
    "terminai_sandbox.cli.release_cmd": ("release",),
    "terminai_sandbox.cli.describe_cmd": ("sbom", "provenance"),
    "terminai_sandbox.cli.launch_cmd": ("preflight", "run", "audit"),
    "terminai_sandbox.cli.kube_cmd": ("kube",),
}

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
An unexpected failure prints one line and a hint (exit 1); --debug adds the traceback.
"""


class _Group(click.Group):
    """Loads commands lazily; turns every :class:`SandboxError` into its message, hint and exit code."""

    def _load(self, module_name: str) -> None:
        holder = click.Group()
        importlib.import_module(module_name).register(holder)
        for name, command in holder.commands.items():
            self.add_command(command, name)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands:
            owners = [m for m, names in _COMMAND_MODULES.items() if cmd_name in names] or list(_COMMAND_MODULES)
            for module_name in owners:
                self._load(module_name)
        return self.commands.get(cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        for module_name in _COMMAND_MODULES:
            self._load(module_name)
        return sorted(self.commands)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except SandboxError as exc:
            click.echo(exc.render(), err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo(Interrupted("interrupted").render(), err=True)
            sys.exit(Interrupted.exit_code)


@click.group(cls=_Group, epilog=EXIT_CODES_HELP, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="terminai-sandbox")
@click.option(
    "--debug",
    is_flag=True,
    help="print the traceback of an unexpected failure (must come first: terminai-sandbox --debug COMMAND ...)",
)
def main(debug: bool) -> None:
    """Build, prove, sign, verify and launch the Sovereign Sandbox image."""
    # The console script reads --debug before click does (terminai_sandbox.console); it is
    # declared here so that --help documents it.
    del debug
