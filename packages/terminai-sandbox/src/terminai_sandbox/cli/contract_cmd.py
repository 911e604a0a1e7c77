"""``terminai-sandbox contract ...``: work with T-APTS contract manifests."""

from __future__ import annotations

import json
from pathlib import Path

import click

from terminai_sandbox import contract_diff
from terminai_sandbox.cli import params


@click.group("contract")
def contract() -> None:
    """Inspect and compare T-APTS contract manifests."""


@contract.command("diff")
@click.argument("old", type=params.InputPath())
@click.argument("new", type=params.InputPath())
@click.option("--json", "as_json", is_flag=True, help="print the classification as JSON")
def diff_cmd(old: Path, new: Path, as_json: bool) -> None:
    """Classify changes from OLD to NEW as breaking or additive.

    Fails (exit 8) when a breaking change comes without a major contract version bump.
    """
    result = contract_diff.diff(contract_diff.load(old), contract_diff.load(new))
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2, sort_keys=True))
    else:
        click.echo(
            f"contract {result.old_version} -> {result.new_version}: "
            f"{len(result.breaking)} breaking, {len(result.additive)} additive"
        )
        for change in result.changes:
            click.echo(f"  {change.kind:8} {change.item}: {change.detail}")
    contract_diff.diff_files(old, new)


def register(group: click.Group) -> None:
    group.add_command(contract)
