"""The options that say whom to trust, shared by ``verify`` and ``kube``: one spelling, one
policy (``signing.verify.trust.policy_from_options``), so admission on a cluster trusts
exactly what ``verify`` trusts. The four trust options are generated from the launch
kernel's table (:data:`terminai_sandbox.launch.options.TRUST_OPTIONS`), as ``run``'s are;
``--offline`` and ``--trusted-root`` belong to verification from a registry or a release."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click

from terminai_sandbox.cli import params
from terminai_sandbox.cli.option_table import click_option
from terminai_sandbox.launch.options import TRUST_OPTIONS

F = TypeVar("F", bound=Callable[..., object])

_OPTIONS = (
    *(click_option(option) for option in TRUST_OPTIONS),
    click.option(
        "--offline",
        "offline_dir",
        type=params.InputPath(want="dir", exists=True),
        default=None,
        help="a release directory (dist/X.Y.Z) to verify from, instead of the registry",
    ),
    click.option(
        "--trusted-root",
        type=params.InputPath(exists=True),
        default=None,
        help="keyless: Sigstore trusted_root.json to verify against (default: public-good, offline)",
    ),
)


def trust_options(command: F) -> F:
    for option in reversed(_OPTIONS):
        command = option(command)
    return command
