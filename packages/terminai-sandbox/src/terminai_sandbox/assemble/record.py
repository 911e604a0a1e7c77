"""Recorded digests of the layers that depend only on the locks (``layers.lock``).

The Debian base depends only on ``debian.lock`` and ``image.toml``; the wheels layer only
on ``requirements.lock`` (and the base's interpreter, which byte-compiles it). For each,
``images/sandbox/layers.lock`` records the hash of those inputs, the expected diff_id and
one line per tar entry (name, type, mode, owner, mtime, size, link target, a digest of
its content and of its extended attributes). Every build checks its layers against the
record, so a clean CI machine and every developer machine prove the same bytes. On a
mismatch the listing names the first differing entry and field without needing the
other build's bytes. ``terminai-sandbox build --record-layers`` rewrites the record when
the locks change on purpose.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tarfile
from dataclasses import dataclass
from pathlib import Path

from terminai_sandbox.common.files import kind_of, read_input
from terminai_sandbox.errors import ConfigError, PathError, ReproducibilityError

RECORD_FORMAT = 1
RECORD_NAME = "layers.lock"
_DIFF_ID = re.compile(r"^sha256:[0-9a-f]{64}$")
_FIELDS = ("type", "mode", "uid", "gid", "mtime", "size", "link", "content", "xattrs")
_RECORD_HINT = (
    "if the locks changed on purpose, record the new digests with "
    "'terminai-sandbox build --record-layers' and commit images/sandbox/layers.lock"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Expected:
    """The record of one layer: the inputs it was built from, its diff_id, its entries."""

    inputs: str
    diff_id: str
    entries: tuple[tuple[str, ...], ...]


def _short(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:20]


def listing(tar_path: Path) -> tuple[tuple[str, ...], ...]:
    """One row per entry, in tar order: name then the fields of ``_FIELDS``."""
    rows = []
    with tarfile.open(tar_path, "r:") as tar:
        for member in tar:
            content = ""
            if member.isreg():
                handle = tar.extractfile(member)
                digest = hashlib.sha256()
                if handle is not None:
                    while chunk := handle.read(1 << 20):
                        digest.update(chunk)
                content = digest.hexdigest()[:20]
            xattrs = {k: v for k, v in sorted(member.pax_headers.items()) if k.startswith("SCHILY.xattr.")}
            rows.append(
                (
                    member.name,
                    member.type.decode("ascii", "replace"),
                    f"{member.mode:o}",
                    str(member.uid),
                    str(member.gid),
                    str(int(member.mtime)),
                    str(member.size),
                    member.linkname,
                    content,
                    _short(json.dumps(xattrs, sort_keys=True).encode()) if xattrs else "",
                )
            )
    return tuple(rows)


def first_difference(expected: tuple[tuple[str, ...], ...], actual: tuple[tuple[str, ...], ...]) -> str:
    """Name the first entry (and field) where ``actual`` departs from ``expected``."""
    for want, got in zip(expected, actual, strict=False):
        if want[0] != got[0]:
            return f"entry {got[0]!r} where the record has {want[0]!r}"
        for field, w, g in zip(_FIELDS, want[1:], got[1:], strict=True):
            if w != g:
                return f"{got[0]}: {field} {g!r}, recorded {w!r}"
    if len(expected) != len(actual):
        longer = actual if len(actual) > len(expected) else expected
        which = "extra entry" if longer is actual else "missing entry"
        return (
            f"{which} {longer[min(len(expected), len(actual))][0]!r} ({len(actual)} entries, recorded {len(expected)})"
        )
    return "every entry matches the record, but the tar encoding differs (headers or padding)"


def read(path: Path) -> dict[str, Expected]:
    """The recorded layers in ``path`` (an empty mapping when the file does not exist)."""
    if not os.path.lexists(path):  # a dangling link is not "no record": read_input refuses it
        return {}
    text = read_input(path, what="the layer record")
    try:
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("format") != RECORD_FORMAT:
            found = data.get("format") if isinstance(data, dict) else type(data).__name__
            raise ValueError(f"format {found!r}, expected {RECORD_FORMAT}")
        if not isinstance(data.get("layers"), dict):
            raise ValueError("'layers' must be an object")
        return {name: _layer(name, layer) for name, layer in data["layers"].items()}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(f"{path} is not a valid layer record: {exc}", hint=_RECORD_HINT) from None


def read_before_build(path: Path, *, write: bool) -> dict[str, Expected]:
    """The record a build will check its layers against, read before any layer is built.

    With ``write`` (``--record-layers``) the old content does not matter, but the path must
    be one the record can be written to: a directory or a FIFO there is refused now, not
    after minutes of building.
    """
    if not write:
        return read(path)
    if os.path.lexists(path) and not os.path.isfile(path):
        kind = kind_of(os.stat(path).st_mode) if os.path.exists(path) else "a dangling symbolic link"
        raise PathError(f"the layer record {path} is {kind}, not a file", hint="remove it; the build writes the record")
    return {}


def _layer(name: str, layer: object) -> Expected:
    """One recorded layer, checked: its inputs key, a sha256 diff_id and rows of the listing's width."""
    if not isinstance(layer, dict):
        raise ValueError(f"layer {name!r} is not an object")
    inputs, diff_id, entries = layer["inputs"], layer["diff_id"], layer["entries"]
    if not isinstance(inputs, str) or not inputs:
        raise ValueError(f"layer {name!r}: 'inputs' must be a non-empty string")
    if not isinstance(diff_id, str) or not _DIFF_ID.match(diff_id):
        raise ValueError(f"layer {name!r}: 'diff_id' must be sha256:<64 hex digits>, not {diff_id!r}")
    if not isinstance(entries, list):
        raise ValueError(f"layer {name!r}: 'entries' must be a list")
    for number, row in enumerate(entries):
        if not isinstance(row, list) or len(row) != len(_FIELDS) + 1 or not all(isinstance(f, str) for f in row):
            raise ValueError(f"layer {name!r}: entry {number} must be {len(_FIELDS) + 1} strings")
    return Expected(inputs=inputs, diff_id=diff_id, entries=tuple(tuple(row) for row in entries))


def write(path: Path, layers: dict[str, Expected]) -> None:
    """Write the record: one JSON document, one line per tar entry so diffs stay reviewable."""
    lines = [
        "{",
        f' "format": {RECORD_FORMAT},',
        ' "comment": "Written by terminai-sandbox build --record-layers. Do not edit by hand.",',
        ' "layers": {',
    ]
    names = sorted(layers)
    for index, name in enumerate(names):
        layer = layers[name]
        lines.append(f"  {json.dumps(name)}: {{")
        lines.append(f'   "inputs": {json.dumps(layer.inputs)},')
        lines.append(f'   "diff_id": {json.dumps(layer.diff_id)},')
        lines.append('   "entries": [')
        rows = [f"    {json.dumps(list(row), ensure_ascii=False)}" for row in layer.entries]
        lines.append(",\n".join(rows))
        lines.append("   ]")
        lines.append("  }" + ("," if index < len(names) - 1 else ""))
    lines += [" }", "}"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def check(name: str, record_path: Path, recorded: Expected | None, inputs: str, diff_id: str, tar: Path) -> None:
    """Fail unless layer ``name`` (built from ``inputs``) has the recorded diff_id."""
    if recorded is None:
        raise ReproducibilityError(f"{record_path} records no digest for the {name} layer", hint=_RECORD_HINT)
    if recorded.inputs != inputs:
        raise ReproducibilityError(
            f"the {name} layer's inputs (locks, image.toml, assembler format) changed since {record_path} was written",
            hint=_RECORD_HINT,
        )
    if recorded.diff_id == diff_id:
        return
    detail = first_difference(recorded.entries, listing(tar))
    raise ReproducibilityError(
        f"the {name} layer built from the locked inputs is {diff_id}, but {record_path} records "
        f"{recorded.diff_id}; first differing tar entry: {detail}",
        hint="the same locks must give the same bytes on every machine: see docs/VERIFYING.md "
        "(reproducibility); " + _RECORD_HINT,
    )


def expected(inputs: str, diff_id: str, tar: Path) -> Expected:
    return Expected(inputs=inputs, diff_id=diff_id, entries=listing(tar))
