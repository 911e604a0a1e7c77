"""The floors of ``terminai_sandbox.signing`` depend one way: formats ← store ← verify.

* ``formats/`` is pure: it imports no other floor, no registry client and no HTTP stack.
* ``store`` is the only module that imports the registry client; it imports no verification.
* ``verify/`` reads through the store's interface and never signs.
* No module imports another in a cycle, and each imports on its own in a fresh interpreter.
* No code that calls the registry tells its errors apart by their message text.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
import terminai_sandbox

PACKAGE = Path(terminai_sandbox.__file__).parent
SIGNING = PACKAGE / "signing"


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = sorted(_module(path) for path in SIGNING.rglob("*.py"))


def _imports(name: str) -> set[str]:
    """Modules of terminai_sandbox that ``name`` imports (top level or inside functions)."""
    path = PACKAGE.parent / (name.replace(".", "/") + ".py")
    if not path.exists():
        path = PACKAGE.parent / name.replace(".", "/") / "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("terminai_sandbox"):
            for alias in node.names:
                candidate = f"{node.module}.{alias.name}"
                found.add(candidate if candidate in MODULES else node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("terminai_sandbox"))
    return found - {name}


def _floor(name: str) -> str | None:
    rest = name.removeprefix("terminai_sandbox.signing")
    for floor in (".formats", ".store", ".verify", ".sign", ".keyless"):
        if rest == floor or rest.startswith(floor + "."):
            return floor.lstrip(".")
    return None


# floor → floors (and outside modules) it must never import
FORBIDDEN = {
    "formats": {"store", "verify", "sign", "keyless", "terminai_sandbox.registry"},
    "store": {"verify", "sign", "keyless"},
    "verify": {"sign", "keyless"},
}


def test_every_signing_module_is_on_a_floor() -> None:
    assert len(MODULES) >= 15
    assert [m for m in MODULES if m != "terminai_sandbox.signing" and _floor(m) is None] == []


@pytest.mark.parametrize("name", MODULES)
def test_dependency_direction_formats_store_verify(name: str) -> None:
    floor = _floor(name)
    if floor not in FORBIDDEN:
        return
    wrong = sorted(
        target for target in _imports(name) if _floor(target) in FORBIDDEN[floor] or target in FORBIDDEN[floor]
    )
    assert wrong == [], f"{name} ({floor}) must not import {wrong}"


def test_only_the_store_talks_to_the_registry() -> None:
    talking = sorted(m for m in MODULES if "terminai_sandbox.registry" in _imports(m))
    # sign.py and verify/image.py take a RegistryClient to hand it to the store
    assert talking == [
        "terminai_sandbox.signing.sign",
        "terminai_sandbox.signing.store",
        "terminai_sandbox.signing.verify.image",
    ]
    for name in ("terminai_sandbox.signing.sign", "terminai_sandbox.signing.verify.image"):
        source = (PACKAGE.parent / (name.replace(".", "/") + ".py")).read_text()
        calls = {"get_manifest", "get_blob", "put_manifest", "push_blob", "request("}
        assert not [c for c in calls if f".{c}" in source], f"{name} calls the registry itself"


def test_no_import_cycle_in_signing() -> None:
    graph = {name: {t for t in _imports(name) if t in MODULES} for name in MODULES}
    done: set[str] = set()

    def visit(node: str, path: tuple[str, ...]) -> None:
        assert node not in path, f"import cycle: {' -> '.join((*path, node))}"
        if node in done:
            return
        for target in graph[node]:
            visit(target, (*path, node))
        done.add(node)

    for name in MODULES:
        visit(name, ())


# Each floor's modules, and the entry points others import first (the launcher reads
# verify.trust alone). Cycles anywhere are caught statically above.
ALONE = [m for m in MODULES if _floor(m) == "formats"] + [
    "terminai_sandbox.signing.store",
    "terminai_sandbox.signing.sign",
    "terminai_sandbox.signing.verify.trust",
    "terminai_sandbox.signing.verify.image",
]


def test_each_floor_imports_alone_and_formats_load_no_http_stack() -> None:
    script = (
        "import importlib, sys\n"
        "importlib.import_module(sys.argv[1])\n"
        "print(int('requests' in sys.modules), int('terminai_sandbox.registry' in sys.modules))\n"
    )
    children = {
        name: subprocess.Popen(
            [sys.executable, "-c", script, name], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for name in ALONE
    }
    for name, child in children.items():
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, f"{name} does not import on its own:\n{err}"
        if _floor(name) == "formats":
            assert out.split() == ["0", "0"], f"{name} pulls in the registry client or requests"
        if name.endswith("verify.trust"):
            assert out.split() == ["0", "0"], "reading a trust file must not load the HTTP stack"


def _message_tests(path: Path) -> list[str]:
    """``"…" in exc.message``, ``exc.message.startswith(…)`` and the like in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare) and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops):
            operands = [node.left, *node.comparators]
            if any(isinstance(o, ast.Attribute) and o.attr == "message" for o in operands[1:]):
                found.append(f"{path.name}:{node.lineno}")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in {"startswith", "endswith", "find", "count"}
            and isinstance(node.func.value, ast.Attribute)
            and node.func.value.attr == "message"
        ):
            found.append(f"{path.name}:{node.lineno}")
    return found


def test_no_caller_tells_registry_errors_apart_by_their_text() -> None:
    callers = [*SIGNING.rglob("*.py"), PACKAGE / "registry.py", *(PACKAGE / "release").glob("*.py")]
    callers += PACKAGE.glob("cli/*.py")
    assert [hit for path in callers for hit in _message_tests(path)] == []


def test_the_message_check_finds_what_it_looks_for(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text('try:\n    pass\nexcept E as exc:\n    if "404" in exc.message:\n        pass\n')
    assert _message_tests(sample) == ["sample.py:4"]
