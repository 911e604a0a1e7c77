"""Contract self-check of the installed toolset (the image entrypoint runs it first).

``python -m terminai_apts.health [--json] [--manifest FILE]`` checks every module, public
symbol, enum member, record field, function signature, shim alias and entry point that
the contract manifest (``contract.json``, shipped in this package) lists, both ways: a
missing item fails, and so does a public symbol the manifest does not list. Exit 0 when
satisfied; otherwise exit 1 and name every problem on stderr. Only ``--json`` writes to
stdout (agents parse stdout).
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import importlib
import inspect
import json
import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

__all__ = ["HealthReport", "check", "describe", "load_manifest", "main"]

MANIFEST_PATH = Path(__file__).with_name("contract.json")


@dataclass(frozen=True, slots=True, kw_only=True)
class HealthReport:
    """Result of :func:`check`: ``ok`` and every problem found, by contract item."""

    ok: bool
    contract_version: str
    problems: tuple[str, ...]
    checked: int
    elapsed_ms: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "contract_version": self.contract_version,
            "problems": list(self.problems),
            "checked": self.checked,
            "elapsed_ms": round(self.elapsed_ms, 3),
        }


_MISSING = object()


def load_manifest(path: Path | None = None) -> dict[str, Any]:
    """Read a contract manifest (default: the one shipped with this package)."""
    data: dict[str, Any] = json.loads((path or MANIFEST_PATH).read_text(encoding="utf-8"))
    return data


def describe(obj: object) -> dict[str, Any]:
    """The contract description of one public object (kind, members, fields, signature)."""
    if inspect.ismodule(obj):
        return {"kind": "module"}
    if isinstance(obj, type) and issubclass(obj, enum.Enum):
        return {"kind": "enum", "members": [member.name for member in obj]}
    if isinstance(obj, type) and dataclasses.is_dataclass(obj):
        return {"kind": "dataclass", "fields": [f.name for f in dataclasses.fields(obj)]}
    if isinstance(obj, type):
        return {"kind": "class"}
    if callable(obj):
        params = []
        for param in inspect.signature(obj).parameters.values():
            item: dict[str, Any] = {"name": param.name, "kind": param.kind.name}
            if param.default is not inspect.Parameter.empty:
                item["default"] = repr(param.default)
            params.append(item)
        return {"kind": "function", "parameters": params}
    if isinstance(obj, str | int | float | bool) or obj is None:
        return {"kind": "constant", "value": obj}
    return {"kind": "object"}


def _public(module: Any) -> set[str]:
    names = getattr(module, "__all__", None)
    if names is None:
        return {n for n in vars(module) if not n.startswith("_")}
    return set(names)


def _check_module(name: str, spec: dict[str, Any], problems: list[str]) -> int:
    try:
        module = importlib.import_module(name)
    except Exception as exc:  # any import failure is a contract failure, reported, not raised
        problems.append(f"{name}: module cannot be imported ({type(exc).__name__}: {exc})")
        return 1
    expected: dict[str, Any] = spec.get("symbols", {})
    public = _public(module)
    for extra in sorted(public - set(expected)):
        problems.append(f"{name}.{extra}: public symbol not listed in the contract")
    checked = 1
    for symbol, want in expected.items():
        checked += 1
        # A deprecated name the contract still lists (TieredMemory) warns when used; checking
        # that it is there is not a use, and the entrypoint's stderr stays quiet.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            found = getattr(module, symbol, _MISSING)
        if found is _MISSING:
            problems.append(f"{name}.{symbol}: missing")
            continue
        if symbol not in public:
            problems.append(f"{name}.{symbol}: present but not public (__all__)")
        got = describe(found)
        if got["kind"] != want["kind"]:
            problems.append(f"{name}.{symbol}: is a {got['kind']}, contract says {want['kind']}")
            continue
        for member in want.get("members", []):
            if member not in got.get("members", []):
                problems.append(f"{name}.{symbol}.{member}: enum member missing")
        for member in got.get("members", []):
            if member not in want.get("members", []):
                problems.append(f"{name}.{symbol}.{member}: enum member not listed in the contract")
        for key in ("fields", "parameters", "value"):
            if key in want and want[key] != got.get(key):
                problems.append(f"{name}.{symbol}: {key} changed: contract {want[key]!r}, installed {got.get(key)!r}")
    same_as = spec.get("same_as")
    if same_as:
        try:
            target = importlib.import_module(same_as)
        except Exception as exc:
            problems.append(f"{name}: alias target {same_as} cannot be imported ({exc})")
            return checked
        for symbol in expected:
            if expected[symbol]["kind"] == "module":
                continue
            if hasattr(module, symbol) and getattr(module, symbol) is not getattr(target, symbol, None):
                problems.append(f"{name}.{symbol}: is not the same object as {same_as}.{symbol}")
    return checked


def check(manifest: dict[str, Any] | None = None) -> HealthReport:
    """Check the installed toolset against ``manifest`` (default: the shipped one)."""
    started = time.perf_counter()
    data = manifest if manifest is not None else load_manifest()
    problems: list[str] = []
    checked = 0
    for name, spec in data["modules"].items():
        checked += _check_module(name, spec, problems)
    for entry in data.get("entry_points", []):
        checked += 1
        module_name = entry["module"]
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:
            problems.append(f"python -m {module_name}: cannot be imported ({type(exc).__name__}: {exc})")
            continue
        if not callable(getattr(module, "main", None)):
            problems.append(f"python -m {module_name}: has no main()")
    return HealthReport(
        ok=not problems,
        contract_version=str(data.get("contract_version", "?")),
        problems=tuple(problems),
        checked=checked,
        elapsed_ms=(time.perf_counter() - started) * 1000,
    )


class _Parser(argparse.ArgumentParser):
    """A bad command line is one ``error:`` line and a hint, exit 2 (this table's "cannot
    read"), as every other failure; not argparse's usage dump."""

    def error(self, message: str) -> NoReturn:
        print(f"error: {message}", file=sys.stderr)
        print(f"  hint: see '{self.prog} --help'", file=sys.stderr)
        raise SystemExit(2)


def main(argv: Sequence[str] | None = None) -> int:
    parser = _Parser(prog="python -m terminai_apts.health", description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the report as JSON on stdout")
    parser.add_argument("--manifest", type=Path, help="check against this manifest instead of the shipped one")
    args = parser.parse_args(argv)
    try:
        report = check(load_manifest(args.manifest) if args.manifest else None)
    except (OSError, ValueError, KeyError) as exc:
        print(f"error: the contract manifest cannot be read: {exc}", file=sys.stderr)
        print("  hint: pass a contract.json with --manifest, or reinstall the toolset", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report.to_dict(), sort_keys=True))
    if report.ok:
        return 0
    print(
        f"T-APTS contract {report.contract_version} NOT satisfied ({len(report.problems)} problems):", file=sys.stderr
    )
    for problem in report.problems:
        print(f"  - {problem}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
