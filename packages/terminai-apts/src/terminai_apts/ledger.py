"""The one hash-chain implementation behind every append-only ledger in the project.

Three ledgers use it: the launcher's audit ledger (host), the executor's audit log and the
memory journal's decision and posture chains (image). Each record is one JSON object per
line, written with ``json.dumps(record, sort_keys=True)``; it carries ``prev`` (the
previous record's ``hash``, :data:`GENESIS` for the first) and ``hash``. A :class:`Chain`
says how ``hash`` is computed, and that is the only difference between the ledgers:

* ``Chain(prev_prefix=False)`` (launcher audit, memory journal):
  ``sha256(canonical(record without "hash"))``;
* ``Chain(prev_prefix=True)`` (executor audit):
  ``sha256(record["prev"] + canonical(record without "hash"))``.

``canonical`` is ``json.dumps(..., sort_keys=True, separators=(",", ":"))`` (ASCII-escaped).
Both schemes are kept so that every ledger written so far still verifies.

A line must also be the one spelling of its record that :func:`encode` writes. The hash
covers the parsed value, and parsers disagree about what a line means when it repeats a
key (Python keeps the last value, a person or ``grep`` reads the first): a line with a
duplicate key, reordered keys, other spacing or another escape of the same text would
verify by hash alone while showing readers something else. :meth:`Chain.walk` reports
such a line as not intact, and :attr:`Link.spelling` says why.

No line stops a reader: :func:`read` refuses (with a reason) a line longer than
:data:`MAX_LINE` bytes, nested deeper than :data:`MAX_DEPTH` or not a JSON object, before
anything recurses into it.

A lone surrogate (non-UTF-8 bytes that reached a string through ``os.fsdecode``, an
argument or a JSON ``\\udcff`` escape) is never sealed as such: :meth:`Chain.seal` writes it
as the six characters of its escape (``\\udcff``), so every line decodes as strict UTF-8
and parses, without surprises, in readers that refuse unpaired surrogates.

:func:`walk` checks a sequence of lines and reports, per line, whether it parsed, whether
it links to its predecessor and whether its hash matches its content; each ledger turns
the first failure into its own error (message, hint and exit code are part of its
interface). Locking, rotation and anchors stay with the ledgers, which differ there.

The launch kernel (``terminai_sandbox.launch``) imports this module on every session start,
so it uses only cheap standard-library modules (no ``typing``, no ``dataclasses``; records
are ``dict[str, object]``, which callers narrow): keep it that way.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Iterator, Mapping

# CPython's own SHA-256: ``hashlib`` would load OpenSSL's libcrypto first (~3 ms of every
# session start). The digest is the same; a build without the built-in hashes uses hashlib's.
TYPE_CHECKING = False  # not `from typing import ...`: a launch never imports typing
if TYPE_CHECKING:
    from hashlib import sha256 as sha256  # noqa: PLC0414  (re-exported: the launch kernel hashes with it too)
elif sys.version_info >= (3, 12):
    try:
        from _sha2 import sha256
    except ImportError:  # pragma: no cover - built without the built-in hashes
        from hashlib import sha256
else:
    try:
        from _sha256 import sha256
    except ImportError:  # pragma: no cover - built without the built-in hashes
        from hashlib import sha256

GENESIS = "0" * 64
MAX_LINE = 1 << 22  # 4 MiB: far above any entry the ledgers write, far below what hurts a reader
MAX_DEPTH = 32  # entries are flat; a nested value a few levels deep at most


def canonical(body: Mapping[str, object]) -> bytes:
    """The bytes a record's hash covers: sorted keys, no spaces, ASCII-escaped."""
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def encode(record: Mapping[str, object]) -> bytes:
    """One ledger line as every ledger writes it (sorted keys, default separators, newline)."""
    return (json.dumps(record, sort_keys=True) + "\n").encode()


def text_safe(value: object) -> object:
    """``value`` with every lone surrogate in its strings (keys too) replaced by its escape."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
        return value
    if isinstance(value, Mapping):
        return {text_safe(k): text_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [text_safe(v) for v in value]
    return value


class Chain:
    """A hash scheme: whether the previous hash is prefixed to the canonical body."""

    __slots__ = ("prev_prefix",)

    def __init__(self, *, prev_prefix: bool) -> None:
        self.prev_prefix = prev_prefix

    def digest(self, record: Mapping[str, object]) -> str:
        """The hash ``record`` must carry (its own ``hash`` field is ignored)."""
        body = canonical({k: v for k, v in record.items() if k != "hash"})
        if self.prev_prefix:
            body = str(record.get("prev")).encode() + body
        return sha256(body).hexdigest()

    def seal(self, body: Mapping[str, object], prev: str) -> dict[str, object]:
        """``body`` linked to ``prev`` and hashed: the record to append."""
        record = {str(text_safe(k)): text_safe(v) for k, v in body.items()}
        record["prev"] = prev
        record["hash"] = self.digest(record)
        return record

    def seal_line(self, body: Mapping[str, object], prev: str) -> tuple[dict[str, object], bytes]:
        """:meth:`seal`, and the line to append; a line :func:`read` would refuse is a ValueError."""
        record = self.seal(body, prev)
        line = encode(record)
        if len(line) > MAX_LINE:
            raise ValueError(f"the entry is {len(line)} bytes as a line; the limit is {MAX_LINE}")
        return record, line

    def walk(self, lines: Iterable[tuple[int, bytes]], prev: str | None = GENESIS) -> Iterator[Link]:
        """One :class:`Link` per ``(line number, line)``, in order.

        ``prev`` is the hash the first record must link to; ``None`` accepts any (the
        first line of a rotated file). After a record that did not link or was edited the
        walk goes on linking to that record's claimed hash, so callers stop at the first
        failure they care about.
        """
        for number, line in lines:
            record, why = read(line)
            if record is None:
                yield Link(number, None, follows=False, intact=False, spelling=why)
                continue
            follows = prev is None or record.get("prev") == prev
            how = spelling(line, record)
            intact = not how and record.get("hash") == self.digest(record)
            yield Link(number, record, follows=follows, intact=intact, spelling=how)
            prev = str(record.get("hash"))


class Link:
    """What :meth:`Chain.walk` found at one line: the record (None if unparsable) and two checks."""

    __slots__ = ("follows", "intact", "number", "record", "spelling")

    def __init__(
        self, number: int, record: dict[str, object] | None, *, follows: bool, intact: bool, spelling: str = ""
    ) -> None:
        self.number = number
        self.record = record
        self.follows = follows  # its ``prev`` is the previous record's ``hash``
        self.intact = intact  # its ``hash`` matches its content, and the line is its one spelling
        self.spelling = spelling  # why the line is refused or not its record's spelling ("" when it is)

    @property
    def problem(self) -> str:
        """What is wrong with the line itself (its hash, its spelling), as a reader should be told."""
        if self.record is None:
            return f"not a ledger entry ({self.spelling})"
        if self.spelling:
            return f"edited: {self.spelling}"
        return "" if self.intact else "edited (its hash does not match its content)"

    @property
    def ok(self) -> bool:
        return self.record is not None and self.follows and self.intact


def parse(line: bytes | str) -> dict[str, object] | None:
    """The JSON object on ``line``, or None when the line is not one (edited, truncated, hostile)."""
    return read(line)[0]


def read(line: bytes | str) -> tuple[dict[str, object] | None, str]:
    """The JSON object on ``line`` and ``""``, or None and why the line is refused."""
    if len(line) > MAX_LINE:
        return None, f"longer than {MAX_LINE} bytes"
    try:
        data = json.loads(line)
    except RecursionError:
        return None, f"nested deeper than {MAX_DEPTH} levels"
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    except json.JSONDecodeError as exc:
        return None, f"not JSON: {exc.msg.lower()} at column {exc.colno}"
    except ValueError as exc:  # pragma: no cover - json raises the two above
        return None, f"not JSON: {exc}"
    if not isinstance(data, dict):
        return None, "not a JSON object"
    if _depth(data) > MAX_DEPTH:
        return None, f"nested deeper than {MAX_DEPTH} levels"
    return data, ""


def _depth(value: object) -> int:
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if level > MAX_DEPTH:
            break
        if isinstance(item, dict):
            stack.extend((v, level + 1) for v in item.values() if isinstance(v, (dict, list)))
        elif isinstance(item, list):
            stack.extend((v, level + 1) for v in item if isinstance(v, (dict, list)))
    return deepest


def spelling(line: bytes | str, record: dict[str, object]) -> str:
    """``""`` when ``line`` is exactly how :func:`encode` writes ``record``; otherwise why not."""
    raw = line.encode() if isinstance(line, str) else line
    if encode(record)[:-1] == raw:
        return ""
    duplicates: list[str] = []

    def pairs(items: list[tuple[str, object]]) -> dict[str, object]:
        seen: set[str] = set()
        for key, _value in items:
            if key in seen:
                duplicates.append(key)
            seen.add(key)
        return dict(items)

    json.loads(raw, object_pairs_hook=pairs)  # parsed once already: cannot fail
    if duplicates:
        return f"the key {duplicates[0]!r} appears twice (readers disagree on which value counts)"
    return "not the canonical spelling of its entry (sorted keys, one space after ':' and ',', ASCII escapes)"


def last_line(fd: int, window: int = 65536) -> bytes | None:
    """The last non-empty line of the open file ``fd``, reading only its tail (ledgers only grow)."""
    size = os.fstat(fd).st_size
    start = size
    while start > 0:
        start = max(0, start - window)
        tail = os.pread(fd, size - start, start)
        lines = tail.rstrip(b"\n").split(b"\n")
        # The first piece may be a partial line unless the read reached the file's start.
        if len(lines) > 1 or start == 0:
            return lines[-1] if lines[-1] else None
        window *= 2
    return None


def append(fd: int, records: Iterable[Mapping[str, object]], *, durable: bool = True) -> None:
    """Write ``records`` to ``fd`` (opened ``O_APPEND``) in one write; fsync when ``durable``."""
    os.write(fd, b"".join(encode(r) for r in records))
    if durable:
        os.fsync(fd)
