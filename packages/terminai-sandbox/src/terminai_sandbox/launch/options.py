"""The options of ``preflight`` and ``run``: declared once, parsed once.

The tables below are the only declaration, and :func:`parse` the only parser. The console
script's click-free ``run`` path (:mod:`terminai_sandbox.launch.entry`) calls it directly;
the click commands (:mod:`terminai_sandbox.cli.launch_cmd`) are generated from the same
tables for their help, and hand their raw arguments to :func:`parse` too. The grammar is
click's (a unit test holds it to click's own parser, and each mistake to click's wording):
long options with ``--opt VALUE`` or ``--opt=VALUE``, flags without a value, ``-h``/``--help``;
for ``run`` the command starts after ``--`` or at the first argument that is not an option.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from terminai_apts.records import frozen_record

from terminai_sandbox.common import argpaths
from terminai_sandbox.common.hardening import HARDENED_LIMITS, Limits
from terminai_sandbox.launch.session import LaunchRequest

TYPE_CHECKING = False  # not `from typing import ...`: a launch never imports typing (~3 ms)
if TYPE_CHECKING:
    from typing import Any


@frozen_record
class Option:
    """One long option: its flag, the parameter it sets, and how it takes a value."""

    flag: str
    dest: str
    help: str
    kind: str = "text"  # text | path | flag (no value) | multiple (repeatable text)
    default: str | None = None


# Whom to trust: the one declaration of these options. ``run`` and ``preflight`` parse them
# here; ``verify``, ``kube`` and ``release verify`` get click options generated from this
# table (terminai_sandbox.cli.trust_options); every command reads them with
# terminai_sandbox.common.trust_options.choose_trust.
TRUST_OPTIONS = tuple(
    Option(flag=flag, dest=dest, kind=kind, help=text)
    for flag, dest, kind, text in (
        ("--key", "key_path", "path", "trusted cosign public key (cosign.pub)"),
        ("--certificate-identity", "certificate_identity", "text", "keyless: the signer's certificate identity"),
        ("--certificate-oidc-issuer", "certificate_oidc_issuer", "text", "keyless: the identity's OIDC issuer"),
        ("--policy", "policy_path", "path", "verification policy file"),
    )
)

LAUNCH_OPTIONS = (
    tuple(
        Option(flag=flag, dest=dest, kind=kind, help=text)
        for flag, dest, kind, text in (
            ("--image", "image", "text", "image reference (env TERMINAI_SANDBOX_IMAGE wins)"),
            ("--engine", "engine", "text", "docker or podman (env TERMINAI_SANDBOX wins)"),
            ("--runtime", "runtime", "text", "runc, or runsc/gvisor (TERMINAI_SANDBOX_RUNTIME, if set, must agree)"),
            (
                "--network-policy",
                "network_policy",
                "text",
                "off, allow:HOST[:PORT],...,!HOST or proxy-command:ARGV (SANDBOX_NETWORK, if set, must agree)",
            ),
        )
    )
    + TRUST_OPTIONS
    + tuple(
        Option(flag=flag, dest=dest, kind=kind, help=text)
        for flag, dest, kind, text in (
            ("--unsafe-skip-verify", "unsafe_skip_verify", "flag", "run without verifying (warned and audited)"),
            ("--unsafe-allow-flag", "unsafe_allow_flag", "multiple", "allow a SANDBOX_FLAGS flag off the allowlist"),
            ("--unsafe-allow-env", "unsafe_allow_env", "multiple", "allow a reserved variable (PYTHONPATH, LD_*, …)"),
            ("--allow-floating-tag", "allow_floating_tag", "flag", "accept tags such as 'latest' (resolved once)"),
            ("--insecure-registry", "insecure_registry", "flag", "plain HTTP to a non-loopback registry"),
            ("--json", "as_json", "flag", "report preflight steps as JSON"),
        )
    )
)

LIMIT_OPTIONS = tuple(
    Option(flag=flag, dest=dest, help=text, default=getattr(HARDENED_LIMITS, dest))
    for flag, dest, text in (
        ("--network", "network", "container network (none unless you need one)"),
        ("--memory", "memory", "memory limit of the session"),
        ("--cpus", "cpus", "CPUs the session may use"),
    )
)

RUN_OPTIONS = LAUNCH_OPTIONS + LIMIT_OPTIONS
PREFLIGHT_OPTIONS = (
    *LAUNCH_OPTIONS,
    Option(flag="--deep", dest="deep", kind="flag", help="also run the contract suite inside the image"),
)
HELP_FLAGS = ("-h", "--help")


class CommandLineError(Exception):
    """A command line the table cannot parse; the message words the mistake as click does."""


class HelpWanted(Exception):
    """``-h`` or ``--help`` among the options (and no mistake): the caller prints the help."""


def request_from(params: dict[str, Any]) -> LaunchRequest:
    """The :class:`LaunchRequest` in parsed parameters (extra keys, such as the limits, are ignored)."""
    for option in LAUNCH_OPTIONS:  # a FIFO, device or directory as a key: refused before any step runs
        if option.kind == "path" and params[option.dest] is not None:
            argpaths.check_input(str(params[option.dest]))
    return LaunchRequest(**{o.dest: params[o.dest] for o in LAUNCH_OPTIONS})


def limits_from(params: dict[str, Any]) -> Limits:
    return Limits(**{o.dest: params[o.dest] for o in LIMIT_OPTIONS})


def defaults(table: Sequence[Option]) -> dict[str, Any]:
    """Every option of ``table`` at its default: () if repeatable, False if a flag."""
    return {o.dest: () if o.kind == "multiple" else False if o.kind == "flag" else o.default for o in table}


def _no_such_option(flag: str, known: Sequence[str]) -> CommandLineError:
    message = f"No such option {flag!r}."
    if flag.startswith("--"):
        import difflib  # noqa: PLC0415  (only for a mistake)

        close = sorted(difflib.get_close_matches(flag, known))
        if len(close) == 1:
            message += f" Did you mean {close[0]!r}?"
        elif close:
            message += " (Did you mean one of: " + ", ".join(repr(c) for c in close) + "?)"
    return CommandLineError(message)


def parse(args: Sequence[str], table: Sequence[Option], *, command: bool) -> dict[str, Any]:
    """The parameters ``args`` give the options of ``table``.

    With ``command`` (``run``), options end at ``--`` or at the first argument that is not
    one, and the rest is ``params["command"]``; without it (``preflight``), options and
    arguments may mix and any argument is a mistake. Raises :class:`CommandLineError` for
    a mistake (an unknown option, a flag given a value, a missing value, an extra
    argument), else :class:`HelpWanted` when a help flag was among the options.
    """
    by_flag = {o.flag: o for o in table}
    params = defaults(table)
    extra: list[str] = []
    wants_help = False
    paths: dict[str, tuple[str, str]] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            extra.extend(args[i + 1 :])
            i = len(args)
            break
        if not arg.startswith("-") or arg == "-":
            if command:
                break
            extra.append(arg)
            i += 1
            continue
        i += 1
        if not arg.startswith("--"):  # a cluster of short options: only -h exists
            for letter in arg[1:]:
                if f"-{letter}" not in HELP_FLAGS:
                    raise _no_such_option(f"-{letter}", ())
                wants_help = True
            continue
        flag, has_value, inline = arg.partition("=")
        if flag == "--help":
            if has_value:
                raise CommandLineError(f"Option {flag!r} does not take a value.")
            wants_help = True
            continue
        option = by_flag.get(flag)
        if option is None:
            raise _no_such_option(flag, [*by_flag, "--help"])
        if option.kind == "flag":
            if has_value:
                raise CommandLineError(f"Option {flag!r} does not take a value.")
            params[option.dest] = True
            continue
        if has_value:
            value = inline
        elif i < len(args):
            value, i = args[i], i + 1
        else:
            raise CommandLineError(f"Option {flag!r} requires an argument.")
        if option.kind == "multiple":
            params[option.dest] = (*params[option.dest], value)
        elif option.kind == "path":
            paths[option.dest] = (flag, value)  # the last one wins, in the place of the first
            params[option.dest] = Path(value)
        else:
            params[option.dest] = value
    if wants_help:
        raise HelpWanted
    for flag, value in paths.values():  # after help, in the order given: as click converts values
        if value in ("", "-"):  # an unset variable; no launch option reads stdin (worded as cli/params words it)
            raise CommandLineError(f"Invalid value for {flag!r}: {argpaths.EMPTY if value == '' else argpaths.DASH}")
    if command:
        params["command"] = (*extra, *args[i:])
    elif extra:
        plural = "s" if len(extra) > 1 else ""
        raise CommandLineError(f"Got unexpected extra argument{plural} ({' '.join(extra)})")
    return params


def parse_run(args: Sequence[str]) -> dict[str, Any]:
    """``run``'s parameters (see :func:`parse`)."""
    return parse(args, RUN_OPTIONS, command=True)
