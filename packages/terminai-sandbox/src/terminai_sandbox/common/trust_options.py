"""Whom a command line says to trust: one parser for ``run``/``preflight`` and ``verify``/``kube``.

The four options (``--key``, ``--certificate-identity``, ``--certificate-oidc-issuer``,
``--policy``) name at most one policy: a public key, a keyless identity (an identity and
its OIDC issuer, always together), or a policy file. The launch kernel
(:func:`terminai_sandbox.launch.session.trust_source`) and the verifier
(:func:`terminai_sandbox.signing.verify.trust.policy_from_options`) both read them here, so
the same bad command line gets the same error from every command. What to do when no
option names a policy is the caller's: a launch falls back to the user's policy file,
``verify`` has nothing to verify against.

Standard library only: the launch kernel imports it on every session start.
"""

from __future__ import annotations

from pathlib import Path

from terminai_sandbox.common.records import frozen_record
from terminai_sandbox.errors import ConfigError

TOO_MANY = "pass only one of --key, --certificate-identity/--certificate-oidc-issuer, --policy"
TOO_MANY_HINT = "each names whom to trust; to trust several keys or identities, list them in a --policy file"
UNPAIRED = "--certificate-identity and --certificate-oidc-issuer go together"
UNPAIRED_HINT = "keyless verification checks both the signer's identity and the OIDC issuer that vouched for it"
NONE_GIVEN = "no verification policy: nothing can be verified"
NONE_GIVEN_HINT = (
    "pass --key cosign.pub, a keyless identity (--certificate-identity with --certificate-oidc-issuer) or --policy FILE"
)


@frozen_record
class TrustChoice:
    """The one policy the options named: a key, a keyless identity (both set) or a policy file."""

    key: Path | None = None
    identity: str = ""
    issuer: str = ""
    policy: Path | None = None


def choose_trust(
    *, key: Path | None, identity: str | None, issuer: str | None, policy: Path | None
) -> TrustChoice | None:
    """The policy the options name, or None when they name none.

    Raises :class:`ConfigError` when they name more than one (a keyless identity counts
    once, whether one or both of its options are given), or give only half of a keyless
    identity. An empty value counts as not given.
    """
    named = [given for given in (key, identity or issuer, policy) if given]
    if len(named) > 1:
        raise ConfigError(TOO_MANY, hint=TOO_MANY_HINT)
    if bool(identity) != bool(issuer):
        raise ConfigError(UNPAIRED, hint=UNPAIRED_HINT)
    if key:
        return TrustChoice(key=key)
    if identity and issuer:
        return TrustChoice(identity=identity, issuer=issuer)
    if policy:
        return TrustChoice(policy=policy)
    return None


def no_trust(*, also: str = "") -> ConfigError:
    """The error for options that name no policy; ``also`` adds what else would do (a default file)."""
    return ConfigError(NONE_GIVEN, hint=NONE_GIVEN_HINT + (f", or {also}" if also else ""))
