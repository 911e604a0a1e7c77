"""Bundles found through the OCI 1.1 referrers API, when a registry has one.

Debian's docker-registry (distribution 2.8) has no referrers API, so the integration tests
exercise the fallback tag; this test serves the API's answer (an index whose entries carry
the manifest's ``artifactType``, OCI distribution spec 1.1) from memory.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from terminai_sandbox.errors import RegistryNotFound
from terminai_sandbox.oci_media import OCI_INDEX, OCI_MANIFEST, sha256_digest
from terminai_sandbox.signing.formats import bundle as bundle_format
from terminai_sandbox.signing.formats import keys
from terminai_sandbox.signing.store import RegistryStore

IMAGE = "sha256:" + "ab" * 32
OTHER = "sha256:" + "cd" * 32


@dataclass
class Answer:
    status_code: int
    body: dict[str, Any] | None = None

    def json(self) -> dict[str, Any]:
        assert self.body is not None
        return self.body

    @property
    def content(self) -> bytes:
        return json.dumps(self.body).encode()


@dataclass
class ReferrersRegistry:
    """A registry with the referrers API: manifests and blobs by digest, referrers by subject."""

    registry: str = "registry.example"
    manifests: dict[str, bytes] = field(default_factory=dict)
    blobs: dict[str, bytes] = field(default_factory=dict)
    referrers: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    asked: list[str] = field(default_factory=list)

    def request(self, method: str, repo: str, path: str, **_: Any) -> Answer:
        self.asked.append(path)
        subject = path.removeprefix("referrers/")
        return Answer(200, {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": self.referrers.get(subject, [])})

    def get_manifest(self, repo: str, reference: str) -> tuple[bytes, str, str]:
        if reference not in self.manifests:
            raise RegistryNotFound(f"{reference}: manifest unknown")
        return self.manifests[reference], OCI_MANIFEST, reference

    def get_blob(self, repo: str, digest: str, *, size: int | None = None) -> bytes:
        return self.blobs[digest]

    def refer(self, subject: str, bundle_json: str, *, artifact_type: str = bundle_format.BUNDLE_MEDIA) -> str:
        manifest = bundle_format.referrer_manifest(
            bundle_json, subject_digest=subject, subject_media=OCI_MANIFEST, subject_size=1
        )
        digest = sha256_digest(manifest)
        self.manifests[digest] = manifest
        self.blobs[sha256_digest(bundle_json.encode())] = bundle_json.encode()
        entry = {"mediaType": OCI_MANIFEST, "digest": digest, "size": len(manifest), "artifactType": artifact_type}
        self.referrers.setdefault(subject, []).append(entry)
        return digest


def _store(registry: ReferrersRegistry) -> RegistryStore:
    return RegistryStore(registry, "org/sandbox")  # type: ignore[arg-type]


def test_bundles_come_from_the_referrers_api_and_the_fallback_tag_is_not_read() -> None:
    registry = ReferrersRegistry()
    bundle = bundle_format.key_bundle("registry.example/org/sandbox", IMAGE, keys.generate())
    registry.refer(IMAGE, bundle)
    registry.refer(IMAGE, '{"sbom": true}', artifact_type="application/vnd.cyclonedx+json")  # not a bundle
    assert _store(registry).bundles(IMAGE) == [bundle]
    assert registry.asked == [f"referrers/{IMAGE}"]


def test_an_api_answer_listing_another_subjects_referrer_yields_nothing() -> None:
    # A registry (or a proxy) that answers with a referrer of another image: the manifest's subject decides.
    registry = ReferrersRegistry()
    registry.refer(OTHER, bundle_format.key_bundle("r/x", OTHER, keys.generate()))
    registry.referrers[IMAGE] = registry.referrers.pop(OTHER)
    assert _store(registry).bundles(IMAGE) == []


def test_a_listed_referrer_that_is_gone_is_skipped() -> None:
    registry = ReferrersRegistry()
    gone = registry.refer(IMAGE, bundle_format.key_bundle("r/x", IMAGE, keys.generate()))
    kept = bundle_format.key_bundle("r/x", IMAGE, keys.generate())
    registry.refer(IMAGE, kept)
    del registry.manifests[gone]
    assert _store(registry).bundles(IMAGE) == [kept]
    assert json.loads(kept)["mediaType"] == bundle_format.BUNDLE_MEDIA
