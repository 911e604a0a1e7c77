"""The options of ``preflight`` and ``run``, declared once.

The click commands build their options from these tables
(:mod:`terminai_sandbox.cli.launch_cmd`). :func:`parse_run` reads a plain ``run`` command
line with the same tables, so the console script can start a session without importing
click (see :mod:`terminai_sandbox.launch.entry`); it declines everything else, and click then
parses as usual. A unit test checks that both parsers agree on every command line
:func:`parse_run` accepts.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from terminai_sandbox.common.records import frozen_record
from terminai_sandbox.launch.run import HARDENED_LIMITS, Limits
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


LAUNCH_OPTIONS = tuple(
    Option(flag=flag, dest=dest, kind=kind, help=text)
    for flag, dest, kind, text in (
        ("--image", "image", "text", "image reference (env TERMINAI_SANDBOX_IMAGE wins)"),
        ("--engine", "engine", "text", "docker or podman (env TERMINAI_SANDBOX wins)"),
        ("--runtime", "runtime", "text", "runc, or runsc/gvisor (env TERMINAI_SANDBOX_RUNTIME wins)"),
        ("--key", "key_path", "path", "trusted cosign.pub"),
        ("--certificate-identity", "certificate_identity", "text", "keyless: expected certificate identity"),
        ("--certificate-oidc-issuer", "certificate_oidc_issuer", "text", "keyless: expected OIDC issuer"),
        ("--policy", "policy_path", "path", "verification policy file"),
        ("--unsafe-skip-verify", "unsafe_skip_verify", "flag", "run without verifying (warned and audited)"),
        ("--unsafe-allow-flag", "unsafe_allow_flag", "multiple", "allow a SANDBOX_FLAGS flag off the allowlist"),
        ("--allow-floating-tag", "allow_floating_tag", "flag", "accept tags such as 'latest' (resolved once)"),
        ("--insecure-registry", "insecure_registry", "flag", "plain HTTP to a non-loopback registry"),
        ("--json", "as_json", "flag", "report preflight steps as JSON"),
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


def request_from(params: dict[str, Any]) -> LaunchRequest:
    """The :class:`LaunchRequest` in parsed parameters (extra keys, such as the limits, are ignored)."""
    return LaunchRequest(**{o.dest: params[o.dest] for o in LAUNCH_OPTIONS})


def limits_from(params: dict[str, Any]) -> Limits:
    return Limits(**{o.dest: params[o.dest] for o in LIMIT_OPTIONS})


def parse_run(args: Sequence[str]) -> dict[str, Any] | None:
    """``run``'s parameters as click parses them, or None when click must decide.

    Accepted: the options in :data:`RUN_OPTIONS` (``--opt VALUE``, ``--opt=VALUE``, flags),
    then the command, which starts after ``--`` or at the first argument that is not an
    option. Declined: help, an unknown option, a flag given a value, a missing value.
    """
    by_flag = {o.flag: o for o in RUN_OPTIONS}
    params: dict[str, Any] = {}
    for known in RUN_OPTIONS:
        params[known.dest] = () if known.kind == "multiple" else False if known.kind == "flag" else known.default
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            i += 1
            break
        if not arg.startswith("-") or arg == "-":
            break
        flag, has_value, inline = arg.partition("=")
        option = by_flag.get(flag)
        if option is None:
            return None
        if option.kind == "flag":
            if has_value:
                return None
            params[option.dest] = True
            i += 1
            continue
        if has_value:
            value, i = inline, i + 1
        elif i + 1 < len(args):
            value, i = args[i + 1], i + 2
        else:
            return None
        if option.kind == "multiple":
            params[option.dest] = (*params[option.dest], value)
        else:
            params[option.dest] = Path(value) if option.kind == "path" else value
    params["command"] = tuple(args[i:])
    return params
