"""Pure signature formats: bytes ↔ values, no registry and no network.

``payload`` (cosign simple signing), ``sig`` (the ``.sig`` manifest and its layers),
``dsse`` (in-toto statements in DSSE envelopes, the ``.att`` layers), ``bundle`` (Sigstore
bundles and their OCI referrer shapes), ``rekor`` (the legacy keyless annotations),
``keys`` (PEM ↔ keys) and ``trustroot`` (a Sigstore ``trusted_root.json``).
"""
