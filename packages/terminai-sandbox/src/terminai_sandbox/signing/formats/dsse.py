"""In-toto attestations in DSSE envelopes, shaped the way ``cosign attest`` stores them.

The statement is in-toto v0.1 (what cosign writes) with one subject, the image digest.
The envelope is ``{"payloadType","payload","signatures":[{"keyid","sig"}]}``; the ECDSA
P-256 signature covers the DSSE pre-authentication encoding (PAE), never the raw
statement. Each envelope is one ``application/vnd.dsse.envelope.v1+json`` layer of the
manifest at tag ``sha256-<hex>.att`` with annotations ``predicateType`` and an empty
``dev.cosignproject.cosign/signature``.

Verifying an attestation = the envelope signature verifies under a trusted key, the payload
type is in-toto, some subject's ``digest.sha256`` is the image digest (cosign ignores the
subject name), and the predicate type is the one asked for.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

from terminai_sandbox.errors import VerificationError
from terminai_sandbox.signing.formats.sig import verifies

DSSE_MEDIA_TYPE = "application/vnd.dsse.envelope.v1+json"
INTOTO_PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_V01 = "https://in-toto.io/Statement/v0.1"
STATEMENT_V1 = "https://in-toto.io/Statement/v1"
PREDICATE_TYPES = {
    "cyclonedx": "https://cyclonedx.org/bom",
    "spdxjson": "https://spdx.dev/Document",
    "slsaprovenance1": "https://slsa.dev/provenance/v1",
    "custom": "https://cosign.sigstore.dev/attestation/v1",
}


def predicate_type(name: str) -> str:
    """cosign's ``--type`` short names, or any URI as itself."""
    if name in PREDICATE_TYPES:
        return PREDICATE_TYPES[name]
    if "://" in name:
        return name
    raise VerificationError(f"unknown attestation type {name!r}", hint=f"use one of {sorted(PREDICATE_TYPES)} or a URI")


def attestation_tag(digest: str) -> str:
    return digest.replace(":", "-") + ".att"


def pae(payload_type: str, body: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding."""
    kind = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(body), body)


def statement(subject_name: str, digest: str, predicate_uri: str, predicate: Any) -> bytes:
    data = {
        "_type": STATEMENT_V01,
        "predicateType": predicate_uri,
        "subject": [{"name": subject_name, "digest": {"sha256": digest.removeprefix("sha256:")}}],
        "predicate": predicate,
    }
    return json.dumps(data, separators=(",", ":"), sort_keys=False).encode()


def envelope(body: bytes, key: ec.EllipticCurvePrivateKey) -> bytes:
    signature = key.sign(pae(INTOTO_PAYLOAD_TYPE, body), ec.ECDSA(hashes.SHA256()))
    data = {
        "payloadType": INTOTO_PAYLOAD_TYPE,
        "payload": base64.b64encode(body).decode(),
        "signatures": [{"keyid": "", "sig": base64.b64encode(signature).decode()}],
    }
    return json.dumps(data, separators=(",", ":")).encode()


def same_statement(public: ec.EllipticCurvePublicKey, body: bytes) -> Callable[[dict[str, Any], bytes], bool]:
    """Whether a stored ``.att`` layer already holds the statement ``body`` signed by ``public``."""

    def same(_layer: dict[str, Any], blob: bytes) -> bool:
        try:
            parsed = open_envelope(blob, [public])[1]
        except VerificationError:
            return False
        return bool(parsed == json.loads(body))

    return same


@dataclass(frozen=True, slots=True, kw_only=True)
class VerifiedAttestation:
    predicate_type: str
    predicate: Any
    key_index: int


def open_envelope(
    data: bytes, keys: Iterable[ec.EllipticCurvePublicKey], what: str = "attestation"
) -> tuple[int, Mapping[str, Any]]:
    """(index of the key that verified, statement) or :class:`VerificationError` naming ``what`` was opened."""
    try:
        env = json.loads(data)
        payload_type = env["payloadType"]
        body = base64.b64decode(env["payload"], validate=True)
        signatures = [base64.b64decode(item["sig"], validate=True) for item in env["signatures"]]
    except (ValueError, KeyError, TypeError):
        raise VerificationError(f"tampered {what}: the DSSE envelope is malformed") from None
    if payload_type != INTOTO_PAYLOAD_TYPE:
        raise VerificationError(f"{what} payload type is {payload_type!r}, not in-toto")
    message = pae(payload_type, body)
    for index, public in enumerate(keys):
        if any(verifies(public, message, sig) for sig in signatures):
            try:
                parsed = json.loads(body)
            except ValueError:
                raise VerificationError(f"tampered {what}: the statement is not JSON") from None
            if not isinstance(parsed, dict):
                raise VerificationError(f"tampered {what}: the statement is not an object")
            return index, parsed
    raise VerificationError(f"{what} signature does not verify with any trusted key")


def check_statement(parsed: Mapping[str, Any], digest: str, predicate_uri: str | None) -> None:
    """Subject digest and predicate type checks shared by keyed and keyless attestations."""
    if parsed.get("_type") not in (STATEMENT_V01, STATEMENT_V1):
        raise VerificationError(f"attestation statement type {parsed.get('_type')!r} is not in-toto")
    hexdigest = digest.removeprefix("sha256:")
    subjects = parsed.get("subject")
    if not isinstance(subjects, list) or not any(
        isinstance(s, dict) and isinstance(s.get("digest"), dict) and s["digest"].get("sha256") == hexdigest
        for s in subjects
    ):
        raise VerificationError(f"attestation is for another image (no subject with digest {digest})")
    if predicate_uri is not None and parsed.get("predicateType") != predicate_uri:
        raise VerificationError(f"attestation predicate is {parsed.get('predicateType')!r}, not {predicate_uri!r}")


def verify_envelopes(
    envelopes: Iterable[bytes],
    digest: str,
    keys: list[ec.EllipticCurvePublicKey],
    predicate_uri: str | None,
) -> list[VerifiedAttestation]:
    """Every envelope that passes; :class:`VerificationError` naming the reasons when none does."""
    passed: list[VerifiedAttestation] = []
    problems: list[str] = []
    count = 0
    for data in envelopes:
        count += 1
        try:
            index, parsed = open_envelope(data, keys)
            check_statement(parsed, digest, predicate_uri)
        except VerificationError as exc:
            problems.append(exc.message)
            continue
        passed.append(
            VerifiedAttestation(
                predicate_type=str(parsed["predicateType"]), predicate=parsed.get("predicate"), key_index=index
            )
        )
    if not passed:
        if count == 0:
            raise VerificationError(f"no attestation found for {digest}")
        raise VerificationError(f"no acceptable attestation for {digest}: {'; '.join(sorted(set(problems)))}")
    return passed
