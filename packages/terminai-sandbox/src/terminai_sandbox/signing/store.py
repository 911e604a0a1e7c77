"""Where signatures live: the one module of ``signing`` that talks to a registry.

Reading gives the same three things for a digest from either store: cosign ``.sig``
layers, ``.att`` DSSE envelopes and Sigstore bundles (:class:`SignatureSource`).

* :class:`RegistryStore` reads and writes them in the image's repository: the ``.sig`` and
  ``.att`` tags (read-modify-write, accumulating layers, as cosign does) and bundle
  referrers (the OCI 1.1 referrers API, or the fallback index at tag ``sha256-<hex>``).
* :class:`OfflineStore` reads a release directory (``dist/X.Y.Z/``) for air-gapped checks:
  the OCI image layout under ``oci/`` and ``signatures.json``, written by
  :func:`export_offline`.

An absent tag is told from a failure by the registry client's error type
(:class:`~terminai_sandbox.errors.RegistryNotFound`), never by its message.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from terminai_apts import durable

from terminai_sandbox.artifacts.oci_layout import OciLayout
from terminai_sandbox.common.deadlines import MAX_BLOB
from terminai_sandbox.errors import (
    ArtifactCorrupted,
    ArtifactError,
    RegistryBadResponse,
    RegistryError,
    RegistryNotFound,
    VerificationError,
)
from terminai_sandbox.oci_media import OCI_INDEX, OCI_MANIFEST, sha256_digest
from terminai_sandbox.registry import RegistryClient, json_document
from terminai_sandbox.signing.formats import bundle as bundle_format
from terminai_sandbox.signing.formats import dsse, sig
from terminai_sandbox.signing.formats import payload as payload_format

OFFLINE_FILE = "signatures.json"


class SignatureSource(Protocol):
    """What verification reads: everything stored for one image digest."""

    def signatures(self, digest: str) -> list[sig.StoredSignature]: ...
    def attestations(self, digest: str) -> list[bytes]: ...
    def bundles(self, digest: str) -> list[str]: ...


@dataclass(frozen=True, slots=True)
class RegistryStore:
    """Signatures in the image's own repository ``repo`` of ``client``'s registry."""

    client: RegistryClient
    repo: str

    # -- reading -------------------------------------------------------------------
    def signatures(self, digest: str) -> list[sig.StoredSignature]:
        """Every simple-signing layer stored for ``digest`` (empty when there is no .sig tag)."""
        return [
            sig.stored_signature(layer, data)
            for layer, data in self.layers(sig.signature_tag(digest), payload_format.MEDIA_TYPE)
        ]

    def attestations(self, digest: str) -> list[bytes]:
        return [blob for _, blob in self.layers(dsse.attestation_tag(digest), dsse.DSSE_MEDIA_TYPE)]

    def bundles(self, digest: str) -> list[str]:
        """Sigstore bundles attached to ``digest`` as OCI 1.1 referrers (API, then the fallback tag)."""
        response = self.client.request("GET", self.repo, f"referrers/{digest}", headers={"Accept": OCI_INDEX})
        if response.status_code == 200:
            index = json_document(response.content, f"{self.client.registry}/{self.repo}: referrers of {digest}")
        else:
            body = self._manifest_or_none(bundle_format.fallback_tag(digest))
            if body is None:
                return []
            index = json.loads(body)
        found = []
        for artifact in bundle_format.bundle_referrers(index):
            manifest = self._manifest_or_none(artifact)
            if manifest is None:
                continue  # listed in a stale fallback index, since deleted
            found += [
                self.client.get_blob(self.repo, layer).decode()
                for layer in bundle_format.bundle_layers(manifest, digest)
            ]
        return found

    def layers(self, tag: str, media_type: str) -> list[tuple[dict[str, Any], bytes]]:
        """(descriptor, checked blob bytes) of each ``media_type`` layer at ``tag``; [] when the tag is absent."""
        body = self._manifest_or_none(tag)
        if body is None:
            return []
        return [
            (layer, self.client.get_blob(self.repo, layer["digest"], size=_size(layer)))
            for layer in self._layers(body, tag)
            if layer.get("mediaType") == media_type
        ]

    def _layers(self, body: bytes, tag: str) -> list[dict[str, Any]]:
        """The layer descriptors of the manifest at ``tag``; :class:`RegistryBadResponse` for another shape."""
        layers = json.loads(body).get("layers", [])  # a JSON object: the client checked it
        if not isinstance(layers, list) or not all(
            isinstance(layer, dict) and isinstance(layer.get("digest"), str) for layer in layers
        ):
            raise RegistryBadResponse(
                f"{self.client.registry}/{self.repo}:{tag}: the manifest's layers are not a list of descriptors",
                hint="the tag does not hold a cosign manifest; check the registry or remove the tag",
            )
        return layers

    def _manifest_or_none(self, tag: str) -> bytes | None:
        try:
            return self.client.get_manifest(self.repo, tag)[0]
        except RegistryNotFound:
            return None

    def require_image(self, digest: str, doing: str) -> tuple[bytes, str]:
        """(manifest bytes, media type) of image ``digest``; :class:`RegistryNotFound` when absent.

        Signing, attesting and verifying start here: a registry accepts a ``.sig`` tag or a
        referrer for any digest, so without this check a claim about an image that does
        not exist would be written, and later read back as "verified".
        """
        try:
            body, media_type, _ = self.client.get_manifest(self.repo, digest)
        except RegistryNotFound:
            raise RegistryNotFound(
                f"{self.client.registry}/{self.repo}@{digest} does not exist: refusing to {doing} "
                "an image the registry does not hold",
                hint="push the image first (terminai-sandbox push), or check the repository and digest",
            ) from None
        return body, media_type

    def blob(self, digest: str, size: int | None = None) -> bytes:
        """An image's blob (a platform manifest's config), checked against its digest."""
        return self.client.get_blob(self.repo, digest, size=size)

    # -- writing -------------------------------------------------------------------
    def append_layer(
        self,
        tag: str,
        *,
        blob: bytes,
        media_type: str,
        annotations: dict[str, str],
        is_duplicate: Callable[[dict[str, Any], bytes], bool],
    ) -> bool:
        """Add one layer to the cosign manifest at ``tag`` (read-modify-write, as cosign does).

        Skipped (returns False) when a layer of the same media type exists for which
        ``is_duplicate`` says it carries an equivalent claim.
        """
        body = self._manifest_or_none(tag)
        layers: list[dict[str, Any]] = self._layers(body, tag) if body is not None else []
        for layer in layers:
            if layer.get("mediaType") == media_type and is_duplicate(
                layer, self.client.get_blob(self.repo, layer["digest"], size=_size(layer))
            ):
                return False
        blob_digest = sha256_digest(blob)
        layers.append({"mediaType": media_type, "size": len(blob), "digest": blob_digest, "annotations": annotations})
        config, manifest = sig.manifest(layers)
        self.client.push_blob(self.repo, blob_digest, blob)
        self.client.push_blob(self.repo, sha256_digest(config), config)
        self.client.put_manifest(self.repo, tag, manifest, OCI_MANIFEST)
        return True

    def attach_bundle(self, digest: str, bundle_json: str) -> str:
        """Attach ``bundle_json`` to image ``digest`` as a referrer; return the artifact manifest digest."""
        image_manifest, media_type = self.require_image(digest, "sign")
        blob = bundle_json.encode()
        self.client.push_blob(self.repo, sha256_digest(blob), blob)
        empty = bundle_format.EMPTY_CONFIG
        self.client.push_blob(self.repo, sha256_digest(empty), empty)
        body = bundle_format.referrer_manifest(
            bundle_json, subject_digest=digest, subject_media=media_type, subject_size=len(image_manifest)
        )
        artifact = sha256_digest(body)
        response = self.client.request(
            "PUT", self.repo, f"manifests/{artifact}", push=True, data=body, headers={"Content-Type": OCI_MANIFEST}
        )
        if response.status_code != 201:
            raise RegistryBadResponse(
                f"{self.client.registry}/{self.repo}: bundle referrer rejected ({response.status_code})"
            )
        if "OCI-Subject" not in response.headers:
            # No referrers API: maintain the fallback index at tag sha256-<hex>.
            tag = bundle_format.fallback_tag(digest)
            current = self._manifest_or_none(tag)
            index = bundle_format.with_referrer(
                json.loads(current) if current is not None else None, artifact, body, bundle_json
            )
            if index is not None:
                self.client.put_manifest(self.repo, tag, json.dumps(index, separators=(",", ":")).encode(), OCI_INDEX)
        return artifact


def _size(descriptor: dict[str, Any]) -> int | None:
    """A descriptor's ``size`` when it is one (it only lengthens the fetch's deadline)."""
    size = descriptor.get("size")
    return size if type(size) is int and 0 < size <= MAX_BLOB else None


@dataclass(frozen=True, slots=True)
class OfflineStore:
    """A release directory. The image in ``oci/`` must be the digest being verified."""

    root: Path

    def _data(self, digest: str) -> dict[str, Any]:
        try:
            layout = OciLayout.open(self.root / "oci")
        except ArtifactCorrupted as exc:
            raise VerificationError(f"step 3: the image in {self.root} is corrupted: {exc.message}") from None
        except ArtifactError as exc:
            raise VerificationError(
                f"{self.root} is not a release directory with an OCI layout: {exc.message}", hint=exc.hint
            ) from None
        if layout.manifest_digest != digest:
            raise VerificationError(f"{self.root} holds image {layout.manifest_digest}, not {digest}")
        try:
            data: dict[str, Any] = json.loads((self.root / OFFLINE_FILE).read_text())
        except OSError:
            return {}
        except ValueError:
            raise VerificationError(f"{self.root / OFFLINE_FILE} is not valid JSON") from None
        if not isinstance(data, dict):
            raise VerificationError(f"{self.root / OFFLINE_FILE} is not a JSON object (as 'release' writes it)")
        if data.get("digest") != digest:
            raise VerificationError(f"{self.root / OFFLINE_FILE} is for {data.get('digest')}, not {digest}")
        return data

    def signatures(self, digest: str) -> list[sig.StoredSignature]:
        out = []
        for item in self._data(digest).get("signatures", []):
            payload = base64.b64decode(item["payload"])
            if sha256_digest(payload) != item["payload_digest"]:
                raise VerificationError(f"step 3: signature payload {item['payload_digest']} is corrupted")
            layer = {"digest": item["payload_digest"], "annotations": item.get("annotations", {})}
            out.append(sig.stored_signature(layer, payload))
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
    durable.write(path, (json.dumps(data, indent=1, sort_keys=True) + "\n").encode())  # whole or not at all
    return path
