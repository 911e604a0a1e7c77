"""Step 1 and the entry point: verify a pinned image against the trust policy.

The numbered steps are listed in :mod:`terminai_sandbox.signing.verify`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

from terminai_sandbox.common.reference import ImageRef
from terminai_sandbox.errors import RegistryCorrupted, RegistryNotFound, RegistryUnreachable, VerificationError
from terminai_sandbox.registry import RegistryClient
from terminai_sandbox.signing.store import ImageStore, OfflineStore, RegistryStore, SignatureSource
from terminai_sandbox.signing.verify.platforms import ImageIndex, Platform, PlatformManifest, is_index, parse_index
from terminai_sandbox.signing.verify.policy import AllOf, Attested, Policy, SignedBy
from terminai_sandbox.signing.verify.result import Evidence, PlatformResult, VerificationResult, VerifiedSignature
from terminai_sandbox.signing.verify.trust import VerificationPolicy

__all__ = ["VerificationResult", "VerifiedSignature", "verify_image"]


def verify_image(
    ref: ImageRef,
    policy: VerificationPolicy,
    *,
    client: RegistryClient | None,
    offline_dir: Path | None = None,
    attestation: str | None = None,
    trusted_root: Path | None = None,
    attestations: Sequence[str] = (),
    platform: Platform | Callable[[], Platform] | None = None,
) -> VerificationResult:
    """Verify ``ref`` (pinned by digest) against ``policy``; raise :class:`VerificationError` otherwise.

    ``trusted_root`` pins the Sigstore trusted root for keyless signatures (default: the
    public-good root sigstore-python holds offline).

    When ``ref`` is an image index, the index must be signed, keep the rules of step 1i
    (:mod:`.platforms`), and each platform manifest verified must be listed in it and pass
    every step (signature and ``attestations``) on its own digest. ``platform`` names the
    one platform to verify (a callable is asked only when the image is an index: the
    launcher asks its engine only then); None verifies every platform the index lists.
    """
    # Step 1
    if ref.digest is None:
        raise VerificationError(f"{ref} is not pinned to a digest", hint="resolve the tag once, then verify by digest")
    if not policy.keys and not policy.identities:
        raise VerificationError(
            "the verification policy trusts no key and no identity: nothing can pass",
            hint="pass --key cosign.pub or a --policy file",
        )
    source: SignatureSource
    index: tuple[ImageIndex, ImageStore] | None = None
    if offline_dir is not None:
        # A release directory of an index is held to the same rule as the registry's copy.
        source = offline = OfflineStore(offline_dir)
        body, media_type = offline.require_image(ref.digest, "verify")
        if is_index(media_type, body):
            index = parse_index(body, ref.digest), offline
    elif client is not None:
        source = store = RegistryStore(client, ref.repository)
        body, media_type = _require_image(store, ref)
        if is_index(media_type, body):
            index = parse_index(body, ref.digest), store
    else:
        raise VerificationError("nothing to verify against: give a registry client or an offline directory")
    wanted = [*([attestation] if attestation is not None else []), *attestations]
    steps: list[Policy] = [SignedBy(policy, trusted_root)]
    steps += [Attested(policy, kind, trusted_root) for kind in dict.fromkeys(wanted)]
    if index is not None:
        return _verify_index(ref, *index, policy, steps, platform, trusted_root)
    evidence = _checked(ref, lambda: AllOf(steps).verify(ref, ref.digest or "", source))
    return VerificationResult(
        digest=ref.digest,
        repository=ref.name,
        signatures=evidence.signatures,
        policy_fingerprint=policy.fingerprint(),
        claims=evidence.claims,
    )


def _checked(ref: ImageRef, verify: Callable[[], Evidence]) -> Evidence:
    try:
        return verify()
    except RegistryCorrupted as exc:
        raise VerificationError(f"step 3: a signature blob for {ref.pinned} is corrupted: {exc.message}") from None
    except RegistryUnreachable as exc:
        raise VerificationError(f"cannot verify {ref.pinned}: {exc.message}", hint=exc.hint) from None


def _verify_index(
    ref: ImageRef,
    index: ImageIndex,
    store: ImageStore,
    policy: VerificationPolicy,
    steps: list[Policy],
    platform: Platform | Callable[[], Platform] | None,
    trusted_root: Path | None,
) -> VerificationResult:
    """The index is signed; each platform verified is listed in it, is what it claims, and is signed itself."""
    own = _checked(ref, lambda: SignedBy(policy, trusted_root).verify(ref, index.digest, store))
    wanted = platform() if callable(platform) else platform
    chosen = index.children if wanted is None else (index.select(wanted),)
    results = []
    for child in chosen:
        child_ref = ref.with_digest(child.digest)
        body, _ = _require_image(store, child_ref)
        _require_platform(store, child_ref, child, body)
        evidence = _checked(child_ref, partial(AllOf(steps).verify, child_ref, child.digest, store))
        results.append(
            PlatformResult(
                platform=str(child.platform),
                digest=child.digest,
                signatures=evidence.signatures,
                claims=evidence.claims,
            )
        )
    return VerificationResult(
        digest=index.digest,
        repository=ref.name,
        signatures=own.signatures,
        policy_fingerprint=policy.fingerprint(),
        platforms=tuple(results),
    )


def _require_platform(store: ImageStore, ref: ImageRef, child: PlatformManifest, body: bytes) -> None:
    """Step 1i: the manifest is an image whose config says the platform the index lists it as."""
    try:
        document = json.loads(body)
        config = document["config"]
        blob = json.loads(store.blob(config["digest"], config.get("size")))
        found = Platform.of(blob["os"], blob["architecture"], blob.get("variant"))
    except RegistryCorrupted as exc:
        raise VerificationError(f"step 1i: the config of {ref.pinned} is corrupted: {exc.message}") from None
    except (ValueError, KeyError, TypeError):
        raise VerificationError(
            f"step 1i: {ref.pinned} is not an image manifest with a config naming its platform"
        ) from None
    if is_index(str(document.get("mediaType", "")), body):
        raise VerificationError(f"step 1i: {ref.pinned} is itself an index: nested indexes are refused")
    if found != child.platform:
        raise VerificationError(
            f"step 1i: the index lists {child.digest} as {child.platform}, but its config says {found}",
            hint="the index misnames a platform; do not run this image",
        )


def _require_image(store: ImageStore, ref: ImageRef) -> tuple[bytes, str]:
    """Step 1: the pinned manifest exists. Signatures stored for a digest nobody pushed
    (a registry accepts a ``.sig`` tag for any digest) prove nothing about an image."""
    assert ref.digest is not None
    try:
        return store.require_image(ref.digest, "verify")
    except RegistryNotFound as exc:
        raise VerificationError(f"step 1: {exc.message}", hint=exc.hint) from None
    except RegistryCorrupted as exc:
        raise VerificationError(f"step 1: the manifest of {ref.pinned} is corrupted: {exc.message}") from None
    except RegistryUnreachable as exc:
        raise VerificationError(f"cannot verify {ref.pinned}: {exc.message}", hint=exc.hint) from None
