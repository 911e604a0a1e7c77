"""Keyed chains: with the operator's key, every entry also carries an HMAC no forger can make.

The hash chain alone catches edits, not forgery: whoever can write the journal can append
an entry with a correct hash. With ``TERMINAI_JOURNAL_KEY_FILE`` naming a key file (kept
where the agent cannot read it), every appended entry gets ``mac``:
HMAC-SHA256(key, canonical entry without ``hash`` and ``mac``), ``prev`` included, so it
binds the entry's place in the chain. ``verify`` with the key refuses every chained
entry without a valid ``mac``: keep a journal keyed from its first entry.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Mapping
from pathlib import Path

from terminai_apts import ledger
from terminai_apts.errors import UsageError

KEY_ENV = "TERMINAI_JOURNAL_KEY_FILE"
MIN_KEY = 16


def key() -> bytes | None:
    """The journal key (None when ``TERMINAI_JOURNAL_KEY_FILE`` is unset)."""
    name = os.environ.get(KEY_ENV, "")
    return read_key(name, KEY_ENV) if name else None


def read_key(name: str, setting: str) -> bytes:
    """The key in the file ``name`` (given by ``setting``): absolute, readable, at least 16 bytes."""
    path = Path(name)
    hint = f"point {setting} at a file of at least {MIN_KEY} random bytes (e.g. `head -c 32 /dev/urandom`), or unset it"
    if not path.is_absolute():
        raise UsageError(f"{setting}={name!r} is not an absolute path", hint=hint)
    try:
        data = path.read_bytes().strip()
    except OSError as exc:
        raise UsageError(f"cannot read the key {path} ({setting}): {exc.strerror or exc}", hint=hint) from None
    if len(data) < MIN_KEY:
        raise UsageError(
            f"the key {path} ({setting}) holds {len(data)} bytes; at least {MIN_KEY} are needed", hint=hint
        )
    return data


def mac(secret: bytes, record: Mapping[str, object]) -> str:
    """The ``mac`` an entry must carry under ``secret``."""
    body = ledger.canonical({k: v for k, v in record.items() if k not in ("hash", "mac")})
    return hmac.new(secret, body, hashlib.sha256).hexdigest()


def signed(secret: bytes, record: Mapping[str, object]) -> bool:
    return hmac.compare_digest(str(record.get("mac", "")), mac(secret, record))
