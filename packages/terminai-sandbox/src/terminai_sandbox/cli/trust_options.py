"""The options that say whom to trust, shared by ``verify`` and ``kube``: one spelling, one
policy (``signing.verify.trust.policy_from_options``), so admission on a cluster trusts
exactly what ``verify`` trusts."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click

from terminai_sandbox.cli import params

F = TypeVar("F", bound=Callable[..., object])

_OPTIONS = (
    click.option("--key", "key_path", type=params.InputPath(), default=None, help="trusted cosign public key"),
    click.option("--certificate-identity", default=None, help="keyless: the signer's certificate identity"),
    click.option("--certificate-oidc-issuer", default=None, help="keyless: the identity's OIDC issuer"),
    click.option("--policy", "policy_path", type=params.InputPath(), default=None, help="policy file"),
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
