"""The installed modules expose exactly what the manifest lists (both ways)."""

from __future__ import annotations

import dataclasses
import enum
import importlib
import inspect
from typing import Any

import pytest


def _public(module: Any) -> set[str]:
    return set(getattr(module, "__all__", [n for n in vars(module) if not n.startswith("_")]))


def _kind(obj: object) -> str:
    if inspect.ismodule(obj):
        return "module"
    if isinstance(obj, type) and issubclass(obj, enum.Enum):
        return "enum"
    if isinstance(obj, type) and dataclasses.is_dataclass(obj):
        return "dataclass"
    if isinstance(obj, type):
        return "class"
    if callable(obj):
        return "function"
    if isinstance(obj, str | int | float | bool) or obj is None:
        return "constant"
    return "object"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    from contract_support import load_manifest

    modules = load_manifest()["modules"]
    if "module_name" in metafunc.fixturenames:
        metafunc.parametrize("module_name", list(modules))
    if "alias_name" in metafunc.fixturenames:
        metafunc.parametrize("alias_name", [name for name, spec in modules.items() if "same_as" in spec])


def test_manifest_header(manifest: dict[str, Any]) -> None:
    assert manifest["contract"] == "t-apts"
    major, minor, patch = (int(p) for p in manifest["contract_version"].split("."))
    assert major >= 1 and minor >= 0 and patch >= 0


def test_module_exposes_exactly_the_listed_symbols(manifest: dict[str, Any], module_name: str) -> None:
    module = importlib.import_module(module_name)
    listed = set(manifest["modules"][module_name].get("symbols", {}))
    public = _public(module)
    assert not listed - public, f"missing from {module_name}: {sorted(listed - public)}"
    assert not public - listed, f"public but not in the contract: {sorted(public - listed)}"


def test_symbol_shapes(manifest: dict[str, Any], module_name: str) -> None:
    module = importlib.import_module(module_name)
    for name, want in manifest["modules"][module_name].get("symbols", {}).items():
        obj = getattr(module, name)
        assert _kind(obj) == want["kind"], f"{module_name}.{name}"
        if want["kind"] == "enum":
            assert [m.name for m in obj] == want["members"], f"{module_name}.{name} members"
            assert all(m.value == m.name for m in obj), "enum value = name"
        if want["kind"] == "dataclass":
            assert [f.name for f in dataclasses.fields(obj)] == want["fields"], f"{module_name}.{name} fields"
        if want["kind"] == "function":
            got = []
            for p in inspect.signature(obj).parameters.values():
                item: dict[str, Any] = {"name": p.name, "kind": p.kind.name}
                if p.default is not inspect.Parameter.empty:
                    item["default"] = repr(p.default)
                got.append(item)
            assert got == want["parameters"], f"{module_name}.{name} signature"
        if want["kind"] == "constant" and "value" in want:
            assert obj == want["value"], f"{module_name}.{name} value"


def test_aliases_are_the_same_objects(manifest: dict[str, Any], alias_name: str) -> None:
    spec = manifest["modules"][alias_name]
    module = importlib.import_module(alias_name)
    target = importlib.import_module(spec["same_as"])
    for name, want in spec["symbols"].items():
        if want["kind"] != "module":
            assert getattr(module, name) is getattr(target, name), f"{alias_name}.{name}"


def test_object_table_labels_has_every_label() -> None:
    from terminai_apts.model import ObjectTableLabels

    assert [label.value for label in ObjectTableLabels] == ["TRANSIT", "KEEP", "DELETE", "ARCHIVE", "UNKNOWN"]
    assert ObjectTableLabels.TRANSIT == "TRANSIT"
    assert isinstance(ObjectTableLabels.TRANSIT, str)
