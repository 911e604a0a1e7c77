"""Classify the changes between two T-APTS contract manifests.

A change is *breaking* when something a consumer may rely on disappears or changes
shape: a removed module, symbol, enum member, record field or entry point, a changed
kind or constant, a removed, renamed or reordered parameter, a changed parameter kind or
default, a new required parameter, or any change to a stdout schema. It is *additive*
when something new appears (module, symbol, member, field appended at the end, optional
parameter, entry point). A breaking change needs a new major contract version; an
additive one needs a higher version.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from terminai_sandbox.errors import ConfigError, ContractError


@dataclass(frozen=True, slots=True, kw_only=True)
class Change:
    kind: str  # "breaking" | "additive"
    item: str
    detail: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ContractDiff:
    old_version: str
    new_version: str
    changes: tuple[Change, ...]

    @property
    def breaking(self) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if c.kind == "breaking")

    @property
    def additive(self) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if c.kind == "additive")

    def version_problem(self) -> str | None:
        """Why the version bump does not fit the changes, or None when it does."""
        old, new = _semver(self.old_version, "old"), _semver(self.new_version, "new")
        if self.breaking and new[0] <= old[0]:
            return (
                f"{len(self.breaking)} breaking change(s) need a major contract version bump "
                f"({self.old_version} -> {old[0] + 1}.0.0), got {self.new_version}"
            )
        if self.changes and new <= old:
            return f"changes need a higher contract version than {self.old_version}, got {self.new_version}"
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "old_version": self.old_version,
            "new_version": self.new_version,
            "breaking": [{"item": c.item, "detail": c.detail} for c in self.breaking],
            "additive": [{"item": c.item, "detail": c.detail} for c in self.additive],
            "version_problem": self.version_problem(),
        }


def _semver(text: str, which: str) -> tuple[int, int, int]:
    parts = text.split(".")
    if len(parts) != 3 or not all(p.isascii() and p.isdigit() for p in parts):
        raise ConfigError(f"{which} manifest has contract_version {text!r}, not MAJOR.MINOR.PATCH")
    return int(parts[0]), int(parts[1]), int(parts[2])


def load(path: Path) -> dict[str, Any]:
    """Read a manifest file; malformed input is a :class:`ConfigError` naming the file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read manifest {str(path)!r}: {exc.strerror}") from None
    except ValueError as exc:
        raise ConfigError(f"manifest {str(path)!r} is not valid JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("modules"), dict) or "contract_version" not in data:
        raise ConfigError(f"{str(path)!r} is not a contract manifest (needs 'contract_version' and 'modules')")
    return data


def _params(old: list[dict[str, Any]], new: list[dict[str, Any]], item: str, out: list[Change]) -> None:
    for index, param in enumerate(old):
        if index >= len(new):
            out.append(Change(kind="breaking", item=item, detail=f"parameter {param['name']!r} removed"))
            continue
        other = new[index]
        if other["name"] != param["name"]:
            out.append(
                Change(
                    kind="breaking",
                    item=item,
                    detail=f"parameter {index + 1} renamed/reordered {param['name']!r} -> {other['name']!r}",
                )
            )
        elif other["kind"] != param["kind"]:
            out.append(
                Change(
                    kind="breaking",
                    item=item,
                    detail=f"parameter {param['name']!r} kind {param['kind']} -> {other['kind']}",
                )
            )
        elif other.get("default") != param.get("default"):
            out.append(
                Change(
                    kind="breaking",
                    item=item,
                    detail=f"parameter {param['name']!r} default {param.get('default')} -> {other.get('default')}",
                )
            )
    for param in new[len(old) :]:
        if "default" in param or param["kind"] in ("VAR_POSITIONAL", "VAR_KEYWORD"):
            out.append(Change(kind="additive", item=item, detail=f"optional parameter {param['name']!r} added"))
        else:
            out.append(Change(kind="breaking", item=item, detail=f"required parameter {param['name']!r} added"))


def _symbol(old: dict[str, Any], new: dict[str, Any], item: str, out: list[Change]) -> None:
    if old["kind"] != new["kind"]:
        out.append(Change(kind="breaking", item=item, detail=f"kind {old['kind']} -> {new['kind']}"))
        return
    for member in old.get("members", []):
        if member not in new.get("members", []):
            out.append(Change(kind="breaking", item=f"{item}.{member}", detail="enum member removed"))
    for member in new.get("members", []):
        if member not in old.get("members", []):
            out.append(Change(kind="additive", item=f"{item}.{member}", detail="enum member added"))
    old_fields, new_fields = old.get("fields", []), new.get("fields", [])
    if new_fields[: len(old_fields)] != old_fields:
        out.append(Change(kind="breaking", item=item, detail=f"fields {old_fields} -> {new_fields}"))
    elif len(new_fields) > len(old_fields):
        out.append(Change(kind="additive", item=item, detail=f"fields added {new_fields[len(old_fields) :]}"))
    if "value" in old and old.get("value") != new.get("value"):
        out.append(Change(kind="breaking", item=item, detail=f"value {old.get('value')!r} -> {new.get('value')!r}"))
    if "parameters" in old:
        _params(old["parameters"], new.get("parameters", []), item, out)


def diff(old: dict[str, Any], new: dict[str, Any]) -> ContractDiff:
    """Every change from ``old`` to ``new``, classified (pure: no files, no imports)."""
    out: list[Change] = []
    old_mods, new_mods = old["modules"], new["modules"]
    for name in sorted(set(old_mods) - set(new_mods)):
        out.append(Change(kind="breaking", item=name, detail="module removed"))
    for name in sorted(set(new_mods) - set(old_mods)):
        out.append(Change(kind="additive", item=name, detail="module added"))
    for name in sorted(set(old_mods) & set(new_mods)):
        old_syms, new_syms = old_mods[name].get("symbols", {}), new_mods[name].get("symbols", {})
        if old_mods[name].get("same_as") != new_mods[name].get("same_as"):
            out.append(Change(kind="breaking", item=name, detail="alias target changed"))
        for sym in sorted(set(old_syms) - set(new_syms)):
            out.append(Change(kind="breaking", item=f"{name}.{sym}", detail="symbol removed"))
        for sym in sorted(set(new_syms) - set(old_syms)):
            out.append(Change(kind="additive", item=f"{name}.{sym}", detail="symbol added"))
        for sym in sorted(set(old_syms) & set(new_syms)):
            _symbol(old_syms[sym], new_syms[sym], f"{name}.{sym}", out)
    old_eps = {e["module"]: e for e in old.get("entry_points", [])}
    new_eps = {e["module"]: e for e in new.get("entry_points", [])}
    for module in sorted(set(old_eps) - set(new_eps)):
        out.append(Change(kind="breaking", item=f"python -m {module}", detail="entry point removed"))
    for module in sorted(set(new_eps) - set(old_eps)):
        out.append(Change(kind="additive", item=f"python -m {module}", detail="entry point added"))
    for module in sorted(set(old_eps) & set(new_eps)):
        if old_eps[module].get("stdout_schema") != new_eps[module].get("stdout_schema"):
            out.append(Change(kind="breaking", item=f"python -m {module}", detail="stdout schema changed"))
    old_schemas, new_schemas = old.get("schemas", {}), new.get("schemas", {})
    for schema in sorted(set(old_schemas) | set(new_schemas)):
        if schema not in new_schemas:
            out.append(Change(kind="breaking", item=f"schema {schema}", detail="schema removed"))
        elif schema not in old_schemas:
            out.append(Change(kind="additive", item=f"schema {schema}", detail="schema added"))
        elif old_schemas[schema] != new_schemas[schema]:
            out.append(Change(kind="breaking", item=f"schema {schema}", detail="schema changed"))
    return ContractDiff(
        old_version=str(old["contract_version"]), new_version=str(new["contract_version"]), changes=tuple(out)
    )


def diff_files(old_path: Path, new_path: Path) -> ContractDiff:
    """:func:`diff` of two manifest files; raises :class:`ContractError` on a bad version bump."""
    result = diff(load(old_path), load(new_path))
    problem = result.version_problem()
    if problem:
        items = "; ".join(f"{c.item}: {c.detail}" for c in result.breaking[:10])
        raise ContractError(
            problem + (f" (breaking: {items})" if items else ""),
            hint="bump contract_version in the new manifest, or restore the removed items",
        )
    return result
