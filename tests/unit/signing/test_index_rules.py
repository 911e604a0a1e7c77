"""Step 1i on its own: which index documents may name a platform to trust, and which platform is chosen.

The same rules run against a real registry, signed, in
tests/integration/signing/test_index_trust.py; here each rule is broken alone, including
the spellings a registry round trip would not show (Docker manifest lists, arm64's ``v8``,
the engines' ``x86_64``/``aarch64``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from terminai_sandbox.errors import VerificationError
from terminai_sandbox.oci_media import DOCKER_LIST, DOCKER_MANIFEST, OCI_INDEX, OCI_MANIFEST
from terminai_sandbox.signing.verify.platforms import Platform, is_index, parse_index

INDEX = "sha256:" + "00" * 32
A = "sha256:" + "aa" * 32
B = "sha256:" + "bb" * 32


def entry(digest: str, platform: dict[str, Any] | None, media: str = OCI_MANIFEST) -> dict[str, Any]:
    out: dict[str, Any] = {"mediaType": media, "digest": digest, "size": 500}
    if platform is not None:
        out["platform"] = platform
    return out


def linux(arch: str, **extra: Any) -> dict[str, Any]:
    return {"os": "linux", "architecture": arch, **extra}


def body(*entries: dict[str, Any], media: str = OCI_INDEX) -> bytes:
    return json.dumps({"schemaVersion": 2, "mediaType": media, "manifests": list(entries)}).encode()


def refusal(*entries: dict[str, Any]) -> str:
    with pytest.raises(VerificationError) as caught:
        parse_index(body(*entries), INDEX)
    assert caught.value.exit_code == 11
    return caught.value.message


def test_a_two_platform_index_selects_each_platform() -> None:
    index = parse_index(body(entry(A, linux("amd64")), entry(B, linux("arm64", variant="v8"))), INDEX)
    assert [str(p) for p in index.platforms] == ["linux/amd64", "linux/arm64"]
    assert index.select(Platform.parse("linux/amd64")).digest == A
    assert index.select(Platform.parse("linux/arm64/v8")).digest == B  # v8 is arm64's only variant
    assert index.select(Platform.of("linux", "aarch64")).digest == B  # as some podman builds report it
    assert index.select(Platform.of("linux", "x86_64")).digest == A


def test_a_docker_manifest_list_is_read_the_same_way() -> None:
    data = body(entry(A, linux("amd64"), DOCKER_MANIFEST), entry(B, linux("arm", variant="v7"), DOCKER_MANIFEST))
    assert is_index(DOCKER_LIST, data)
    assert is_index("application/json", body(entry(A, linux("amd64"))))  # told by its own mediaType
    assert not is_index(OCI_MANIFEST, data)
    index = parse_index(data, INDEX)
    assert index.select(Platform.parse("linux/arm/v7")).digest == B


def test_a_missing_platform_is_refused_naming_what_the_index_has() -> None:
    index = parse_index(body(entry(A, linux("amd64")), entry(B, linux("arm64"))), INDEX)
    with pytest.raises(VerificationError) as caught:
        index.select(Platform.parse("linux/riscv64"))
    assert "has no manifest for linux/riscv64 (it has: linux/amd64, linux/arm64)" in caught.value.message
    assert "linux/amd64, linux/arm64" in (caught.value.hint or "")
    with pytest.raises(VerificationError):
        index.select(Platform.parse("linux/arm64/v9"))


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ((entry(A, linux("amd64")), entry(A, linux("arm64"))), f"lists {A} more than once"),
        ((entry(A, linux("arm64")), entry(B, linux("arm64", variant="v8"))), "two manifests for linux/arm64"),
        ((entry(A, linux("amd64")), entry(B, linux("arm64"), OCI_INDEX)), "nested indexes are refused"),
        ((entry(A, linux("amd64")), entry(B, linux("arm64"), DOCKER_LIST)), "nested indexes are refused"),
        ((entry(A, linux("amd64")), entry(B, linux("arm64", variant="v9"))), "variant 'v9' (allowed: v8)"),
        ((entry(A, linux("amd64", variant="v3")),), "variant 'v3' (allowed: none)"),
        ((entry(A, linux("arm64", **{"os.version": "10.0.17763"})),), "os.version"),
        ((entry(A, linux("arm64", **{"os.features": ["win32k"]})),), "os.features"),
        ((entry(A, linux("arm64", features=["sse4"])),), "features"),
        ((entry(A, None),), "names no platform"),
        ((entry(A, {"os": "linux"}),), "no os and architecture"),
        ((entry(A, linux("amd64"), "application/vnd.oci.image.layer.v1.tar"),), "not an image manifest"),
        ((entry(A, linux("unknown")) | {"digest": "md5:abc"},), "no sha256 digest"),
        ((), "lists no manifests"),
        ((entry(A, linux("amd64")), entry(B, {"os": "unknown", "architecture": "unknown"})), "unknown/unknown"),
        (
            (entry(A, linux("amd64")), entry(B, linux("arm64")) | {"annotations": {"vnd.docker.reference.type": "x"}}),
            "BuildKit attestation manifest",
        ),
    ],
)
def test_each_rule_refuses_alone(entries: tuple[dict[str, Any], ...], message: str) -> None:
    assert message in refusal(*entries)


def test_not_json_is_refused() -> None:
    with pytest.raises(VerificationError, match=r"step 1i: the index .* is not JSON"):
        parse_index(b"{", INDEX)


def test_a_platform_text_must_be_os_slash_architecture() -> None:
    for text in ("amd64", "linux/", "linux/arm/v7/extra", ""):
        with pytest.raises(VerificationError, match="is not a platform"):
            Platform.parse(text)
    assert str(Platform.parse("linux/arm64/v8")) == "linux/arm64"
    assert Platform.parse("linux/arm/v7") != Platform.parse("linux/arm/v6")
