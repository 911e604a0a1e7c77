"""Step 6: a verified attestation of each asked type (6p: a SLSA provenance says what SLSA requires)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from terminai_sandbox import provenance
from terminai_sandbox.errors import VerificationError
from terminai_sandbox.signing.formats import dsse
from terminai_sandbox.signing.formats.bundle import is_key_bundle, key_bundle_envelope
from terminai_sandbox.signing.store import SignatureSource
from terminai_sandbox.signing.verify.sigstore_bundle import verify_bundle
from terminai_sandbox.signing.verify.trust import VerificationPolicy


def verify_attestation(
    digest: str, policy: VerificationPolicy, source: SignatureSource, predicate_uri: str, trusted_root: Path | None
) -> tuple[dict[str, Any], ...]:
    # Step 6: keyed DSSE envelopes first (cosign's .att layers, and the envelopes of
    # key-based bundles, which cosign 3 writes by default), then keyless bundles.
    claims: list[dict[str, Any]] = []
    problems: list[str] = []
    envelopes = source.attestations(digest)
    bundles = source.bundles(digest)
    if policy.keys:
        envelopes = envelopes + [env for env in map(key_bundle_envelope, bundles) if env is not None]
    if envelopes and policy.keys:
        try:
            found = dsse.verify_envelopes(envelopes, digest, [k.public_key for k in policy.keys], predicate_uri)
            claims += [{"predicateType": a.predicate_type, "predicate": a.predicate} for a in found]
            # The same statement stored twice (.att layer and bundle referrer) is one claim.
            claims = list({json.dumps(c, sort_keys=True): c for c in claims}.values())
        except VerificationError as exc:
            problems.append(exc.message)
    if not claims and policy.identities:
        for bundle in bundles:
            if is_key_bundle(bundle):
                continue  # keyed: checked with the policy's keys above
            for identity in policy.identities:
                try:
                    statement = verify_bundle(
                        bundle,
                        digest=digest,
                        identity=identity,
                        predicate_type=predicate_uri,
                        trusted_root=trusted_root,
                    )
                except VerificationError as exc:
                    problems.append(exc.message)
                    continue
                claims.append({"predicateType": predicate_uri, "predicate": statement.get("predicate")})
    if predicate_uri == provenance.PREDICATE_TYPE:
        # Step 6p: a signed provenance must still say what SLSA v1 requires.
        valid = []
        for claim in claims:
            try:
                provenance.check_predicate(claim["predicate"])
            except VerificationError as exc:
                problems.append(f"step 6p: {exc.message}")
                continue
            valid.append(claim)
        claims = valid
    if not claims:
        detail = "; ".join(sorted(set(problems))) or "none stored"
        raise VerificationError(f"step 6: no verified {predicate_uri} attestation for {digest}: {detail}")
    return tuple(claims)
