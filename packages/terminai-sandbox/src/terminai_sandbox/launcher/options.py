"""The options of ``preflight`` and ``run``, declared once.

The click commands build their options from these tables
(:mod:`terminai_sandbox.cli.launch_cmd`). :func:`parse_run` reads a plain ``run`` command
line with the same tables, so the console script can start a session without importing
click (see :mod:`terminai_sandbox.console`); it declines everything else, and click then
parses as usual. A unit test checks that both parsers agree on every command line
:func:`parse_run` accepts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from terminai_sandbox.launcher.run import Limits
from terminai_sandbox.launcher.session import LaunchRequest

TYPE_CHECKING = False  # not `from typing import ...`: a launch never imports typing (~3 ms)
if TYPE_CHECKING:
    from typing import Any


@dataclass(frozen=True, slots=True)
class Option:
    """One long option: its flag, the parameter it sets, and how it takes a value."""

    flag: str
    dest: str
    help: str
    kind: str = "text"  # text | path | flag (no value) | multiple (repeatable text)
    default: str | None = None


LAUNCH_OPTIONS = (
    Option("--image", "image", "image reference (env TERMINAI_SANDBOX_IMAGE wins)"),
    Option("--engine", "engine", "docker or podman (env TERMINAI_SANDBOX wins)"),
    Option("--key", "key_path", "trusted cosign.pub", kind="path"),
    Option("--certificate-identity", "certificate_identity", "keyless: expected certificate identity"),
    Option("--certificate-oidc-issuer", "certificate_oidc_issuer", "keyless: expected OIDC issuer"),
    Option("--policy", "policy_path", "verification policy file", kind="path"),
    Option("--unsafe-skip-verify", "unsafe_skip_verify", "run without verifying (warned and audited)", kind="flag"),
    Option("--unsafe-allow-flag", "unsafe_allow_flag", "allow this dangerous SANDBOX_FLAGS flag", kind="multiple"),
    Option("--allow-floating-tag", "allow_floating_tag", "accept tags such as 'latest' (resolved once)", kind="flag"),
    Option("--insecure-registry", "insecure_registry", "plain HTTP to a non-loopback registry", kind="flag"),
    Option("--json", "as_json", "report preflight steps as JSON", kind="flag"),
)

_HARDENED = Limits()
LIMIT_OPTIONS = (
    Option("--network", "network", "container network (none unless you need one)", default=_HARDENED.network),
    Option("--memory", "memory", "memory limit of the session", default=_HARDENED.memory),
    Option("--cpus", "cpus", "CPUs the session may use", default=_HARDENED.cpus),
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
