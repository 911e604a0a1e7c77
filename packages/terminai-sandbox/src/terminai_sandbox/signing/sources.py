"""Where signatures come from: a registry, or a release directory for air-gapped checks.

Both give the same three things for a digest: cosign ``.sig`` layers, ``.att`` DSSE
envelopes and Sigstore bundles. A release directory (``dist/X.Y.Z/``) holds the OCI image
layout under ``oci/`` and ``signatures.json``, written by :func:`export_offline`.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from terminai_sandbox.errors import RegistryError, VerificationError
from terminai_sandbox.registry import RegistryClient, sha256_digest
from terminai_sandbox.signing import attest, cosign

OFFLINE_FILE = "signatures.json"


class SignatureSource(Protocol):
    def signatures(self, digest: str) -> list[cosign.StoredSignature]: ...
    def attestations(self, digest: str) -> list[bytes]: ...
    def bundles(self, digest: str) -> list[str]: ...


@dataclass(frozen=True, slots=True)
class RegistrySource:
    client: RegistryClient
    repo: str

    def signatures(self, digest: str) -> list[cosign.StoredSignature]:
        return cosign.fetch(self.client, self.repo, digest)

    def attestations(self, digest: str) -> list[bytes]:
        return attest.fetch_envelopes(self.client, self.repo, digest)

    def bundles(self, digest: str) -> list[str]:
        from terminai_sandbox.signing.verify import referrer_bundles  # noqa: PLC0415 (verify imports this module)

        return referrer_bundles(self.client, self.repo, digest)


@dataclass(frozen=True, slots=True)
class OfflineSource:
    """A release directory. The image in ``oci/`` must be the digest being verified."""

    root: Path

    def _data(self, digest: str) -> dict[str, Any]:
        index_path = self.root / "oci" / "index.json"
        try:
            index = json.loads(index_path.read_text())
            manifest_digest = index["manifests"][0]["digest"]
            blob = (self.root / "oci" / "blobs" / "sha256" / manifest_digest.removeprefix("sha256:")).read_bytes()
        except (OSError, ValueError, KeyError, IndexError) as exc:
            raise VerificationError(f"{self.root} is not a release directory with an OCI layout: {exc}") from None
        if manifest_digest != digest:
            raise VerificationError(f"{self.root} holds image {manifest_digest}, not {digest}")
        if sha256_digest(blob) != digest:
            raise VerificationError(f"step 3: the image manifest in {self.root} is corrupted (hashes differently)")
        try:
            data: dict[str, Any] = json.loads((self.root / OFFLINE_FILE).read_text())
        except OSError:
            return {}
        except ValueError:
            raise VerificationError(f"{self.root / OFFLINE_FILE} is not valid JSON") from None
        if data.get("digest") != digest:
            raise VerificationError(f"{self.root / OFFLINE_FILE} is for {data.get('digest')}, not {digest}")
        return data

    def signatures(self, digest: str) -> list[cosign.StoredSignature]:
        out = []
        for item in self._data(digest).get("signatures", []):
            payload = base64.b64decode(item["payload"])
            if sha256_digest(payload) != item["payload_digest"]:
                raise VerificationError(f"step 3: signature payload {item['payload_digest']} is corrupted")
            layer = {"digest": item["payload_digest"], "annotations": item.get("annotations", {})}
            out.append(cosign.stored_signature(layer, payload))
        return out

    def attestations(self, digest: str) -> list[bytes]:
        return [base64.b64decode(item) for item in self._data(digest).get("attestations", [])]

    def bundles(self, digest: str) -> list[str]:
        return [str(item) for item in self._data(digest).get("bundles", [])]


def export_offline(source: SignatureSource, digest: str, target: Path) -> Path:
    """Write every signature, attestation and bundle for ``digest`` to ``target/signatures.json``."""
    try:
        signatures = source.signatures(digest)
        envelopes = source.attestations(digest)
        bundles = source.bundles(digest)
    except RegistryError as exc:
        raise VerificationError(f"cannot export signatures for {digest}: {exc.message}") from None
    data = {
        "digest": digest,
        "signatures": [
            {
                "payload": base64.b64encode(s.payload).decode(),
                "payload_digest": s.payload_digest,
                "annotations": s.annotations,
            }
            for s in signatures
        ],
        "attestations": [base64.b64encode(e).decode() for e in envelopes],
        "bundles": bundles,
    }
    path = target / OFFLINE_FILE
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return path
