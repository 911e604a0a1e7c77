"""Click options generated from the launch kernel's option tables (:mod:`terminai_sandbox.launch.options`).

A table row is the only declaration of an option; this turns one into click's, so a
command that click parses (``verify``, ``kube``, ``release verify``) spells and documents
it exactly as the kernel-parsed ``run`` and ``preflight`` do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import click

from terminai_sandbox.cli import params
from terminai_sandbox.launch.options import Option


def click_option(option: Option, *, must_exist: bool = False) -> Callable[[Any], Any]:
    """``option`` as a click option; ``must_exist`` makes a missing path a usage error (click's check)."""
    if option.kind == "flag":
        return click.option(option.flag, option.dest, is_flag=True, help=option.help)
    if option.kind == "multiple":
        return click.option(option.flag, option.dest, multiple=True, help=option.help)
    if option.kind == "path":
        kind = params.InputPath(exists=must_exist)
        return click.option(option.flag, option.dest, type=kind, default=None, help=option.help)
    return click.option(
        option.flag, option.dest, default=option.default, show_default=option.default is not None, help=option.help
    )


def table_options(
    table: Sequence[Option], *, must_exist: bool = False
) -> Callable[[click.decorators.FC], click.decorators.FC]:
    """A decorator adding every option of ``table`` to a command, in the table's order."""

    def apply(func: click.decorators.FC) -> click.decorators.FC:
        for option in reversed(table):
            func = click_option(option, must_exist=must_exist)(func)
        return func

    return apply
