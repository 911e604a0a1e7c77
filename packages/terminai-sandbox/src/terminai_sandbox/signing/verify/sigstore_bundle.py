"""Verify a keyless Sigstore bundle offline with sigstore-python (steps 3 and 6, keyless).

sigstore-python's ``Verifier`` checks the bundle against the public-good trusted root
(offline: no TUF refresh; an explicit ``trusted_root.json`` pins it for air-gapped use).
This module checks what the library leaves to the caller: the DSSE payload type is
in-toto, a subject digest equals the image digest, and the predicate type is the expected
one. Identities match exactly or by a full regular expression (``re.fullmatch``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cryptography import x509

from terminai_sandbox.errors import VerificationError
from terminai_sandbox.signing.formats.dsse import INTOTO_PAYLOAD_TYPE as INTOTO
from terminai_sandbox.signing.verify.certs import identity_problem
from terminai_sandbox.signing.verify.trust import KeylessIdentity


class _IdentityPolicy:
    """sigstore-python policy protocol: exact or full-regexp identity and issuer."""

    def __init__(self, wanted: KeylessIdentity) -> None:
        self.wanted = wanted

    def verify(self, cert: x509.Certificate) -> None:
        from sigstore.errors import VerificationError as SigstoreVerificationError

        problem = identity_problem(cert, self.wanted)
        if problem is not None:
            raise SigstoreVerificationError(problem)


def verify_bundle(
    bundle_json: str,
    *,
    digest: str,
    identity: KeylessIdentity,
    predicate_type: str | None = None,
    trusted_root: Path | None = None,
) -> dict[str, Any]:
    """Verify a DSSE Sigstore bundle for ``digest`` offline; return the in-toto statement."""
    from sigstore.errors import Error as SigstoreError
    from sigstore.models import Bundle, TrustedRoot
    from sigstore.verify import Verifier

    try:
        bundle = Bundle.from_json(bundle_json)
        verifier = (
            Verifier(trusted_root=TrustedRoot.from_file(str(trusted_root)))
            if trusted_root
            else Verifier.production(offline=True)
        )
        payload_type, payload = verifier.verify_dsse(bundle, _IdentityPolicy(identity))
    except (SigstoreError, ValueError) as exc:
        raise VerificationError(f"keyless bundle rejected: {exc}") from None
    if payload_type != INTOTO:
        raise VerificationError(f"keyless bundle carries {payload_type!r}, not an in-toto statement")
    statement: dict[str, Any] = json.loads(payload)
    hexd = digest.removeprefix("sha256:")
    if not any(s.get("digest", {}).get("sha256") == hexd for s in statement.get("subject", [])):
        raise VerificationError(f"keyless bundle is for another image digest (wanted {digest})")
    if predicate_type is not None and statement.get("predicateType") != predicate_type:
        raise VerificationError(
            f"keyless bundle has predicate {statement.get('predicateType')!r}, wanted {predicate_type!r}"
        )
    return statement
