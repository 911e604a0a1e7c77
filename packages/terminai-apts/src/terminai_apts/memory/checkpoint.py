"""Signed checkpoints: the operator's word for how long each chain of a journal was.

A whole-directory rollback (the journal, its ``.state.json`` and all, put back from a
backup) leaves a journal that is byte for byte an earlier state of itself: nothing inside
it can tell. A checkpoint is kept outside it: ``terminai-apts memory journal checkpoint
ROOT --key KEY --out FILE`` verifies the journal and writes, for every chain, how many
entries it held and the hash of the last, with ``mac`` = HMAC-SHA256 of the operator's key
over the rest. With ``TERMINAI_JOURNAL_CHECKPOINT=FILE`` set, ``verify`` and every reader
report a journal holding fewer entries than the checkpoint saw, or other ones; with
``TERMINAI_JOURNAL_CHECKPOINT_KEY`` also set, a checkpoint whose ``mac`` does not verify
is itself reported.

Why HMAC and not a signature: readers inside the image check the checkpoint on every
open, and the image's Python has only the standard library (OpenSSL's libssl serves
``hashlib``, which offers digests and HMAC, not Ed25519). An HMAC key can make a
checkpoint as well as check one, so the MAC is checked where the agent cannot read the
key (the operator's ``verify`` on the host); inside the sandbox the checkpoint is mounted
read-only and its counts are compared without the key.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from terminai_apts import durable, ledger
from terminai_apts.errors import UsageError
from terminai_apts.memory import keyed
from terminai_apts.memory.journal_files import now

CHECKPOINT_ENV = "TERMINAI_JOURNAL_CHECKPOINT"
KEY_ENV = "TERMINAI_JOURNAL_CHECKPOINT_KEY"
KIND = "journal-checkpoint"
_LIMIT = 1 << 20


def configured() -> Path | None:
    """The checkpoint readers and ``verify`` compare with (``TERMINAI_JOURNAL_CHECKPOINT``), or None."""
    name = os.environ.get(CHECKPOINT_ENV, "")
    if not name:
        return None
    path = Path(name)
    if not path.is_absolute():
        raise UsageError(
            f"{CHECKPOINT_ENV}={name!r} is not an absolute path",
            hint="name the file `terminai-apts memory journal checkpoint --out` wrote, or unset it",
        )
    return path


def configured_key() -> bytes | None:
    """The key checkpoints are checked with (``TERMINAI_JOURNAL_CHECKPOINT_KEY``), or None."""
    name = os.environ.get(KEY_ENV, "")
    return keyed.read_key(name, KEY_ENV) if name else None


def mac(secret: bytes, body: Mapping[str, object]) -> str:
    """The ``mac`` a checkpoint must carry under ``secret``."""
    data = ledger.canonical({k: v for k, v in body.items() if k != "mac"})
    return hmac.new(secret, data, hashlib.sha256).hexdigest()


def write(path: Path, chains: Mapping[str, list[Any]], secret: bytes) -> dict[str, Any]:
    """Write a checkpoint of ``chains`` (``{stem: [entries, last hash]}``) to ``path``, durably."""
    body: dict[str, Any] = {"kind": KIND, "version": 1, "iso": now(), "chains": dict(chains)}
    body["mac"] = mac(secret, body)
    if not path.parent.is_dir():
        raise UsageError(f"cannot write the checkpoint {path}: {path.parent} is not a directory")
    durable.write(path, ledger.encode(body), mode=0o644)
    return body


def read(path: Path, secret: bytes | None) -> tuple[dict[str, list[Any]], str | None]:
    """``(chains, None)`` from the checkpoint at ``path``, or ``({}, why it is refused)``.

    With ``secret``, a checkpoint whose ``mac`` does not verify is refused.
    """
    try:
        # Non-blocking and regular files only: a FIFO put in its place must not hang every reader.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        return {}, f"cannot read the checkpoint ({CHECKPOINT_ENV}): {exc.strerror or exc}"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return {}, f"not a journal checkpoint ({CHECKPOINT_ENV}): not a regular file"
        raw = os.read(fd, _LIMIT + 1)
    finally:
        os.close(fd)
    record = ledger.parse(raw.strip()) if len(raw) <= _LIMIT else None
    recorded = record.get("chains") if record is not None else None
    if record is None or record.get("kind") != KIND or not isinstance(recorded, dict):
        return {}, f"not a journal checkpoint ({CHECKPOINT_ENV})"
    if secret is not None and not hmac.compare_digest(str(record.get("mac", "")), mac(secret, record)):
        return {}, f"the checkpoint's mac does not verify with {KEY_ENV}: forged, or made with another key"
    chains: dict[str, list[Any]] = {}
    for stem, seen in recorded.items():
        ok = isinstance(seen, list) and len(seen) == 2 and type(seen[0]) is int and seen[0] >= 0
        if not ok or not (seen[1] is None or isinstance(seen[1], str)):
            return {}, f"the checkpoint's record of {stem!r} is not [entries, last hash]"
        chains[str(stem)] = seen
    return chains, None


def behind(hashes: list[str], seen: object) -> bool:
    """Whether a chain of ``hashes`` lacks what a record ``[entries, last hash]`` saw (or holds others)."""
    if not (isinstance(seen, list) and len(seen) == 2 and isinstance(seen[0], int)):
        return False  # nothing recorded: nothing to compare
    count, head = seen
    return bool(count) and (len(hashes) < count or hashes[count - 1] != head)
