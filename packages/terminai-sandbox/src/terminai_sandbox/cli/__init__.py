"""``terminai-sandbox``: the click group; a command's failure goes to the tool's one error
boundary (:func:`terminai_sandbox.common.boundary.fail`), which turns it into its exit code.

Each sub-module under :mod:`terminai_sandbox.cli` defines the commands of one part
(build, supply chain, launcher, ...). Commands parse, call one library function and print;
they never decide exit codes themselves.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from typing import Any

import click

from terminai_sandbox._version import __version__
from terminai_sandbox.common import deadlines
from terminai_sandbox.common.boundary import fail

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

# What 'terminai-sandbox --help' lists, so that listing loads no command module (all of them
# take ~0.5 s to import). Each is the command's own short help; a unit test keeps them equal.
SUMMARIES = {
    "attest": "Attach a signed in-toto attestation to REFERENCE by digest.",
    "audit": "Inspect the launcher's hash-chained audit ledger.",
    "build": "Build the sandbox image from pinned inputs into dist/X.Y.Z and load it.",
    "contract": "Inspect and compare T-APTS contract manifests.",
    "contracts": "Run the T-APTS contract suite inside IMAGE (non-root, read-only, --network none).",
    "engine": "Check the container engine (scripts/ensure-engine installs and starts one).",
    "keygen": "Write an ECDSA P-256 key pair in cosign's formats (password: COSIGN_PASSWORD or prompt).",
    "kube": "Verify REFERENCE like 'verify', then print its session as Kubernetes objects.",
    "lock": "Resolve each platform's Debian set and wheels into its locks (or check them).",
    "preflight": "Run preflight steps 0-6 and report each one.",
    "provenance": "Write the SLSA v1 provenance predicate of the image in OCI layout LAYOUT.",
    "push": "Push an OCI image layout to REFERENCE (repo[:tag][@digest]) blob by blob; prints the manifest digest.",
    "release": "Build → contracts → describe → push by digest → sign → verify → tag → dist/X.Y.Z/release.json.",
    "run": "Preflight, then COMMAND in a hardened container of the verified image (by digest).",
    "sbom": "Write the CycloneDX 1.6 SBOM of the image in OCI layout LAYOUT (validated, deterministic).",
    "sign": "Sign REFERENCE by digest (a tag is resolved once) in cosign's .sig layout.",
    "verify": "Verify REFERENCE's signatures (the tag is resolved once; verification is by digest).",
}

EXIT_CODES_HELP = """\b
Exit codes (shared with terminai-apts; docs/EXIT_CODES.md):
  0   success
  1   unexpected failure
  2   usage error (bad command line)
  3   configuration error (environment variable, flag, file; a path missing, read-only, full)
  4   container engine unavailable
  5   image build failed          6  lock mismatch      7  build not reproducible
  8   contract not satisfied      9  registry error    10  signing failed
  11  verification failed        12  SBOM error        13  launch refused
  15  audit ledger broken        16  release failed
  130 interrupted (Ctrl-C)       141 stdout closed by its reader   143 terminated (SIGTERM)
Every failure prints one 'error:' line and a hint ('--json': also a JSON object on stdout);
--debug adds the traceback of an unexpected failure.
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

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from :data:`SUMMARIES` and the commands defined here, loading no module."""
        rows = {**SUMMARIES, **{name: c.get_short_help_str(200) for name, c in self.commands.items()}}
        limit = formatter.width - 6 - max(len(name) for name in rows)
        shortened = [(name, click.Command(name, help=text).get_short_help_str(limit)) for name, text in rows.items()]
        with formatter.section("Commands"):
            formatter.write_dl(sorted(shortened))

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        if name is not None and ctx.parent is None:
            # The command's total network deadline starts as it does (docs/DEADLINES.md); a
            # malformed TERMINAI_COMMAND_TIMEOUT is refused here, before any request.
            deadlines.begin(name, deadlines.command_seconds(os.environ, name))
        return name, command, rest

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise  # click's own: --help, usage errors (exit 2)
        except (Exception, KeyboardInterrupt) as exc:  # a command's failure: to the tool's one boundary
            parsed_json = ctx.obj.get("as_json") if isinstance(ctx.obj, dict) else None
            sys.exit(fail(exc, debug=bool(ctx.obj and ctx.obj.get("debug")), as_json=parsed_json))
        finally:
            if ctx.parent is None:  # the deadline is this command's, not the next caller's in this process
                deadlines.end()


@click.group(cls=_Group, epilog=EXIT_CODES_HELP, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="terminai-sandbox")
@click.option(
    "--debug",
    is_flag=True,
    help="print the traceback of an unexpected failure (must come first: terminai-sandbox --debug COMMAND ...)",
)
@click.option("-q", "--quiet", is_flag=True, help="print only results and errors (no progress lines)")
@click.option("-v", "--verbose", is_flag=True, help="also print the traceback of an unexpected failure")
@click.pass_context
def main(ctx: click.Context, debug: bool, quiet: bool, verbose: bool) -> None:
    """Build, prove, sign, verify and launch the Sovereign Sandbox image."""
    # The console script reads --debug before click does (terminai_sandbox.console); it is
    # declared here so that --help documents it.
    del debug
    from terminai_sandbox.cli import progress  # noqa: PLC0415

    progress.set_quiet(quiet)
    if verbose and isinstance(ctx.obj, dict):
        ctx.obj["debug"] = True


@main.command("version")
@click.option("--json", "as_json", is_flag=True, help="print the version as one JSON object")
def version_cmd(as_json: bool) -> None:
    """Print the version."""
    click.echo(json.dumps({"ok": True, "version": __version__}) if as_json else f"terminai-sandbox {__version__}")


@main.command("help")
@click.argument("topic", nargs=-1)
@click.pass_context
def help_cmd(ctx: click.Context, topic: tuple[str, ...]) -> None:
    """Show the help of terminai-sandbox or of one command (help COMMAND [SUBCOMMAND])."""
    group = ctx.parent.command if ctx.parent else main
    parent = ctx.parent or ctx
    command: click.Command = group
    for word in topic:
        sub = command.get_command(parent, word) if isinstance(command, click.Group) else None
        if sub is None:
            raise click.UsageError(f"no command {' '.join(topic)!r}", ctx=ctx)
        parent = click.Context(sub, info_name=word, parent=parent)
        command = sub
    click.echo(parent.get_help())


@main.command("completion")
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]), metavar="SHELL")
def completion_cmd(shell: str) -> None:
    """Print the shell completion script for SHELL.

    \b
    bash: source <(terminai-sandbox completion bash)
    zsh:  source <(terminai-sandbox completion zsh)
    fish: terminai-sandbox completion fish | source
    """
    from click.shell_completion import get_completion_class  # noqa: PLC0415

    completion = get_completion_class(shell)
    assert completion is not None  # the Choice above admits only the shells click knows
    click.echo(completion(main, {}, "terminai-sandbox", "_TERMINAI_SANDBOX_COMPLETE").source())
