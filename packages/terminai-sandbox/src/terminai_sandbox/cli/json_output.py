"""``--json`` for the commands whose result is a line or two of text.

With ``--json`` the result is one JSON object on stdout, ``{"ok": true, ...}``; a failure is
the error object of docs/EXIT_CODES.md instead (:func:`terminai_sandbox.cli.fail` finds the
flag on the command line). Every command has the flag, so a script can ask any of them for
a result it can parse; a unit test holds every command of the group to it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import click

JSON_OPTION = click.option(
    "--json", "as_json", is_flag=True, help="print the result (or the error) as one JSON object on stdout"
)


def emit(as_json: bool, record: Mapping[str, Any], *lines: str) -> None:
    """The result: ``record`` as one JSON object under ``as_json``, else the text ``lines``."""
    if as_json:
        click.echo(json.dumps({"ok": True, **record}, indent=2, sort_keys=True))
        return
    for line in lines:
        click.echo(line)
