"""Keyless signatures on a multi-platform index: the index and each platform signed by the
release identity (both layouts: a Sigstore bundle referrer and a legacy ``.sig`` layer), through
a real registry, with the test Sigstore instance as the trusted root (see
``tests/unit/signing/sigstore_testing``).

The index rule holds for identities as for keys: a platform signed by another identity is
refused although the index is signed by the release's.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from terminai_sandbox.common.reference import ImageRef
from terminai_sandbox.errors import VerificationError
from terminai_sandbox.registry import RegistryClient
from terminai_sandbox.signing import keyless, sign
from terminai_sandbox.signing.verify.image import verify_image
from terminai_sandbox.signing.verify.platforms import Platform
from terminai_sandbox.signing.verify.trust import KeylessIdentity, VerificationPolicy

from tests.fixtures.registry import RegistryServer
from tests.integration.signing.tiny_index import descriptor, plat, push_index, push_platform
from tests.unit.signing.sigstore_testing import IDENTITY, ISSUER, TestSigstore

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = "keyless/multi"
POLICY = VerificationPolicy(identities=(KeylessIdentity(identity=IDENTITY, issuer=ISSUER),))


def _sign(client: RegistryClient, name: str, digest: str, instance: TestSigstore, identity: str = IDENTITY) -> None:
    signer = instance.signer(identity=identity)
    sign.attach_bundle(client, REPO, digest, keyless.sign_statement(signer, name, digest))
    sign.sign_legacy_keyless(client, REPO, digest, signer, instance.trust(), docker_reference=name)


def test_a_keyless_index_and_its_platforms_verify_and_another_identity_is_refused(
    registry: RegistryServer, tmp_path: Path
) -> None:
    instance = TestSigstore()
    root = instance.write_trusted_root(tmp_path / "trusted_root.json")
    client = RegistryClient(registry.host)
    name = f"{registry.host}/{REPO}"
    children = {p: push_platform(client, REPO, tmp_path, p, content=p.encode()) for p in ("linux/amd64", "linux/arm64")}
    for digest in children.values():
        _sign(client, name, digest, instance)
    index = push_index(client, REPO, [descriptor(client, REPO, d, plat(p)) for p, d in children.items()])
    _sign(client, name, index, instance)

    result = verify_image(ImageRef.parse(f"{name}@{index}"), POLICY, client=client, trusted_root=root)
    assert {s.certificate_identity for s in result.signatures} == {IDENTITY}
    assert {p.platform: p.digest for p in result.platforms} == children
    for child in result.platforms:
        assert {s.certificate_identity for s in child.signatures} == {IDENTITY}

    # The same index shape, but its arm64 manifest signed by someone else.
    intruder = push_platform(client, REPO, tmp_path, "linux/arm64", content=b"signed by another identity")
    _sign(client, name, intruder, instance, identity="intruder@example.test")
    entries = [
        descriptor(client, REPO, children["linux/amd64"], plat("linux/amd64")),
        descriptor(client, REPO, intruder, plat("linux/arm64")),
    ]
    mixed = push_index(client, REPO, entries)
    _sign(client, name, mixed, instance)
    ref = ImageRef.parse(f"{name}@{mixed}")
    with pytest.raises(VerificationError) as caught:
        verify_image(ref, POLICY, client=client, trusted_root=root)
    assert intruder in caught.value.message
    assert "certificate identity ['intruder@example.test'] is not 'release@example.test'" in caught.value.message
    with pytest.raises(VerificationError, match="identity mismatch"):
        verify_image(ref, POLICY, client=client, trusted_root=root, platform=Platform.parse("linux/arm64"))
    amd64 = verify_image(ref, POLICY, client=client, trusted_root=root, platform=Platform.parse("linux/amd64"))
    assert [p.digest for p in amd64.platforms] == [children["linux/amd64"]]
