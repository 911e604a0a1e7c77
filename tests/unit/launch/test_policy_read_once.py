"""A trust file is read once: the verify cache key and the loaded policy come from the same bytes.

The attack: a launch keys its cache by the bytes of the policy (or key) file, then loads the
policy. If it read the file a second time to load it, a file swapped in between would be
loaded, verified and remembered under the first file's key, and a later launch presenting
the first file would skip loading and trust what the second file trusted.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from terminai_sandbox.errors import ConfigError
from terminai_sandbox.launch import trust
from terminai_sandbox.signing.formats import keys
from terminai_sandbox.signing.verify.trust import VerificationPolicy, parse_policy


def _inline_policy(pem: bytes) -> bytes:
    return json.dumps({"version": 1, "keys": [{"pem": pem.decode()}]}).encode()


def _swap(path: Path, data: bytes) -> None:
    """Replace ``path`` by another file (a new inode), as an attacker with write access would."""
    other = path.with_name(path.name + ".swap")
    other.write_bytes(data)
    os.replace(other, path)


def test_policy_file_swapped_after_hashing_loads_the_hashed_bytes(tmp_path: Path) -> None:
    trusted, attacker = keys.public_pem(keys.generate()), keys.public_pem(keys.generate())
    path = tmp_path / "policy.json"
    path.write_bytes(_inline_policy(trusted))
    source = trust.policy_file(path)
    _swap(path, _inline_policy(attacker))

    loaded = source.load()

    expected = parse_policy(path, _inline_policy(trusted)).fingerprint()
    swapped = parse_policy(path, _inline_policy(attacker)).fingerprint()
    assert expected != swapped
    assert loaded.fingerprint() == expected
    assert [k.pem for k in loaded.keys] == [trusted]
    # The swapped file is what a fresh source reads, under its own key: never the first one's.
    assert trust.policy_file(path).source_key != source.source_key


def test_key_file_swapped_after_hashing_loads_the_hashed_key(tmp_path: Path) -> None:
    trusted, attacker = keys.public_pem(keys.generate()), keys.public_pem(keys.generate())
    path = tmp_path / "cosign.pub"
    path.write_bytes(trusted)
    source = trust.key_file(path)
    _swap(path, attacker)

    loaded = source.load()

    assert [k.pem for k in loaded.keys] == [trusted]
    assert loaded.fingerprint() != VerificationPolicy.single_key(path).fingerprint()


def test_an_unreadable_file_is_refused_when_its_source_is_made(tmp_path: Path) -> None:
    # No bytes to hash or parse: refused at once (before preflight), worded as loading words it.
    with pytest.raises(ConfigError, match=r"cannot read policy '.*missing\.json'"):
        trust.policy_file(tmp_path / "missing.json")
    with pytest.raises(ConfigError, match=r"cannot read public key '.*missing\.pub'"):
        trust.key_file(tmp_path / "missing.pub")
