"""Trust configuration: the keys and keyless identities an image must be signed by.

A policy is frozen data: ``load_policy`` reads a JSON or TOML (``.toml``) file strictly (unknown keys are
errors), and :meth:`VerificationPolicy.fingerprint` is a stable hash used to cache
verification results per (digest, policy). An empty policy refuses every image: it never
passes by default.

File format::

    {"version": 1, "mode": "enforce",
     "keys": [{"path": "cosign.pub"}, {"pem": "-----BEGIN PUBLIC KEY-----..."}],
     "identities": [{"identity": "...", "issuer": "https://token.actions.githubusercontent.com"}],
     "mirrors": [{"identity": "ghcr.io/org/sandbox",
                  "repositories": ["registry.corp.example/mirror/sandbox", "registry.corp.example/*/sandbox"]}]}

``mirrors`` lets a signature made for one repository (the ``docker-reference`` identity
cosign signs, as containers/image's ``remapIdentity`` and policy-controller's ``glob``
images do) count for copies of the image in other repositories, e.g. after ``cosign
copy``. Without a mirror entry a signature for another repository is refused (step 5).
A pattern's ``*`` matches within one path segment, ``**`` across segments; the registry
host is always spelled out, so a mirror entry never opens a registry nobody named.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from cryptography.hazmat.primitives.asymmetric import ec

from terminai_sandbox.common.trust_options import choose_trust, no_trust, read_trust_file
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


def pattern_regex(pattern: str) -> str:
    """A repository pattern as a regular expression (RE2-compatible: admission controllers use Go's)."""
    parts = re.split(r"(\*\*|\*)", pattern)
    return "".join({"**": ".*", "*": "[^/]*"}.get(part, re.escape(part)) for part in parts)


def _glob_regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern_regex(pattern))


@dataclass(frozen=True, slots=True, kw_only=True)
class Mirror:
    """Repositories (patterns) where images signed for repository ``identity`` may be served."""

    identity: str
    repositories: tuple[str, ...]

    def covers(self, repository: str) -> bool:
        """``repository`` is the signed one or one of its mirrors."""
        return repository == self.identity or self.allows(self.identity, repository)

    def allows(self, signed: str, repository: str) -> bool:
        return signed == self.identity and any(
            _glob_regex(pattern).fullmatch(repository) for pattern in self.repositories
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class VerificationPolicy:
    keys: tuple[TrustedKey, ...] = ()
    identities: tuple[KeylessIdentity, ...] = ()
    mode: Literal["enforce", "warn"] = "enforce"
    mirrors: tuple[Mirror, ...] = ()

    def accepts_identity(self, signed: str, repository: str) -> bool:
        """Step 5: a signature for repository ``signed`` counts for an image in ``repository``."""
        return signed == repository or any(mirror.allows(signed, repository) for mirror in self.mirrors)

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
        mirrors = self.mirrors + tuple(m for m in other.mirrors if m not in self.mirrors)
        return VerificationPolicy(keys=keys, identities=identities, mode=mode, mirrors=mirrors)

    def fingerprint(self) -> str:
        data = {
            "keys": sorted(k.key_id for k in self.keys),
            "identities": sorted(repr(i) for i in self.identities),
            "mode": self.mode,
        }
        if self.mirrors:  # absent when unused: fingerprints of existing policies stay as they were
            data["mirrors"] = sorted(repr(m) for m in self.mirrors)
        return "sha256:" + hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def _read_key(path: Path) -> TrustedKey:
    try:
        pem = read_trust_file(path)
    except OSError as exc:
        raise ConfigError(f"cannot read public key {str(path)!r}: {exc.strerror}") from None
    return key_from_bytes(path, pem)


def key_from_bytes(path: Path, pem: bytes) -> TrustedKey:
    """The trusted key in ``pem``, read from ``path`` by the caller (who may have hashed those bytes)."""
    try:
        load_public(pem)
    except VerificationError as exc:  # a bad key file is a refused input (3), not a failed verification
        raise ConfigError(f"public key {str(path)!r}: {exc.message}", hint="pass the cosign.pub PEM file") from None
    return TrustedKey(pem=pem, source=str(path))


def load_policy(path: Path) -> VerificationPolicy:
    """Read a policy file; every malformed item is a :class:`ConfigError` naming it."""
    try:
        raw = read_trust_file(path)
    except OSError as exc:
        raise ConfigError(f"cannot read policy {str(path)!r}: {exc.strerror}") from None
    return parse_policy(path, raw)


def parse_policy(path: Path, raw: bytes) -> VerificationPolicy:
    """The policy in ``raw``, the bytes the caller read from ``path`` (named in errors; key
    files it lists by path are found beside it).

    A launch hashes the bytes for its cache key and parses the same bytes here, so the key
    and the policy cannot come from two reads of a file that changed in between.
    """
    kind = "TOML" if path.suffix == ".toml" else "JSON"
    try:
        text = raw.decode()
        data = tomllib.loads(text) if kind == "TOML" else json.loads(text)
    except ValueError as exc:  # tomllib.TOMLDecodeError and json.JSONDecodeError are ValueErrors
        raise ConfigError(f"policy {str(path)!r} is not valid {kind}: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"policy {str(path)!r} must be a {kind} object")
    unknown = set(data) - {"version", "mode", "keys", "identities", "mirrors"}
    if unknown:
        raise ConfigError(
            f"policy {str(path)!r}: unknown key(s) {sorted(unknown)}",
            hint="allowed: version, mode, keys, identities, mirrors",
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
    if not isinstance(data.get("mirrors", []), list):
        raise ConfigError(f"policy {str(path)!r}: mirrors must be a list of {{'identity', 'repositories'}} entries")
    mirrors = tuple(_mirror(path, index, item) for index, item in enumerate(data.get("mirrors", [])))
    return VerificationPolicy(keys=tuple(keys), identities=tuple(identities), mode=mode, mirrors=mirrors)


def _mirror(path: Path, index: int, item: object) -> Mirror:
    where = f"policy {str(path)!r}: mirrors[{index}]"
    if not isinstance(item, dict) or set(item) != {"identity", "repositories"}:
        raise ConfigError(f"{where} must be {{'identity': REPOSITORY, 'repositories': [PATTERN, ...]}}")
    identity, patterns = item["identity"], item["repositories"]
    if not isinstance(identity, str) or not _REPOSITORY.fullmatch(identity):
        raise ConfigError(f"{where}: identity {identity!r} must be a repository (registry/path, no tag or digest)")
    if not isinstance(patterns, list) or not patterns or not all(isinstance(p, str) for p in patterns):
        raise ConfigError(f"{where}: repositories must be a non-empty list of repository patterns")
    for pattern in patterns:
        host, _, rest = pattern.partition("/")
        if not rest or "*" in host or not _PATTERN.fullmatch(pattern):
            raise ConfigError(
                f"{where}: {pattern!r} is not a repository pattern",
                hint="spell out the registry host; '*' matches within one path segment, '**' across segments",
            )
    return Mirror(identity=identity, repositories=tuple(patterns))


# registry[:port]/path, lowercase path components as the distribution spec allows; no tag or digest.
_REPOSITORY = re.compile(r"[A-Za-z0-9.-]+(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)+")
_PATTERN = re.compile(r"[A-Za-z0-9.-]+(:[0-9]+)?(/[a-z0-9*]+([._-][a-z0-9*]+)*)+")


def policy_from_options(
    *, key: Path | None, identity: str | None, issuer: str | None, policy_file: Path | None
) -> VerificationPolicy:
    """The policy named by ``verify``'s options (exactly one of a key, a keyless identity, a file).

    ``verify`` and ``kube`` both call this, so an admission policy is generated from the
    very object the image was verified against. The options are read by
    :func:`terminai_sandbox.common.trust_options.choose_trust`, as a launch reads them.
    """
    choice = choose_trust(key=key, identity=identity, issuer=issuer, policy=policy_file)
    if choice is None:
        raise no_trust()
    if choice.key is not None:
        return VerificationPolicy.single_key(choice.key)
    if choice.policy is not None:
        return load_policy(choice.policy)
    return VerificationPolicy(identities=(KeylessIdentity(identity=choice.identity, issuer=choice.issuer),))
