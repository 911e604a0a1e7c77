"""Step 4: the objects as text, deterministically.

Keys are sorted, objects come in a fixed order (cluster-scoped prerequisites first, then
admission, then the workloads), and nothing depends on the clock or the host: the same
image and policy give byte-identical output. YAML is a stream of documents; ``--json``
is one ``v1`` ``List``; ``--out DIR`` writes one file per object, named after its kind
and name.

No text leaves here with a lone surrogate (non-UTF-8 bytes in an argument, decoded by
Python): YAML and JSON would carry it as a ``\\uDCFF`` escape that parsers disagree on
(some refuse the document, some substitute U+FFFD), so the objects are refused before any
is printed or written, naming the field.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from terminai_apts import durable

from terminai_sandbox.errors import ConfigError


class _Dumper(yaml.SafeDumper):
    """Block style; multi-line strings (PEM keys) as literal blocks, so they read as they are."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def check_text(value: object, where: str = "the objects") -> None:
    """Refuse a lone surrogate anywhere in ``value`` (keys included), naming where it is."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ConfigError(
                f"{where} would hold text that is not valid UTF-8 (\\u{ord(value[exc.start]):04x} at position "
                f"{exc.start}); nothing was written",
                hint="an argument, the trust policy or an environment variable holds bytes that are not UTF-8",
            ) from None
    elif isinstance(value, dict):
        for key, item in value.items():
            check_text(key, where)
            check_text(item, f"{where}.{key}")
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            check_text(item, f"{where}[{index}]")


def _checked(objects: Sequence[dict[str, Any]]) -> None:
    for obj in objects:
        check_text(obj, f"{obj.get('kind', 'object')} {obj.get('metadata', {}).get('name', '')}".strip())


def to_yaml(objects: Sequence[dict[str, Any]]) -> str:
    _checked(objects)
    return "".join(
        "---\n" + yaml.dump(obj, Dumper=_Dumper, sort_keys=True, default_flow_style=False, width=4096)
        for obj in objects
    )


def to_json(objects: Sequence[dict[str, Any]]) -> str:
    _checked(objects)
    return json.dumps({"apiVersion": "v1", "items": list(objects), "kind": "List"}, indent=2, sort_keys=True) + "\n"


def file_name(obj: dict[str, Any], position: int, suffix: str) -> str:
    return f"{position:02d}-{obj['kind'].lower()}-{obj['metadata']['name']}.{suffix}"


def write_dir(objects: Sequence[dict[str, Any]], out: Path, *, as_json: bool) -> list[Path]:
    """One file per object in ``out`` (created if missing); refuses to overwrite anything."""
    _checked(objects)
    suffix = "json" if as_json else "yaml"
    paths = [out / file_name(obj, index, suffix) for index, obj in enumerate(objects, 1)]
    existing = [p for p in paths if p.exists()]
    if existing:
        raise ConfigError(f"{existing[0]} already exists", hint="choose an empty --out directory")
    written: list[Path] = []
    try:
        out.mkdir(parents=True, exist_ok=True)
        for path, obj in zip(paths, objects, strict=True):
            text = json.dumps(obj, indent=2, sort_keys=True) + "\n" if as_json else to_yaml([obj])
            durable.write(path, text.encode())  # whole or not at all; lone surrogates are refused
            written.append(path)
    except OSError as exc:
        raise ConfigError(f"cannot write into {out}: {exc.strerror}") from None
    finally:
        if len(written) < len(paths):  # a failure or Ctrl-C: no partial set of objects stays behind
            for path in written:
                path.unlink(missing_ok=True)
    return paths
