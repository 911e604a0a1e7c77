"""OCI media types and the content digest: the pure vocabulary shared by the registry client and signing.

Kept apart from :mod:`terminai_sandbox.registry` so that code which only shapes bytes
(signature formats) names these without importing an HTTP client.
"""

from __future__ import annotations

import hashlib

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_EMPTY = "application/vnd.oci.empty.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()
