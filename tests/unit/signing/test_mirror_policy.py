"""The policy's ``mirrors``: parsing, what a pattern matches, and the fingerprint."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from terminai_sandbox.errors import ConfigError
from terminai_sandbox.signing.formats import keys
from terminai_sandbox.signing.verify.trust import Mirror, VerificationPolicy, load_policy

UPSTREAM = "ghcr.io/org/sandbox"


def _write(tmp_path: Path, mirrors: object, name: str = "policy.json") -> Path:
    (tmp_path / "cosign.pub").write_bytes(keys.public_pem(keys.generate()))
    path = tmp_path / name
    path.write_text(json.dumps({"version": 1, "keys": [{"path": "cosign.pub"}], "mirrors": mirrors}))
    return path


def test_a_mirror_entry_is_read_from_json_and_toml(tmp_path: Path) -> None:
    policy = load_policy(_write(tmp_path, [{"identity": UPSTREAM, "repositories": ["reg.corp.example/m/sandbox"]}]))
    assert policy.mirrors == (Mirror(identity=UPSTREAM, repositories=("reg.corp.example/m/sandbox",)),)
    toml = tmp_path / "policy.toml"
    toml.write_text(
        'version = 1\nkeys = [{path = "cosign.pub"}]\n'
        f'[[mirrors]]\nidentity = "{UPSTREAM}"\nrepositories = ["reg.corp.example:5000/**/sandbox"]\n'
    )
    assert load_policy(toml).mirrors[0].repositories == ("reg.corp.example:5000/**/sandbox",)


@pytest.mark.parametrize(
    ("repository", "accepted"),
    [
        (UPSTREAM, True),  # the signed repository itself, mirrors or not
        ("reg.corp.example/m/sandbox", True),
        ("reg.corp.example/a/sandbox", True),  # '*' within one segment
        ("reg.corp.example/a/b/sandbox", False),  # ... not across segments
        ("reg.corp.example/m/sandbox-evil", False),  # patterns match whole names
        ("reg.corp.example.evil/m/sandbox", False),
        ("other.example/m/sandbox", False),
        ("reg.corp.example:5000/x/y/sandbox", True),  # '**' across segments
    ],
)
def test_what_a_mirror_pattern_matches(repository: str, accepted: bool) -> None:
    policy = VerificationPolicy(
        mirrors=(Mirror(identity=UPSTREAM, repositories=("reg.corp.example/*/sandbox", "reg.corp.example:5000/**")),)
    )
    assert policy.accepts_identity(UPSTREAM, repository) is accepted


def test_a_mirror_is_for_one_signed_repository_only() -> None:
    policy = VerificationPolicy(mirrors=(Mirror(identity=UPSTREAM, repositories=("reg.corp.example/m/sandbox",)),))
    assert not policy.accepts_identity("ghcr.io/org/other", "reg.corp.example/m/sandbox")
    assert not VerificationPolicy().accepts_identity(UPSTREAM, "reg.corp.example/m/sandbox")


@pytest.mark.parametrize(
    ("mirrors", "message"),
    [
        ({"identity": UPSTREAM}, "must be a list"),
        ([{"identity": UPSTREAM}], "must be {'identity'"),
        ([{"identity": UPSTREAM, "repositories": [], "x": 1}], "must be {'identity'"),
        ([{"identity": UPSTREAM, "repositories": []}], "non-empty list"),
        ([{"identity": f"{UPSTREAM}:v1", "repositories": ["r.example/a"]}], "no tag or digest"),
        ([{"identity": "sandbox", "repositories": ["r.example/a"]}], "must be a repository"),
        ([{"identity": UPSTREAM, "repositories": ["**"]}], "is not a repository pattern"),
        ([{"identity": UPSTREAM, "repositories": ["*.example/sandbox"]}], "is not a repository pattern"),
        ([{"identity": UPSTREAM, "repositories": ["*/sandbox"]}], "is not a repository pattern"),
        ([{"identity": UPSTREAM, "repositories": ["reg.example"]}], "is not a repository pattern"),
        ([{"identity": UPSTREAM, "repositories": ["reg.example/a?b"]}], "is not a repository pattern"),
    ],
)
def test_malformed_mirror_entries_are_refused(tmp_path: Path, mirrors: object, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_policy(_write(tmp_path, mirrors))
    assert message in caught.value.message


def test_mirrors_change_the_fingerprint_and_their_absence_does_not() -> None:
    plain = VerificationPolicy()
    mirrored = VerificationPolicy(mirrors=(Mirror(identity=UPSTREAM, repositories=("r.example/a",)),))
    assert plain.fingerprint() != mirrored.fingerprint()
    # A policy without mirrors keeps the fingerprint it had before mirrors existed (cached passes stay valid).
    before = json.dumps({"keys": [], "identities": [], "mode": "enforce"}, sort_keys=True).encode()
    assert plain.fingerprint() == "sha256:" + hashlib.sha256(before).hexdigest()
    assert plain.compose(mirrored).mirrors == mirrored.mirrors
