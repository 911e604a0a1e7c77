"""The bytecode caches ``tests/fixtures/bytecode.py`` writes before the workers start are
the ones pytest and Python read (a cache nobody reads would only cost the controller)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from _pytest.assertion import rewrite

from tests.fixtures import bytecode


def test_this_module_was_read_from_the_rewritten_cache_the_run_wrote(pytestconfig: pytest.Config) -> None:
    # Still pytest's internals in the pinned version: else the plugin silently writes nothing.
    assert all(hasattr(rewrite, name) for name in ("_read_pyc", "_rewrite_test", "_write_pyc", "try_makedirs"))
    here = Path(__file__)
    assert here in bytecode._rewritten(pytestconfig)
    pyc = rewrite.get_cache_dir(here) / (here.name[:-3] + rewrite.PYC_TAIL)
    assert rewrite._read_pyc(here, pyc) is not None, f"{pyc} is missing or not this source's"


def test_a_package_module_has_an_ordinary_pyc_for_its_source() -> None:
    import terminai_sandbox.errors as module

    source = Path(str(module.__file__))
    cached = Path(importlib.util.cache_from_source(str(source)))
    assert cached.is_file(), cached
    # The header Python checks before it uses the file: its magic number and the source's size.
    header = cached.read_bytes()[:16]
    assert header[:4] == importlib.util.MAGIC_NUMBER
    assert int.from_bytes(header[12:16], "little") == source.stat().st_size & 0xFFFFFFFF
    assert sys.modules["terminai_sandbox.errors"].__cached__ == str(cached)
