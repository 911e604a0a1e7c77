"""Signatures and attestations in cosign's formats, in three floors that depend one way.

``formats`` (pure bytes ↔ values) ← ``store`` (the only registry and release-directory
I/O) ← ``verify`` (numbered steps as composable policies over a signature source).
``sign`` and ``keyless`` produce signatures through the same formats and store. The
package face imports nothing.
"""
