"""What the last writer left: the journal's state record, checked by every reader and by ``verify``.

``ROOT/.state.json`` holds, for every file a query or ``verify`` depends on, the
:func:`~terminai_apts.memory.journal_files.fingerprint` the journal's own writers left it with,
and for every chain how many entries it held and the hash of its last one. Writers
update it when they release the journal's lock, refreshing only the files they changed
themselves: a file changed by anyone else keeps its old fingerprint, so a later write
never blesses it.

Readers open a journal cheaply when every fingerprint matches (a ``stat`` per file), and
run the whole of ``verify`` when one does not: a query never serves a journal ``verify``
refuses. ``verify`` compares every chain with the counts and heads recorded here, so a
chain put back to an earlier copy (a rollback of any subset of files that leaves this
record) is reported. A rollback that restores this record too is caught only by a
witness kept outside the journal (``TERMINAI_JOURNAL_WITNESS``, a directory the agent
cannot write): writers copy the chain counts there, and ``verify`` and readers compare;
or by the operator's signed checkpoint (:mod:`~terminai_apts.memory.checkpoint`).

The record is bookkeeping, not evidence of integrity: removing or editing it costs
readers a full ``verify``, never a wrong answer. Rewriting it to match an edited file is
another matter: whoever can write the journal can compute every fingerprint, so a reader
holding no key cannot tell that record from one a writer left, and skips the full check
(its cheap checks still compare the hot buffers with their chains' tails, see
:func:`~terminai_apts.memory.checks.refuse_changed`). With a key configured
(``TERMINAI_JOURNAL_CHECKPOINT_KEY``, ``TERMINAI_JOURNAL_KEY_FILE``) writers add
``macs``, HMAC-SHA256 of each key over the rest of the record, and a reader holding a key
trusts only a record whose MAC under it verifies (:func:`trusted`); a writer holding the
key also starts from an empty record when the one it finds does not verify, so it never
re-signs what someone else wrote. It is written without fsync (after a
crash it may be older than the files, which only costs the same full check) and never
renamed over its predecessor (see :func:`_swap_in`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from terminai_apts import durable, ledger
from terminai_apts.errors import UsageError
from terminai_apts.memory import chainfile, checkpoint, keyed
from terminai_apts.memory.journal_files import fingerprint

STATE = ".state.json"
# The record before the newest, present only while a writer swaps the two (or after it
# was killed doing so): readers fall back on it, a true lower bound of every chain.
PREVIOUS = ".state.prev.json"
WITNESS_ENV = "TERMINAI_JOURNAL_WITNESS"
# The chains by their warm or single file; a chain's cold archives are cold/*/<stem>.jsonl.
CHAINS = {
    "decisions": Path("warm/decisions/decisions.jsonl"),
    "posture_history": Path("warm/posture_history.jsonl"),
    "seals": Path("warm/seals.jsonl"),
    "quarantine": Path("quarantine.jsonl"),
}
_COLD = {"decisions", "posture_history"}
# Not bound to the chains: human-editable, the lock, this record, and writers' temporary files.
# The compaction plan exists only while a compaction runs (verify reports it as pending).
UNWATCHED = {".lock", STATE, PREVIOUS, "hot/session_context.md", "hot/active_goals.json", "compaction.wal"}


def load(root: Path) -> dict[str, Any] | None:
    """The state record, or None when there is none (or it is not one: anything malformed is dropped)."""
    found = _load(root)
    return None if found is None else found[0]


def trusted(root: Path) -> dict[str, Any] | None:
    """The state record when every configured key's MAC over it verifies (no key: any record), else None."""
    found = _load(root)
    if found is None:
        return None
    record, macs = found
    for name, secret in keys().items():
        if not hmac.compare_digest(str(macs.get(name, "")), _mac(secret, record)):
            return None  # written by someone without the key, or edited since: nothing here is relied on
    return record


def keys() -> dict[str, bytes]:
    """The keys state records are signed with: the checkpoint key and the journal key, those configured."""
    out = {}
    checkpoint_key = checkpoint.configured_key()
    if checkpoint_key is not None:
        out["checkpoint"] = checkpoint_key
    journal_key = keyed.key()
    if journal_key is not None:
        out["journal"] = journal_key
    return out


def _mac(secret: bytes, record: Mapping[str, Any]) -> str:
    body = ledger.canonical({"files": record["files"], "chains": record["chains"]})
    return hmac.new(secret, body, hashlib.sha256).hexdigest()


def _load(root: Path) -> tuple[dict[str, Any], dict[str, Any]] | None:
    data = _read_json(root / STATE)
    if data is None:
        data = _read_json(root / PREVIOUS)
    if not (isinstance(data, dict) and isinstance(data.get("files"), dict) and isinstance(data.get("chains"), dict)):
        return None
    files = {
        rel: value
        for rel, value in data["files"].items()
        if isinstance(value, list) and len(value) == 5 and all(type(v) is int for v in value)
    }
    macs = data.get("macs")
    return {"files": files, "chains": _chains(data["chains"])}, macs if isinstance(macs, dict) else {}


def _chains(value: object) -> dict[str, list[Any]]:
    """Chain records ``[count >= 0, head]``; others are left out (nothing known of that chain)."""
    if not isinstance(value, dict):
        return {}
    return {
        stem: seen
        for stem, seen in value.items()
        if stem in CHAINS
        and isinstance(seen, list)
        and len(seen) == 2
        and type(seen[0]) is int
        and seen[0] >= 0
        and (seen[1] is None or isinstance(seen[1], str))
    }


def _read_json(path: Path, limit: int = 1 << 24) -> object:
    """The JSON in a regular file of at most ``limit`` bytes, else None (never blocks on a FIFO)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        return json.loads(os.read(fd, info.st_size + 1))
    except (OSError, ValueError, RecursionError):
        return None
    finally:
        os.close(fd)


def snapshot(root: Path) -> dict[str, list[int]]:
    """The fingerprint of every watched file under ``root`` now."""
    out: dict[str, list[int]] = {}
    for folder, dirs, names in os.walk(root):
        for name in [*dirs, *names]:
            path = Path(folder) / name
            if path.is_symlink():  # never as a writer left it: verify reports it
                out[path.relative_to(root).as_posix()] = [-1]
                continue
            if name in dirs:
                continue
            rel = path.relative_to(root).as_posix()
            if rel in UNWATCHED or (name.startswith(".") and ".tmp" in name):
                continue
            found = fingerprint(path)
            if found is not None:
                out[rel] = found
    return out


def snapshot_of(root: Path, rel: str) -> list[int] | None:
    """One file's fingerprint (None: absent)."""
    return fingerprint(root / rel)


def record(
    root: Path,
    changed: Mapping[Path, durable.Change],
    *,
    verified: dict[str, list[int]] | None = None,
    chains: Mapping[str, list[object]] | None = None,
) -> None:
    """Update the state after a writer's work (the caller still holds the lock).

    ``changed``: the files this writer changed (see :func:`durable.changing`). A file's new
    fingerprint is recorded only when it was as recorded before this writer changed it:
    a file someone else had changed stays unmatched, whatever this writer did to it.
    ``verified``: a snapshot taken before a ``verify`` that found nothing wrong; its
    fingerprints replace the recorded ones. ``chains``: the lengths and heads that verify
    counted, which replace the recorded ones (entries added outside the writers, in a
    journal that verifies, are then counted too).
    """
    secrets = keys()
    # With a key, only a record it signed is built on: an unsigned one may bless someone's edit.
    old = (trusted(root) if secrets else load(root)) or {"files": {}, "chains": {}}
    if chains is not None:
        old["chains"] = {**old["chains"], **_chains(dict(chains))}
    files: dict[str, list[int]] = dict(verified if verified is not None else old["files"])
    for path, change in changed.items():
        try:
            rel = path.relative_to(root).as_posix()
        except ValueError:
            continue
        if rel in UNWATCHED or _stat_list(change.before) != files.get(rel):
            continue
        found = fingerprint(path)
        if found is None:
            files.pop(rel, None)
        else:
            files[rel] = found
    moved = {path.name for path in changed}
    counts = {
        # A chain none of whose files this writer changed is as recorded (kept: evidence if not).
        stem: _count(root, stem, old["chains"].get(stem), _times(changed, root / CHAINS[stem]))
        if f"{stem}.jsonl" in moved or stem not in old["chains"]
        else old["chains"][stem]
        for stem in CHAINS
    }
    data: dict[str, Any] = {"files": files, "chains": counts}
    if secrets:
        data["macs"] = {name: _mac(secret, data) for name, secret in secrets.items()}
    _swap_in(root, data)
    witness = witness_path(root)
    if witness is not None:
        # Only forward: a state record edited to fewer entries never drags the witness back.
        seen = witnessed(root)
        ahead = {stem: max(value, seen.get(stem, value), key=lambda v: v[0]) for stem, value in counts.items()}
        _write(witness, {"journal": str(root.resolve()), "chains": ahead})


def _stat_list(info: os.stat_result | None) -> list[int] | None:
    return None if info is None else [info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns]


def _times(changed: Mapping[Path, durable.Change], path: Path) -> int:
    change = changed.get(path)
    return change.times if change is not None else 0


def _write(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, sort_keys=True))
    os.replace(tmp, path)


def _swap_in(root: Path, data: dict[str, Any]) -> None:
    """Write the state record without renaming over the old one.

    ext4 (``auto_da_alloc``) flushes a file renamed over an existing one before the
    rename returns, which cost an append more than its own fsync; renaming onto a free
    name does not. The old record is moved aside first, so a reader (or a writer killed
    in between) always finds one: the newest, or the one before it.
    """
    tmp = root / f".{STATE}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(data, sort_keys=True))
    if (root / STATE).exists():
        (root / PREVIOUS).unlink(missing_ok=True)  # one left by a writer killed mid-swap
        os.rename(root / STATE, root / PREVIOUS)
    os.rename(tmp, root / STATE)
    (root / PREVIOUS).unlink(missing_ok=True)


def _files(root: Path, stem: str) -> list[Path]:
    cold = sorted((root / "cold").glob(f"*-Q*/{stem}.jsonl")) if stem in _COLD else []
    return [*cold, root / CHAINS[stem]]


def _head(root: Path, stem: str) -> str | None:
    """The hash of a chain's last entry (its warm file's, else its newest archive's)."""
    for path in reversed(_files(root, stem)):
        last = chainfile.tail_records(path, 1)
        if last:
            return str(last[0].get("hash"))
    return None


def _count(root: Path, stem: str, before: object, appended: int) -> list[object]:
    """``[entries, head]``: the chain holds at least ``entries``, the last of them hashed ``head``.

    From the previous record plus what follows its head in the chain's tail (an append).
    When that head is not in the tail (entries added outside the journal's API, or the
    chain cut, emptied or replaced) the previous record stays: still true of an intact
    chain, and evidence against any other. Counted in full only the first time.
    ``appended``: how many entries this writer appended to it (how far back to look).
    """
    path = root / CHAINS[stem]
    tail = chainfile.tail_records(path, 4)
    head = str(tail[-1].get("hash")) if tail else _head(root, stem)
    if isinstance(before, list) and len(before) == 2 and isinstance(before[0], int) and before[0]:
        if head == before[1]:
            return before
        newer = _after(tail, str(before[1]))
        if newer is None and appended > 3:  # many appends under one lock (compaction's seals)
            newer = _after(chainfile.tail_records(path, appended + 1), str(before[1]))
        return [before[0] + newer, head] if newer is not None else before
    if head is None:
        return [0, None]  # empty, or its last line is not an entry (verify's business): nothing to rely on
    return [sum(_entries(path) for path in _files(root, stem)), head]


def _after(tail: list[dict[str, object]], head: str) -> int | None:
    """How many entries of ``tail`` follow the one hashed ``head`` (None: not there, or not linked)."""
    hashes = [str(r.get("hash")) for r in tail]
    if head not in hashes:
        return None
    at = hashes.index(head)
    # Entries appended since link one to the next; anything else (a duplicated line) counts nothing.
    if any(str(tail[i].get("prev")) != hashes[i - 1] for i in range(at + 1, len(tail))):
        return None
    return len(hashes) - 1 - at


def _entries(path: Path) -> int:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return 0
    return sum(1 for line in raw.splitlines() if line.strip() and ledger.parse(line) is not None)


def witness_path(root: Path) -> Path | None:
    """Where this journal's outside witness lives (``TERMINAI_JOURNAL_WITNESS``), or None."""
    folder = os.environ.get(WITNESS_ENV, "")
    if not folder:
        return None
    base = Path(folder)
    if not base.is_absolute() or not base.is_dir():
        raise UsageError(
            f"{WITNESS_ENV}={folder!r} is not an existing absolute directory",
            hint="name a directory outside the journal that agents cannot write, or unset it",
        )
    name = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:32]
    return base / f"{name}.json"


def witnessed(root: Path) -> dict[str, Any]:
    """The chain counts of the outside witness (empty without one)."""
    path = witness_path(root)
    data = _read_json(path) if path is not None else None
    return _chains(data.get("chains")) if isinstance(data, dict) else {}
