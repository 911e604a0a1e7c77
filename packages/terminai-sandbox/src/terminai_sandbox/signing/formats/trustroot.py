"""The Sigstore trusted root, read as the data legacy keyless verification needs.

A trusted root (``application/vnd.dev.sigstore.trustedroot+json;version=0.1``) names the
Fulcio certificate authorities, the Rekor transparency logs and the certificate
transparency (CT) logs of a Sigstore instance, each with a validity window. Verifying a
cosign ``.sig`` signature needs all three as plain keys and certificates; sigstore-python
exposes only the Fulcio certificates publicly (its log keyrings need a private
``KeyringPurpose``), so the JSON is read here with ``cryptography``.

Default: the public-good root from sigstore-python's local TUF cache, seeded from the copy
embedded in its wheel (offline, no refresh), the same root its ``Verifier`` uses. An
explicit file pins another instance (a private deployment, or the test CA of the tests).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.types import PublicKeyTypes
from cryptography.hazmat.primitives.serialization import load_der_public_key

from terminai_sandbox.errors import ConfigError

if TYPE_CHECKING:
    from sigstore.models import TrustedRoot

TRUSTED_ROOT_MEDIA = "application/vnd.dev.sigstore.trustedroot+json;version=0.1"


@dataclass(frozen=True, slots=True, kw_only=True)
class Window:
    """A ``validFor`` range; an absent end means "still valid"."""

    start: datetime | None
    end: datetime | None

    def contains(self, when: datetime) -> bool:
        return (self.start is None or self.start <= when) and (self.end is None or when <= self.end)


@dataclass(frozen=True, slots=True, kw_only=True)
class LogKey:
    """A Rekor or CT log: its id (hex SHA-256 of the DER public key) and key."""

    log_id: str
    public_key: PublicKeyTypes
    valid: Window


@dataclass(frozen=True, slots=True, kw_only=True)
class Authority:
    """A Fulcio CA: its chain from the issuing certificate up to the root."""

    chain: tuple[x509.Certificate, ...]
    valid: Window


@dataclass(frozen=True, slots=True, kw_only=True)
class SigstoreTrust:
    authorities: tuple[Authority, ...]
    rekor_logs: tuple[LogKey, ...]
    ct_logs: tuple[LogKey, ...]
    source: str

    def rekor(self, log_id: str) -> LogKey | None:
        return next((log for log in self.rekor_logs if log.log_id == log_id), None)

    def ct(self, log_id: str) -> LogKey | None:
        return next((log for log in self.ct_logs if log.log_id == log_id), None)

    def ca_certificates(self) -> list[x509.Certificate]:
        """Every CA certificate (intermediates and roots): the anchors, as sigstore-python uses them."""
        return [cert for authority in self.authorities for cert in authority.chain]

    def issuing_chain(self, leaf: x509.Certificate) -> tuple[x509.Certificate, ...]:
        """The CA chain (issuer first, root last) whose first certificate issued ``leaf``; () if none."""
        for authority in self.authorities:
            try:
                leaf.verify_directly_issued_by(authority.chain[0])
            except (ValueError, TypeError, InvalidSignature):
                continue
            return authority.chain
        return ()


def _time(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def _window(data: dict[str, Any] | None) -> Window:
    data = data or {}
    return Window(start=_time(data.get("start")), end=_time(data.get("end")))


def _log(item: dict[str, Any]) -> LogKey:
    key = item["publicKey"]
    return LogKey(
        log_id=base64.b64decode(item["logId"]["keyId"]).hex(),
        public_key=load_der_public_key(base64.b64decode(key["rawBytes"])),
        valid=_window(key.get("validFor")),
    )


def parse_trust(text: str | bytes, source: str) -> SigstoreTrust:
    """Parse trusted-root JSON; :class:`ConfigError` naming ``source`` when it is not one."""
    try:
        data = json.loads(text)
        if data.get("mediaType") != TRUSTED_ROOT_MEDIA:
            raise ValueError(f"mediaType is {data.get('mediaType')!r}, not {TRUSTED_ROOT_MEDIA!r}")
        authorities = tuple(
            Authority(
                chain=tuple(
                    x509.load_der_x509_certificate(base64.b64decode(cert["rawBytes"]))
                    for cert in ca["certChain"]["certificates"]
                ),
                valid=_window(ca.get("validFor")),
            )
            for ca in data.get("certificateAuthorities", [])
        )
        trust = SigstoreTrust(
            authorities=tuple(a for a in authorities if a.chain),
            rekor_logs=tuple(_log(item) for item in data.get("tlogs", [])),
            ct_logs=tuple(_log(item) for item in data.get("ctlogs", [])),
            source=source,
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(f"{source} is not a Sigstore trusted root: {exc}") from None
    if not trust.authorities or not trust.rekor_logs:
        raise ConfigError(f"{source} names no Fulcio CA or no Rekor log: keyless signatures cannot verify")
    return trust


def load_trust(path: Path | None = None) -> SigstoreTrust:
    """The trusted root at ``path``, or the public-good one sigstore-python holds offline."""
    if path is not None:
        try:
            return parse_trust(path.read_bytes(), str(path))
        except OSError as exc:
            raise ConfigError(f"cannot read trusted root {str(path)!r}: {exc.strerror}") from None
    # sigstore-python is slow to import; only keyless verification without a pinned root needs it.
    from sigstore.errors import Error as SigstoreError  # noqa: PLC0415
    from sigstore.models import ClientTrustConfig  # noqa: PLC0415

    try:
        root = ClientTrustConfig.production(offline=True).trusted_root
    except SigstoreError as exc:
        raise ConfigError(
            f"no offline Sigstore trusted root: {exc}", hint="pass --trusted-root trusted_root.json"
        ) from None
    return from_sigstore(root, "the Sigstore public-good trusted root (offline)")


def from_sigstore(root: TrustedRoot, source: str) -> SigstoreTrust:
    """The same root as a sigstore-python ``TrustedRoot`` (e.g. the one a signing context uses)."""
    # sigstore-python has no public serialiser for a TrustedRoot; its protobuf model does.
    return parse_trust(root._inner.to_json(), source)
