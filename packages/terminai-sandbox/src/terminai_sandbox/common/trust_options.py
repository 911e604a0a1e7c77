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

from terminai_apts.records import frozen_record

from terminai_sandbox.common.files import read_regular
from terminai_sandbox.errors import ConfigError

TOO_MANY = "pass only one of --key, --certificate-identity/--certificate-oidc-issuer, --policy"
TOO_MANY_HINT = "each names whom to trust; to trust several keys or identities, list them in a --policy file"
UNPAIRED = "--certificate-identity and --certificate-oidc-issuer go together"
UNPAIRED_HINT = "keyless verification checks both the signer's identity and the OIDC issuer that vouched for it"
EMPTY = "--certificate-identity/--certificate-oidc-issuer given empty: they name no one to trust"
EMPTY_HINT = (
    "pass the signer's identity and its OIDC issuer, or leave both out "
    "(a launch then uses your policy file; an unset variable in a script is the usual cause)"
)
NONE_GIVEN = "no verification policy: nothing can be verified"
NONE_GIVEN_HINT = (
    "pass --key cosign.pub, a keyless identity (--certificate-identity with --certificate-oidc-issuer) or --policy FILE"
)


# A cosign.pub is ~180 bytes and a policy file a few KB; a trust input larger than this is a mistake.
MAX_TRUST_FILE = 1 << 20


def read_trust_file(path: Path) -> bytes:
    """The bytes of a key or policy file: a regular file of at most :data:`MAX_TRUST_FILE` bytes.

    Anything else is an :class:`OSError` naming the path, so the caller's "cannot read"
    message applies: a FIFO would block the launch forever and ``/dev/zero`` would fill
    memory, where a plain ``read_bytes`` would try.
    """
    return read_regular(path, limit=MAX_TRUST_FILE)


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
    once, whether one or both of its options are given), give only half of a keyless
    identity, or give the keyless options empty and nothing else: a launch would otherwise
    fall back to the user's policy file, trusting what that file trusts (perhaps in ``warn``
    mode) instead of the identity the command line meant to pin. Beside another option an
    empty value counts as not given.
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
    if identity is not None or issuer is not None:  # given, but empty: names no one
        raise ConfigError(EMPTY, hint=EMPTY_HINT)
    return None


def no_trust(*, also: str = "") -> ConfigError:
    """The error for options that name no policy; ``also`` adds what else would do (a default file)."""
    return ConfigError(NONE_GIVEN, hint=NONE_GIVEN_HINT + (f", or {also}" if also else ""))
