"""The cosign "simple signing" payload, byte for byte as cosign and containers/image write it.

Serialisation follows Go's ``json.Marshal`` of sigstore's ``SimpleContainerImage``:
compact, no trailing newline, field order ``critical`` → ``optional`` and inside
``critical`` ``identity`` → ``image`` → ``type``; ``optional`` keys sorted; ``<``, ``>``
and ``&`` escaped as ``\\u003c`` ``\\u003e`` ``\\u0026``; ``"optional":null`` when empty.
Parsing is strict like containers/image: exact key sets, case-sensitive, extra keys only
inside ``optional``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from terminai_sandbox.common.reference import is_digest
from terminai_sandbox.errors import VerificationError

SIGNATURE_TYPE = "cosign container image signature"
MEDIA_TYPE = "application/vnd.dev.cosign.simplesigning.v1+json"


def _go_string(value: str) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def simple_signing(docker_reference: str, manifest_digest: str, optional: Mapping[str, str] | None = None) -> bytes:
    """The payload cosign signs for ``manifest_digest`` in repository ``docker_reference``."""
    if not is_digest(manifest_digest):
        raise ValueError(f"not a sha256 digest: {manifest_digest!r}")
    if optional:
        opt = "{" + ",".join(f"{_go_string(k)}:{_go_string(optional[k])}" for k in sorted(optional)) + "}"
    else:
        opt = "null"
    text = (
        '{"critical":{"identity":{"docker-reference":' + _go_string(docker_reference) + "},"
        '"image":{"docker-manifest-digest":' + _go_string(manifest_digest) + "},"
        '"type":' + _go_string(SIGNATURE_TYPE) + '},"optional":' + opt + "}"
    )
    return text.encode("utf-8")


@dataclass(frozen=True, slots=True, kw_only=True)
class SignedClaims:
    docker_reference: str
    manifest_digest: str
    optional: dict[str, object]


def _exact(obj: object, keys: set[str], where: str) -> dict[str, object]:
    if not isinstance(obj, dict) or set(obj) != keys:
        got = sorted(obj) if isinstance(obj, dict) else type(obj).__name__
        raise VerificationError(f"tampered or foreign signature payload: {where} has {got}, expected {sorted(keys)}")
    return obj


def parse(payload: bytes) -> SignedClaims:
    """Parse a payload strictly; :class:`VerificationError` when it is not exactly the format."""
    try:
        data = json.loads(payload)
    except ValueError:
        raise VerificationError("tampered signature payload: not JSON") from None
    top = _exact(data, {"critical", "optional"}, "payload")
    critical = _exact(top["critical"], {"identity", "image", "type"}, "critical")
    identity = _exact(critical["identity"], {"docker-reference"}, "critical.identity")
    image = _exact(critical["image"], {"docker-manifest-digest"}, "critical.image")
    if critical["type"] != SIGNATURE_TYPE:
        raise VerificationError(f"signature payload has type {critical['type']!r}, not {SIGNATURE_TYPE!r}")
    digest, reference = image["docker-manifest-digest"], identity["docker-reference"]
    if not isinstance(digest, str) or not is_digest(digest) or not isinstance(reference, str):
        raise VerificationError("tampered signature payload: malformed digest or reference")
    optional = top["optional"]
    if optional is not None and not isinstance(optional, dict):
        raise VerificationError("tampered signature payload: 'optional' is not an object")
    return SignedClaims(docker_reference=reference, manifest_digest=digest, optional=dict(optional or {}))
