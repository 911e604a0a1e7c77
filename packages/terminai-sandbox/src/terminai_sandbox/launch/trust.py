"""The verification policy as the user gave it, and the verification cache.

A :class:`TrustSource` is the policy before it is loaded. Loading imports cryptography
(~25 ms); a launch whose digest already verified under the same policy does not need it.
``source_key`` is a sha256 over the exact inputs (the key file's bytes, the keyless
identity, a policy file whose keys are all inline), or None when the inputs cannot be
hashed that simply (a policy file naming key files by path): then the policy always loads.
A file is read once: ``load`` parses the very bytes the key was made of. A file that
cannot be read at all is refused when its source is made, before preflight asks the
engine or a registry anything (parsing waits for step 3: it needs cryptography).

The cache is one JSON file in the launcher's state directory:

* ``"<digest>|<policy fingerprint>": true``: written only after signature verification
  passed for that digest under that policy; failures are never written;
* ``"source:<source_key>": "<policy fingerprint>"``: the fingerprint these exact inputs
  loaded as;
* ``"<index digest>|<policy fingerprint>|<os/arch>": "<manifest digest>"``: a multi-platform
  index passed under that policy, and so did the manifest it lists for that platform (the
  one to run). Written only after both passed, like the first kind.

A hit needs both. Identical inputs load as the identical policy, so the second entry can
only save the loading, never change what is trusted; inputs that changed, or a file that
is unreadable or corrupt, miss and take the full path.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable
from pathlib import Path

from terminai_apts.ledger import sha256  # the built-in SHA-256, without loading OpenSSL
from terminai_apts.records import frozen_record

from terminai_sandbox._version import __version__
from terminai_sandbox.common.trust_options import read_trust_file

TYPE_CHECKING = False  # not `from typing import ...`: a launch never imports typing (~3 ms)
if TYPE_CHECKING:
    from typing import Any

    from terminai_sandbox.signing.verify.trust import VerificationPolicy


@frozen_record
class TrustSource:
    """A policy as given: a description, the key of its exact inputs, and how to load it."""

    describe: str
    source_key: str | None
    load: Callable[[], VerificationPolicy]


def _key(kind: str, *parts: bytes) -> str:
    # The launcher's version is part of the key: a new release re-derives every fingerprint once.
    digest = sha256(f"{kind}\0{__version__}".encode())
    for part in parts:
        digest.update(b"\0" + sha256(part).digest())
    return "sha256:" + digest.hexdigest()


def _read(path: Path) -> bytes | None:
    try:
        return read_trust_file(path)
    except OSError:
        return None  # the loader reports it


def key_file(path: Path) -> TrustSource:
    data = _read(path)

    def load() -> VerificationPolicy:
        from terminai_sandbox.signing.verify import trust  # noqa: PLC0415  (imports cryptography)

        if data is None:  # unreadable: the full path reads it again and reports why
            return trust.VerificationPolicy.single_key(path)
        return trust.VerificationPolicy(keys=(trust.key_from_bytes(path, data),))

    if data is None:
        load()  # a configuration refusal, worded as loading words it: before any engine or registry request
    return TrustSource(describe=f"key {path}", source_key=None if data is None else _key("key", data), load=load)


def keyless_identity(identity: str, issuer: str) -> TrustSource:
    def load() -> VerificationPolicy:
        from terminai_sandbox.signing.verify.trust import VerificationPolicy  # noqa: PLC0415

        return VerificationPolicy.single_identity(identity, issuer)

    key = _key("identity", identity.encode(), issuer.encode())
    return TrustSource(describe=f"keyless {identity} from {issuer}", source_key=key, load=load)


def policy_file(path: Path) -> TrustSource:
    data = _read(path)

    def load() -> VerificationPolicy:
        from terminai_sandbox.signing.verify import trust  # noqa: PLC0415

        # The bytes the cache key was made of, not a second read: a file swapped in between
        # cannot be loaded under the first file's key.
        return trust.load_policy(path) if data is None else trust.parse_policy(path, data)

    if data is None:
        load()  # as for a key file: refused before preflight
    contained = data is not None and _self_contained(path, data)
    key = _key("policy", path.suffix.encode(), data) if data and contained else None
    return TrustSource(describe=f"policy {path}", source_key=key, load=load)


def _self_contained(path: Path, data: bytes) -> bool:
    """True when the policy file holds everything it trusts (no key files named by path)."""
    try:
        if path.suffix == ".toml":
            import tomllib  # noqa: PLC0415

            parsed: Any = tomllib.loads(data.decode())
        else:
            parsed = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return False
    keys = parsed.get("keys", []) if isinstance(parsed, dict) else None
    return isinstance(keys, list) and all(isinstance(k, dict) and set(k) == {"pem"} for k in keys)


def _entries(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        entries = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return entries if isinstance(entries, dict) else {}


def known_fingerprint(path: Path | None, source: TrustSource) -> str | None:
    """The fingerprint these exact inputs loaded as before, if the cache remembers it."""
    if source.source_key is None:
        return None
    value = _entries(path).get(f"source:{source.source_key}")
    return value if isinstance(value, str) else None


def cache_hit(path: Path | None, digest: str, fingerprint: str) -> bool:
    return _entries(path).get(f"{digest}|{fingerprint}") is True


def cached_platforms(path: Path | None, digest: str, fingerprint: str) -> dict[str, str]:
    """For an index that passed under this policy: platform -> the verified manifest listed for it."""
    prefix = f"{digest}|{fingerprint}|"
    return {
        key[len(prefix) :]: value
        for key, value in _entries(path).items()
        if key.startswith(prefix) and isinstance(value, str) and value.startswith("sha256:")
    }


def cache_store(
    path: Path | None,
    digest: str,
    fingerprint: str,
    source: TrustSource | None = None,
    *,
    platform: tuple[str, str] | None = None,
) -> None:
    """Record a pass (call only after verification succeeded); ``platform`` is (os/arch, manifest
    digest) when ``digest`` is an index and that platform's manifest passed too."""
    if path is None:
        return
    from terminai_apts import durable  # noqa: PLC0415  (a first verification only, not every start)

    path.parent.mkdir(parents=True, exist_ok=True)
    # Two first launches at once: the lock serialises read-modify-write so neither loses the
    # other's entry, and the durable writer's per-process temporary file means neither can
    # rename the other's half-written file into place.
    lock = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        entries = _entries(path)
        if platform is None:
            entries[f"{digest}|{fingerprint}"] = True
        else:
            entries[f"{digest}|{fingerprint}|{platform[0]}"] = platform[1]
        if source is not None and source.source_key is not None:
            entries[f"source:{source.source_key}"] = fingerprint
        durable.write(path, json.dumps(entries, sort_keys=True).encode(), mode=0o600)
    finally:
        os.close(lock)  # releases the lock
