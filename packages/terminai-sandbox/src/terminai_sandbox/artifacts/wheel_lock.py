"""A hash-pinned pip requirements lock (``images/sandbox/requirements.lock``).

Each requirement is ``name==version`` followed by one or more ``--hash=sha256:…``
(backslash continuations allowed); comments and blank lines are ignored. Anything else
(a range, a URL, a requirement without a hash, a pip option) is refused: the image
installs these wheels with ``--require-hashes``, and the SBOM and provenance record these
hashes, so the parser accepts only what that install would.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from terminai_sandbox.common.files import read_input
from terminai_sandbox.errors import LockError

_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[A-Za-z0-9._,-]+\])?==([A-Za-z0-9.!+_-]+)$")
_HASH = re.compile(r"^--hash=sha256:([0-9a-f]{64})$")
_HINT = "every line must be 'name==version --hash=sha256:HEX' (see images/sandbox/requirements.lock)"


def normalise_pypi(name: str) -> str:
    """PEP 503 name, as ``pkg:pypi`` purls use it."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True, slots=True, kw_only=True)
class WheelLock:
    """(normalised name, version) → the sha256 hex digests the lock allows."""

    pins: Mapping[tuple[str, str], tuple[str, ...]]

    @classmethod
    def load(cls, path: Path) -> WheelLock:
        text = read_input(path, what="the wheel lock", missing=LockError(f"no wheel lock at {path}", hint=_HINT))
        return cls.parse(text, where=str(path))

    @classmethod
    def parse(cls, text: str, *, where: str = "the wheel lock") -> WheelLock:
        pins: dict[tuple[str, str], tuple[str, ...]] = {}
        for number, raw in enumerate(text.replace("\\\n", " ").splitlines(), start=1):
            words = raw.split("#", 1)[0].split()
            if not words:
                continue
            match = _PIN.match(words[0])
            if match is None:
                raise LockError(f"{where}: line {number}: {words[0]!r} is not an exact 'name==version' pin", hint=_HINT)
            hashes = [_HASH.match(word) for word in words[1:]]
            if not hashes or None in hashes:
                raise LockError(f"{where}: line {number}: {words[0]} needs only --hash=sha256:HEX options", hint=_HINT)
            key = (normalise_pypi(match.group(1)), match.group(3))
            if key in pins:
                raise LockError(f"{where}: line {number}: {words[0]} is pinned twice", hint=_HINT)
            pins[key] = tuple(h.group(1) for h in hashes if h is not None)
        return cls(pins=pins)
