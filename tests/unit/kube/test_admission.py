"""The admission policies trust exactly what ``verify`` trusts, and follow the trust policy when it changes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from terminai_sandbox.errors import ConfigError
from terminai_sandbox.signing.verify.trust import KeylessIdentity, VerificationPolicy, policy_from_options

from tests.unit.kube.support import IDENTITY, ISSUER, REFERENCE, by_kind, emitted, key_policy, keyless_policy


def _sigstore(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return list(by_kind(objects)["ClusterImagePolicy"]["spec"]["authorities"])


def _kyverno(objects: list[dict[str, Any]]) -> dict[str, Any]:
    return dict(by_kind(objects)["ClusterPolicy"]["spec"]["rules"][0]["verifyImages"][0])


def test_key_admission_trusts_the_key_verify_trusts(tmp_path: Path) -> None:
    key_policy(tmp_path)  # writes cosign.pub
    # The same constructor `verify --key` uses.
    policy = policy_from_options(key=tmp_path / "cosign.pub", identity=None, issuer=None, policy_file=None)
    pem = (tmp_path / "cosign.pub").read_text()
    objects = emitted(policy)
    assert [a["key"]["data"] for a in _sigstore(objects)] == [pem] == [k.pem.decode() for k in policy.keys]
    entries = _kyverno(objects)["attestors"][0]["entries"]
    assert [e["keys"]["publicKeys"] for e in entries] == [pem]
    assert (
        _kyverno(objects)["failureAction"] == "Enforce"
        and by_kind(objects)["ClusterImagePolicy"]["spec"]["mode"] == "enforce"
    )


def test_keyless_admission_trusts_the_identity_and_issuer_verify_trusts() -> None:
    policy = policy_from_options(key=None, identity=IDENTITY, issuer=ISSUER, policy_file=None)
    objects = emitted(policy)
    [authority] = _sigstore(objects)
    assert authority["keyless"]["identities"] == [{"issuer": ISSUER, "subject": IDENTITY}]
    assert "key" not in authority
    [entry] = _kyverno(objects)["attestors"][0]["entries"]
    assert (entry["keyless"]["subject"], entry["keyless"]["issuer"]) == (IDENTITY, ISSUER)


def test_a_policy_file_with_keys_and_regexp_identities_maps_one_for_one(tmp_path: Path) -> None:
    _, pem = key_policy(tmp_path, "first")
    _, other = key_policy(tmp_path, "second")
    policy_file = tmp_path / "policy.toml"
    policy_file.write_text(
        'version = 1\nmode = "warn"\n'
        'keys = [{path = "first.pub"}, {path = "second.pub"}]\n'
        'identities = [{identity_regexp = "^https://github.com/terminai/.*$", issuer = "' + ISSUER + '"}]\n'
    )
    policy = policy_from_options(key=None, identity=None, issuer=None, policy_file=policy_file)
    objects = emitted(policy)
    authorities = _sigstore(objects)
    assert [a["name"] for a in authorities] == ["key-0", "key-1", "keyless-0"]
    assert [a["key"]["data"].encode() for a in authorities[:2]] == [pem, other]
    assert authorities[2]["keyless"]["identities"] == [
        {"issuer": ISSUER, "subjectRegExp": "^(?:^https://github.com/terminai/.*$)$"}
    ]
    rule = _kyverno(objects)
    assert rule["attestors"][0]["count"] == 1  # any one trusted signer passes, as in verify
    assert rule["attestors"][0]["entries"][2]["keyless"]["subjectRegExp"] == "^(?:^https://github.com/terminai/.*$)$"
    # mode "warn" in the policy warns in the controllers too; it never silently enforces nothing.
    assert rule["failureAction"] == "Audit" and by_kind(objects)["ClusterImagePolicy"]["spec"]["mode"] == "warn"


def test_changing_the_trust_policy_changes_the_admission_policy(tmp_path: Path) -> None:
    first, _ = key_policy(tmp_path, "a")
    second, _ = key_policy(tmp_path, "b")
    outputs = [
        emitted(p)
        for p in (
            first,
            second,
            keyless_policy(),
            keyless_policy(identity=IDENTITY + "x"),
            keyless_policy(issuer=ISSUER + "x"),
        )
    ]
    for kind in ("ClusterImagePolicy", "ClusterPolicy"):
        specs = [by_kind(objects)[kind]["spec"] for objects in outputs]
        assert all(specs[i] != specs[j] for i in range(len(specs)) for j in range(i)), kind
    # The workloads do not depend on who signed: only the admission changes.
    assert by_kind(outputs[0])["Pod"] == by_kind(outputs[2])["Pod"]


def test_admission_covers_the_verified_repository_at_any_tag_or_digest(tmp_path: Path) -> None:
    objects = emitted(key_policy(tmp_path)[0])
    globs = [i["glob"] for i in by_kind(objects)["ClusterImagePolicy"]["spec"]["images"]]
    assert globs == [f"{REFERENCE}@*", f"{REFERENCE}:*"]
    rule = by_kind(objects)["ClusterPolicy"]["spec"]["rules"][0]
    assert rule["match"] == {"any": [{"resources": {"kinds": ["Pod"], "namespaces": ["sandboxes"]}}]}
    assert _kyverno(objects)["imageReferences"] == ["*"]  # every image in the sandbox namespace
    assert _kyverno(objects)["required"] is True and _kyverno(objects)["verifyDigest"] is True


def test_a_policy_that_trusts_nothing_emits_nothing() -> None:
    with pytest.raises(ValueError, match="trusts nothing"):
        emitted(VerificationPolicy())


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"key": None, "identity": None, "issuer": None, "policy_file": None}, "no verification policy"),
        ({"key": None, "identity": IDENTITY, "issuer": None, "policy_file": None}, "go together"),
    ],
)
def test_the_trust_options_are_verify_s(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        policy_from_options(**options)


def test_identities_keep_every_field_verify_matches() -> None:
    identity = KeylessIdentity(identity=IDENTITY, issuer_regexp="^https://token\\..*$")
    objects = emitted(VerificationPolicy(identities=(identity,)))
    [authority] = _sigstore(objects)
    assert authority["keyless"]["identities"] == [{"issuerRegExp": "^(?:^https://token\\..*$)$", "subject": IDENTITY}]
