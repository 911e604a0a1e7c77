"""Step 1: the image, resolved to a digest once and verified exactly as ``verify`` does.

Nothing is emitted for an image that does not verify: :func:`verified_source` returns a
:class:`VerifiedSource` or raises (``VerificationError``, exit 11, with ``verify``'s
messages). The digest is the one that verified, and every object names the image by it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from terminai_sandbox.common.reference import ImageRef
from terminai_sandbox.common.registry_auth import docker_config_credentials
from terminai_sandbox.errors import ConfigError
from terminai_sandbox.registry import RegistryClient
from terminai_sandbox.signing.verify.image import VerificationResult, verify_image
from terminai_sandbox.signing.verify.trust import VerificationPolicy


@dataclass(frozen=True, slots=True, kw_only=True)
class VerifiedSource:
    """A verified image: ``ref`` carries the digest that verified under ``policy``."""

    ref: ImageRef
    policy: VerificationPolicy
    result: VerificationResult

    @property
    def image(self) -> str:
        """``registry/repository@sha256:...``: how every emitted object names the image."""
        return self.ref.pinned


def _offline_digest(offline_dir: Path) -> str:
    index_path = offline_dir / "oci" / "index.json"
    try:
        index = json.loads(index_path.read_text())
        return str(index["manifests"][0]["digest"])
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        raise ConfigError(
            f"{index_path} is missing or is not an OCI index",
            hint="pass a release directory such as dist/X.Y.Z (it holds oci/index.json)",
        ) from None


def verified_source(
    reference: str,
    policy: VerificationPolicy,
    *,
    offline_dir: Path | None = None,
    trusted_root: Path | None = None,
    insecure: bool = False,
    registry_timeout: float | None = None,
) -> VerifiedSource:
    """Resolve ``reference`` to a digest (a tag once, through the registry) and verify it.

    ``registry_timeout`` is each registry request's total deadline (None: the client's default).
    """
    ref = ImageRef.parse(reference)
    client = None
    if offline_dir is not None:
        if ref.digest is None:
            ref = ref.with_digest(_offline_digest(offline_dir))
    else:
        client = RegistryClient(
            ref.registry,
            insecure=insecure,
            credentials=docker_config_credentials(ref.registry),
            timeout=registry_timeout,
        )
        if ref.digest is None:
            if ref.tag is None:
                raise ConfigError(
                    f"{reference} has neither tag nor digest",
                    hint="name the image by digest (NAME@sha256:...) or by a release tag (NAME:X.Y.Z)",
                )
            ref = ref.with_digest(client.resolve(ref.repository, ref.tag))
    result = verify_image(ref, policy, client=client, offline_dir=offline_dir, trusted_root=trusted_root)
    return VerifiedSource(ref=ref, policy=policy, result=result)
