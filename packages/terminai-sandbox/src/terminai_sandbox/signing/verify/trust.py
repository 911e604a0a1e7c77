"""Trust configuration: the keys and keyless identities an image must be signed by.

A policy is frozen data: ``load_policy`` reads a JSON or TOML (``.toml``) file strictly (unknown keys are
errors), and :meth:`VerificationPolicy.fingerprint` is a stable hash used to cache
verification results per (digest, policy). An empty policy refuses every image: it never
passes by default.

File format::

    {"version": 1, "mode": "enforce",
     "keys": [{"path": "cosign.pub"}, {"pem": "-----BEGIN PUBLIC KEY-----..."}],
     "identities": [{"identity": "...", "issuer": "https://token.actions.githubusercontent.com"}]}
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from cryptography.hazmat.primitives.asymmetric import ec

from terminai_sandbox.errors import ConfigError, VerificationError
from terminai_sandbox.signing.formats.keys import key_id, load_public


@dataclass(frozen=True, slots=True, kw_only=True)
class TrustedKey:
    pem: bytes
    source: str

    @property
    def public_key(self) -> ec.EllipticCurvePublicKey:
        return load_public(self.pem)

    @property
    def key_id(self) -> str:
        return key_id(self.public_key)


@dataclass(frozen=True, slots=True, kw_only=True)
class KeylessIdentity:
    identity: str | None = None
    identity_regexp: str | None = None
    issuer: str | None = None
    issuer_regexp: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class VerificationPolicy:
    keys: tuple[TrustedKey, ...] = ()
    identities: tuple[KeylessIdentity, ...] = ()
    mode: Literal["enforce", "warn"] = "enforce"

    @classmethod
    def single_key(cls, path: Path) -> VerificationPolicy:
        return cls(keys=(_read_key(path),))

    @classmethod
    def single_identity(cls, identity: str, issuer: str) -> VerificationPolicy:
        return cls(identities=(KeylessIdentity(identity=identity, issuer=issuer),))

    def compose(self, other: VerificationPolicy) -> VerificationPolicy:
        """Trust what either policy trusts; ``enforce`` wins over ``warn``."""
        mode: Literal["enforce", "warn"] = "warn" if self.mode == other.mode == "warn" else "enforce"
        keys = self.keys + tuple(k for k in other.keys if k.key_id not in {m.key_id for m in self.keys})
        identities = self.identities + tuple(i for i in other.identities if i not in self.identities)
        return VerificationPolicy(keys=keys, identities=identities, mode=mode)

    def fingerprint(self) -> str:
        data = {
            "keys": sorted(k.key_id for k in self.keys),
            "identities": sorted(repr(i) for i in self.identities),
            "mode": self.mode,
        }
        return "sha256:" + hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def _read_key(path: Path) -> TrustedKey:
    try:
        pem = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read public key {str(path)!r}: {exc.strerror}") from None
    try:
        load_public(pem)
    except VerificationError as exc:  # a bad key file is a refused input (3), not a failed verification
        raise ConfigError(f"public key {str(path)!r}: {exc.message}", hint="pass the cosign.pub PEM file") from None
    return TrustedKey(pem=pem, source=str(path))


def load_policy(path: Path) -> VerificationPolicy:
    """Read a policy file; every malformed item is a :class:`ConfigError` naming it."""
    kind = "TOML" if path.suffix == ".toml" else "JSON"
    try:
        text = path.read_text()
        data = tomllib.loads(text) if kind == "TOML" else json.loads(text)
    except OSError as exc:
        raise ConfigError(f"cannot read policy {str(path)!r}: {exc.strerror}") from None
    except ValueError as exc:  # tomllib.TOMLDecodeError and json.JSONDecodeError are ValueErrors
        raise ConfigError(f"policy {str(path)!r} is not valid {kind}: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"policy {str(path)!r} must be a {kind} object")
    unknown = set(data) - {"version", "mode", "keys", "identities"}
    if unknown:
        raise ConfigError(
            f"policy {str(path)!r}: unknown key(s) {sorted(unknown)}", hint="allowed: version, mode, keys, identities"
        )
    if data.get("version") != 1:
        raise ConfigError(f"policy {str(path)!r}: 'version' must be 1")
    mode = data.get("mode", "enforce")
    if mode not in ("enforce", "warn"):
        raise ConfigError(f"policy {str(path)!r}: mode must be 'enforce' or 'warn', got {mode!r}")
    keys = []
    for index, item in enumerate(data.get("keys", [])):
        if not isinstance(item, dict) or set(item) - {"path", "pem"} or len(item) != 1:
            raise ConfigError(f"policy {str(path)!r}: keys[{index}] must be {{'path': FILE}} or {{'pem': TEXT}}")
        if "path" in item:
            keys.append(_read_key((path.parent / item["path"]).resolve()))
        else:
            pem = str(item["pem"]).encode()
            load_public(pem)
            keys.append(TrustedKey(pem=pem, source=f"{path}:keys[{index}]"))
    identities = []
    for index, item in enumerate(data.get("identities", [])):
        allowed = {"identity", "identity_regexp", "issuer", "issuer_regexp"}
        if not isinstance(item, dict) or set(item) - allowed:
            raise ConfigError(f"policy {str(path)!r}: identities[{index}] allows only {sorted(allowed)}")
        if not (item.get("identity") or item.get("identity_regexp")) or not (
            item.get("issuer") or item.get("issuer_regexp")
        ):
            raise ConfigError(f"policy {str(path)!r}: identities[{index}] needs an identity and an issuer")
        identities.append(KeylessIdentity(**item))
    return VerificationPolicy(keys=tuple(keys), identities=tuple(identities), mode=mode)


def policy_from_options(
    *, key: Path | None, identity: str | None, issuer: str | None, policy_file: Path | None
) -> VerificationPolicy:
    """The policy named by ``verify``'s options (exactly one of a key, a keyless identity, a file).

    ``verify`` and ``kube`` both call this, so an admission policy is generated from the
    very object the image was verified against.
    """
    if bool(identity) != bool(issuer):
        raise ConfigError("keyless verification needs both --certificate-identity and --certificate-oidc-issuer")
    chosen = [x for x in (key, identity, policy_file) if x]
    if len(chosen) != 1:
        raise ConfigError("pass exactly one of --key, --certificate-identity/--certificate-oidc-issuer or --policy")
    if key:
        return VerificationPolicy.single_key(key)
    if policy_file:
        return load_policy(policy_file)
    return VerificationPolicy(identities=(KeylessIdentity(identity=identity, issuer=issuer),))
