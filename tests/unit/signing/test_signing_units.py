from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from terminai_sandbox.common.registry_auth import docker_config_credentials, is_loopback
from terminai_sandbox.errors import ConfigError, SigningError, VerificationError
from terminai_sandbox.registry import parse_challenge
from terminai_sandbox.secret import Secret
from terminai_sandbox.signing.formats import keys
from terminai_sandbox.signing.formats.payload import parse, simple_signing
from terminai_sandbox.signing.formats.sig import go_config as _go_config
from terminai_sandbox.signing.formats.sig import signature_tag
from terminai_sandbox.signing.verify.trust import load_policy

DIGEST = "sha256:f387669f10cdf54cf5f69d57793350313b4ee36c34a16da3a372432cc47cc080"


def test_payload_bytes_match_cosign_exactly() -> None:
    expected = (
        b'{"critical":{"identity":{"docker-reference":"127.0.0.1:5055/sovtest/base"},"image":'
        b'{"docker-manifest-digest":"sha256:f387669f10cdf54cf5f69d57793350313b4ee36c34a16da3a372432cc47cc080"},'
        b'"type":"cosign container image signature"},"optional":null}'
    )
    assert simple_signing("127.0.0.1:5055/sovtest/base", DIGEST) == expected
    assert len(expected) == 243


def test_payload_optional_is_sorted_and_go_escaped() -> None:
    data = simple_signing("r/x", DIGEST, {"b": "<&>", "a": "1"})
    assert data.endswith(b'"optional":{"a":"1","b":"\\u003c\\u0026\\u003e"}}')
    assert parse(data).optional == {"a": "1", "b": "<&>"}


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: {**d, "extra": 1},
        lambda d: {**d, "critical": {**d["critical"], "Type": d["critical"]["type"]}},
        lambda d: {**d, "critical": {**d["critical"], "type": "something else"}},
        lambda d: {**d, "critical": {**d["critical"], "image": {"Docker-manifest-digest": DIGEST}}},
        lambda d: {**d, "critical": {**d["critical"], "image": {"docker-manifest-digest": "sha256:12"}}},
    ],
)
def test_payload_parsing_is_strict(mutate: object) -> None:
    data = json.loads(simple_signing("r/x", DIGEST))
    with pytest.raises(VerificationError):
        parse(json.dumps(mutate(data)).encode())  # type: ignore[operator]


def test_private_key_round_trip_and_formats() -> None:
    key = keys.generate()
    pem = keys.encrypt_private(key, Secret(b"pw"))
    assert pem.startswith(b"-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\n")
    body = json.loads(base64.b64decode(b"".join(pem.splitlines()[1:-1])))
    assert body["kdf"]["params"] == {"N": 65536, "r": 8, "p": 1} and body["cipher"]["name"] == "nacl/secretbox"
    assert keys.load_private(pem, Secret(b"pw")).private_numbers() == key.private_numbers()
    legacy = keys.encrypt_private(key, Secret(b"pw"), kind=keys.COSIGN_PEM)
    assert b"ENCRYPTED COSIGN PRIVATE KEY" in legacy
    assert keys.load_private(legacy, Secret(b"pw")).private_numbers() == key.private_numbers()
    plain = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    assert keys.load_private(plain, Secret(b"")).private_numbers() == key.private_numbers()
    with pytest.raises(SigningError) as caught:
        keys.load_private(pem, Secret(b"wrong"))
    assert "COSIGN_PASSWORD" in caught.value.hint


def test_unsupported_keys_are_refused() -> None:
    with pytest.raises(SigningError, match="not a PEM"):
        keys.load_private(b"garbage", Secret(b""))
    with pytest.raises(SigningError, match="unsupported private key PEM type"):
        keys.load_private(b"-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n", Secret(b""))
    with pytest.raises(VerificationError):
        keys.load_public(b"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")


def test_secret_never_prints_itself() -> None:
    secret = Secret("hunter2")
    assert "hunter2" not in f"{secret} {secret!r} {[secret]}"
    assert secret.reveal() == "hunter2"
    with pytest.raises(TypeError):
        import pickle

        pickle.dumps(secret)


def test_signature_tag_and_config_layout() -> None:
    assert signature_tag(DIGEST) == DIGEST.replace("sha256:", "sha256-") + ".sig"
    config = _go_config([DIGEST])
    assert len(config) == 233  # the size cosign writes for one signature layer


def test_policy_files(tmp_path: Path) -> None:
    key = keys.generate()
    (tmp_path / "k.pub").write_bytes(keys.public_pem(key))
    (tmp_path / "p.json").write_text(json.dumps({"version": 1, "keys": [{"path": "k.pub"}]}))
    policy = load_policy(tmp_path / "p.json")
    assert policy.mode == "enforce" and policy.keys[0].key_id == keys.key_id(key.public_key())
    assert policy.fingerprint() == load_policy(tmp_path / "p.json").fingerprint()
    for bad, message in (
        ({"version": 1, "keyz": []}, "unknown key"),
        ({"version": 2}, "'version' must be 1"),
        ({"version": 1, "mode": "lenient"}, "mode must be"),
        ({"version": 1, "keys": [{"path": "missing.pub"}]}, "cannot read public key"),
        ({"version": 1, "identities": [{"identity": "x"}]}, "needs an identity and an issuer"),
    ):
        (tmp_path / "bad.json").write_text(json.dumps(bad))
        with pytest.raises(ConfigError, match=message):
            load_policy(tmp_path / "bad.json")


def test_registry_helpers(tmp_path: Path) -> None:
    assert is_loopback("127.0.0.1:5000") and is_loopback("localhost:5000") and is_loopback("[::1]:5000")
    assert not is_loopback("ghcr.io") and not is_loopback("10.0.0.1:5000")
    scheme, params = parse_challenge(
        'Bearer realm="https://auth.example/token",service="reg",scope="repository:a:pull"'
    )
    assert scheme == "bearer" and params == {
        "realm": "https://auth.example/token",
        "service": "reg",
        "scope": "repository:a:pull",
    }
    (tmp_path / "config.json").write_text(
        json.dumps({"auths": {"reg.example": {"auth": base64.b64encode(b"user:s3cret").decode()}}})
    )
    creds = docker_config_credentials("reg.example", {"DOCKER_CONFIG": str(tmp_path)})
    assert creds is not None and creds.username == "user" and creds.password.reveal() == "s3cret"
    assert "s3cret" not in repr(creds)
    assert docker_config_credentials("other.example", {"DOCKER_CONFIG": str(tmp_path)}) is None


def test_keyless_attest_without_an_ambient_identity_refuses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner
    from terminai_sandbox.cli import main

    for name in ("ACTIONS_ID_TOKEN_REQUEST_URL", "ACTIONS_ID_TOKEN_REQUEST_TOKEN", "SIGSTORE_ID_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "sbom.json").write_text("{}")
    result = CliRunner().invoke(
        main, ["attest", "r.example/a@" + DIGEST, "--predicate", str(tmp_path / "sbom.json"), "--keyless"]
    )
    assert result.exit_code == 10 and "no ambient OIDC identity" in result.output
    both = CliRunner().invoke(main, ["attest", "r.example/a@" + DIGEST, "--predicate", str(tmp_path / "sbom.json")])
    assert both.exit_code == 3 and "exactly one of --key or --keyless" in both.output
