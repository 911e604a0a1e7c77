"""Every error either tool can print carries a hint, by construction and by a scan of the sources.

The guarantee is structural: each error class of both hierarchies has a remedy of its own
(``default_hint``), used whenever a raise site passes none, and ``render`` always prints the
hint line. These tests hold every class (found by importing every module, so a new class is
covered the day it is added) and every hand-written ``error:`` line of the sources to it.
"""

from __future__ import annotations

import ast
import functools
import importlib
import pkgutil
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import terminai_apts
import terminai_sandbox
from terminai_apts.errors import AptsError
from terminai_sandbox.errors import SandboxError

SOURCES = [Path(terminai_apts.__file__).parent, Path(terminai_sandbox.__file__).parent]


# A class statement with at least one base: the modules that may define an error class.
_CLASS_WITH_BASES = re.compile(r"^class \w+\(\w", re.MULTILINE)


def _import_everything() -> None:
    """Import every module that defines a class with a base (importing all of them costs
    seconds of the heavy libraries for nothing)."""
    for package in (terminai_apts, terminai_sandbox):
        root = Path(package.__file__).parent
        for module in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            path = root.joinpath(*module.name.split(".")[1:])
            source = path / "__init__.py" if module.ispkg else path.with_suffix(".py")
            if _CLASS_WITH_BASES.search(source.read_text(encoding="utf-8")):
                importlib.import_module(module.name)


def _subclasses(root: type) -> Iterator[type]:
    todo = [root]
    while todo:
        current = todo.pop()
        yield current
        todo.extend(current.__subclasses__())


@functools.cache
def _error_classes() -> list[type]:
    _import_everything()
    found = {*_subclasses(SandboxError), *_subclasses(AptsError)}
    return sorted(found, key=lambda c: f"{c.__module__}.{c.__qualname__}")


def test_the_scan_finds_the_classes_of_both_hierarchies() -> None:
    names = {c.__name__ for c in _error_classes()}
    # A scan that found nothing would pass every check below.
    assert {"RegistryBadResponse", "AuditError", "MemoryQueryError", "JournalError", "Terminated"} <= names
    assert len(names) >= 39


@pytest.mark.parametrize("cls", _error_classes(), ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_an_error_built_without_a_hint_still_renders_one(cls: type) -> None:
    hint = cls.__dict__.get("default_hint") or next(
        getattr(base, "default_hint", "") for base in cls.__mro__ if getattr(base, "default_hint", "")
    )
    assert hint.strip(), f"{cls.__qualname__} has no default hint"
    try:
        err = cls("something failed")
    except TypeError:  # a class with its own constructor: its default is what the check above held
        return
    for given in (None, ""):
        built = cls("something failed", hint=given) if given is not None else err
        lines = built.render().splitlines()
        assert lines[0] == "error: something failed", lines
        assert len(lines) == 2 and lines[1].startswith("  hint: ") and lines[1][8:].strip(), lines


def test_a_class_specific_hint_beats_the_root_one() -> None:
    # The families users meet most each say what to do about them, not "see --help".
    for cls in _error_classes():
        if cls in (SandboxError, AptsError) or cls.__name__ == "UnexpectedError":
            continue
        root = SandboxError.default_hint if issubclass(cls, SandboxError) else AptsError.default_hint
        assert cls("x").hint != root if _constructible(cls) else True, cls.__qualname__


def _constructible(cls: type) -> bool:
    try:
        cls("x")
    except TypeError:
        return False
    return True


def _source_files() -> Iterator[Path]:
    for root in SOURCES:
        yield from sorted(root.rglob("*.py"))


def test_no_raise_site_passes_an_empty_hint() -> None:
    found = []
    for path in _source_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            for keyword in node.keywords:
                if (
                    keyword.arg == "hint"
                    and isinstance(keyword.value, ast.Constant)
                    and keyword.value.value in ("", None)
                ):
                    found.append(f"{path}:{node.lineno}")
    assert not found, found


# A string literal (plain or f-string) that starts an error line a command prints itself.
_ERROR_LINE = re.compile(r"""f?["']error: """)


def test_every_hand_written_error_line_is_followed_by_a_hint_line() -> None:
    missing = []
    for path in _source_files():
        lines = path.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines):
            if not _ERROR_LINE.search(line) or line.lstrip().startswith("#"):
                continue
            window = "\n".join(lines[number : number + 6])
            if "hint:" not in window:
                missing.append(f"{path}:{number + 1}: {line.strip()}")
    assert not missing, "\n".join(missing)
