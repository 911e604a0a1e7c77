"""Where signatures live: the one module of ``signing`` that talks to a registry.

Reading gives the same three things for a digest from either store: cosign ``.sig``
layers, ``.att`` DSSE envelopes and Sigstore bundles (:class:`SignatureSource`).

* :class:`RegistryStore` reads and writes them in the image's repository: the ``.sig`` and
  ``.att`` tags (read-modify-write, accumulating layers, as cosign does) and bundle
  referrers (the OCI 1.1 referrers API, or the fallback index at tag ``sha256-<hex>``).
* :class:`OfflineStore` reads a release directory (``dist/X.Y.Z/``) for air-gapped checks:
  the OCI image layout under ``oci/`` and ``signatures.json``, written by
  :func:`export_offline`. For a multi-platform release ``oci/`` holds the image index and
  every platform image, and ``signatures.json`` holds the index's signatures and, under
  ``platforms``, each platform manifest's, by digest: the index rule is checked offline
  exactly as against a registry.

An absent tag is told from a failure by the registry client's error type
(:class:`~terminai_sandbox.errors.RegistryNotFound`), never by its message.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from terminai_apts import durable

from terminai_sandbox.artifacts.oci_layout import IndexLayout, OciLayout, is_index_layout
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


class ImageStore(SignatureSource, Protocol):
    """A signature source that also holds the images: what verifying an index reads."""

    def require_image(self, digest: str, doing: str) -> tuple[bytes, str]: ...
    def blob(self, digest: str, size: int | None = None) -> bytes: ...


def offline_layout(root: Path) -> OciLayout | IndexLayout:
    """The image (or the index) of the release directory ``root``, refused as verification fails."""
    where = root / "oci"
    try:
        return IndexLayout.open(where) if is_index_layout(where) else OciLayout.open(where)
    except ArtifactCorrupted as exc:
        raise VerificationError(f"step 3: the image in {root} is corrupted: {exc.message}") from None
    except ArtifactError as exc:
        raise VerificationError(
            f"{root} is not a release directory with an OCI layout: {exc.message}", hint=exc.hint
        ) from None


def top_digest(layout: OciLayout | IndexLayout) -> str:
    """What a release directory's signatures are for: the index's digest, or the one image's."""
    return layout.index_digest if isinstance(layout, IndexLayout) else layout.manifest_digest


@dataclass(frozen=True, slots=True)
class OfflineStore:
    """A release directory. The image (or index) in ``oci/`` must be the digest being verified;
    a platform of that index is read by its own digest."""

    root: Path
    # The layout, opened once: one verification judges one reading of the directory (and an
    # index's platforms do not each open every manifest again).
    _opened: dict[str, OciLayout | IndexLayout] = field(default_factory=dict, repr=False, compare=False)

    def _layout(self) -> OciLayout | IndexLayout:
        if "layout" not in self._opened:
            self._opened["layout"] = offline_layout(self.root)
        return self._opened["layout"]

    def _manifests(self) -> dict[str, tuple[bytes, str]]:
        """Every manifest the layout holds by digest: (bytes as stored, media type)."""
        layout = self._layout()
        if isinstance(layout, OciLayout):
            return {layout.manifest_digest: (layout.manifest_bytes, layout.manifest.media_type)}
        found = {layout.index_digest: (layout.index_bytes, layout.index.media_type)}
        found.update(
            {image.manifest_digest: (image.manifest_bytes, image.manifest.media_type) for image in layout.images}
        )
        return found

    def require_image(self, digest: str, doing: str) -> tuple[bytes, str]:
        """(manifest bytes, media type) of ``digest``, which the release directory must hold."""
        manifests = self._manifests()
        if digest not in manifests:
            top = next(iter(manifests))
            raise VerificationError(
                f"step 1: {self.root} holds image {top}, not {digest}: refusing to {doing} an image it lacks",
                hint="pass the release directory of that image, or name its digest",
            )
        return manifests[digest]

    def blob(self, digest: str, size: int | None = None) -> bytes:
        """A blob of the layout (a platform's config), checked against its digest."""
        layout = self._layout()
        image = layout.images[0] if isinstance(layout, IndexLayout) else layout  # every image shares blobs/
        try:
            return image.read_blob(digest)
        except ArtifactCorrupted as exc:
            raise VerificationError(f"step 3: {exc.message}") from None
        except ArtifactError as exc:
            raise VerificationError(f"{self.root}: {exc.message}", hint=exc.hint) from None

    def _data(self, digest: str) -> dict[str, Any]:
        layout = self._layout()
        top = top_digest(layout)
        children = {image.manifest_digest for image in layout.images} if isinstance(layout, IndexLayout) else set()
        if digest != top and digest not in children:
            raise VerificationError(f"{self.root} holds image {top}, not {digest}")
        try:
            data: dict[str, Any] = json.loads((self.root / OFFLINE_FILE).read_text())
        except OSError:
            return {}
        except ValueError:
            raise VerificationError(f"{self.root / OFFLINE_FILE} is not valid JSON") from None
        if not isinstance(data, dict):
            raise VerificationError(f"{self.root / OFFLINE_FILE} is not a JSON object (as 'release' writes it)")
        if data.get("digest") != top:
            raise VerificationError(f"{self.root / OFFLINE_FILE} is for {data.get('digest')}, not {top}")
        if digest == top:
            return data
        platforms = data.get("platforms", {})
        child = platforms.get(digest, {}) if isinstance(platforms, dict) else None
        if not isinstance(child, dict):
            raise VerificationError(f"{self.root / OFFLINE_FILE}: the signatures of platform {digest} are malformed")
        return child

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


def export_offline(source: SignatureSource, digest: str, target: Path, *, children: tuple[str, ...] = ()) -> Path:
    """Write every signature, attestation and bundle for ``digest`` to ``target/signatures.json``.

    ``children`` are the platform manifests of an index ``digest``: theirs go under ``platforms``.
    """
    data: dict[str, Any] = {"digest": digest, **_exported(source, digest)}
    if children:
        data["platforms"] = {child: _exported(source, child) for child in children}
    path = target / OFFLINE_FILE
    durable.write(path, (json.dumps(data, indent=1, sort_keys=True) + "\n").encode())  # whole or not at all
    return path


def _exported(source: SignatureSource, digest: str) -> dict[str, Any]:
    try:
        signatures = source.signatures(digest)
        envelopes = source.attestations(digest)
        bundles = source.bundles(digest)
    except RegistryError as exc:
        raise VerificationError(f"cannot export signatures for {digest}: {exc.message}") from None
    return {
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
