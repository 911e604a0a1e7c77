"""Support code of the contract suite: where the manifest is, and a JSON Schema checker.

The checker covers the subset the contract's schemas use.

The image carries no jsonschema package, so the suite checks plans with this; on the
host the same plans are also checked with `jsonschema` when it is importable.
Supported keywords: type, enum, const, required, properties, additionalProperties
(false), items, pattern, minimum, minLength.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any


def manifest_path() -> Path:
    """``$TAPTS_CONTRACT_MANIFEST``, else ``contracts/t-apts/contract.json`` beside this suite."""
    configured = os.environ.get("TAPTS_CONTRACT_MANIFEST")
    if configured:
        return Path(configured)
    return Path(__file__).resolve().parent.parent / "t-apts" / "contract.json"


def load_manifest() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(manifest_path().read_text(encoding="utf-8"))
    return data


_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}
_KNOWN = {
    "$schema",
    "title",
    "description",
    "type",
    "enum",
    "const",
    "required",
    "properties",
    "additionalProperties",
    "items",
    "pattern",
    "minimum",
    "minLength",
}


def _is(value: Any, name: str) -> bool:
    if name in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, _TYPES[name])


def errors(value: Any, schema: dict[str, Any], where: str = "$") -> list[str]:
    """Every way ``value`` violates ``schema`` (empty when valid)."""
    unknown = set(schema) - _KNOWN
    if unknown:
        return [f"{where}: schema uses unsupported keywords {sorted(unknown)}"]
    out: list[str] = []
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_is(value, n) for n in names):
            return [f"{where}: expected {names}, got {type(value).__name__}"]
    if "const" in schema and value != schema["const"]:
        out.append(f"{where}: expected {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{where}: {value!r} not in {schema['enum']}")
    if isinstance(value, str):
        if "pattern" in schema and not re.search(schema["pattern"], value):
            out.append(f"{where}: {value!r} does not match {schema['pattern']}")
        if len(value) < schema.get("minLength", 0):
            out.append(f"{where}: shorter than {schema['minLength']}")
    if isinstance(value, int) and not isinstance(value, bool) and "minimum" in schema and value < schema["minimum"]:
        out.append(f"{where}: {value} < {schema['minimum']}")
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                out.append(f"{where}: missing {key!r}")
        props = schema.get("properties", {})
        for key, item in value.items():
            if key in props:
                out += errors(item, props[key], f"{where}.{key}")
            elif schema.get("additionalProperties") is False:
                out.append(f"{where}: unexpected property {key!r}")
    if isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            out += errors(item, schema["items"], f"{where}[{index}]")
    return out
