"""Verify an image's cosign signatures and attestations. Returns a value or raises.

Numbered steps (tests name the step they break):

1. The reference must be pinned to a digest (the caller resolved the tag exactly once).
1i. When the digest names an image index: it keeps the index rules (:mod:`.platforms`),
   is signed itself (2-5 on the index digest), and each platform manifest verified is
   listed in it, is the platform its config says, and passes 2-6 on its own digest.
2. Fetch the signatures stored for that digest (``.sig`` tag); none → refuse.
3. For each: the payload blob's bytes must hash to its descriptor digest (the registry
   client checks), and the DER signature must verify over the payload with a trusted key.
   Keyless policies (identities) instead accept a Sigstore bundle referrer verified by
   sigstore-python, or a ``.sig`` layer with a Fulcio certificate and Rekor bundle
   annotations (cosign's legacy keyless layout) verified in steps 3k.1–3k.6
   (:mod:`.legacy`) against the Sigstore trusted root.
4. The verified payload must be in the exact cosign format and name the same digest.
5. The verified payload's repository identity must be this repository.
6. With ``attestation`` (or several ``attestations``): for each type, some DSSE attestation
   of that type for that digest must verify under a trusted key (or a keyless identity).
   A SLSA v1 provenance predicate must also carry the fields SLSA requires (6p).

Signatures come from the registry (``client``) or, air-gapped, from a release directory
(``offline_dir``: OCI layout + ``signatures.json``).

At least one signature must pass every step. The most specific failure is reported.

Where each step lives: 1 in :mod:`.image` (the entry point, :func:`.image.verify_image`; 1i
with :mod:`.platforms`),
2-5 in :mod:`.by_identity` (keyless, with :mod:`.sigstore_bundle`, :mod:`.legacy` and
:mod:`.certs`) and :mod:`.by_key`, 6 in :mod:`.attestations`. :mod:`.policy` composes them
(``AllOf``); :mod:`.trust` reads the user's trust file.
The package face imports nothing, so reading a trust file stays cheap.
"""
