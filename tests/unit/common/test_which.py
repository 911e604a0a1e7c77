"""``common.which`` against the standard library's ``shutil.which``, the oracle it replaces.

The kernel looks commands up on PATH without importing :mod:`shutil`; every case here is
answered by both and must be answered the same: executables, files without the execute
bit, directories, symbolic links (to files, directories, nothing), empty and repeated PATH
entries, an empty PATH, names with a directory part, relative PATH entries.
"""

from __future__ import annotations

import itertools
import os
import shutil
from pathlib import Path

import pytest
from terminai_sandbox.common.which import which


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for folder in ("a", "b", "c"):
        (tmp_path / folder).mkdir()
    for folder, name, mode in [
        ("a", "tool", 0o755),
        ("b", "tool", 0o755),
        ("a", "plain", 0o644),
        ("b", "plain", 0o755),
        ("c", "only-c", 0o700),
        ("a", "readonly-exec", 0o111),
    ]:
        target = tmp_path / folder / name
        target.write_text("#!/bin/sh\n")
        target.chmod(mode)
    (tmp_path / "a" / "dir-named").mkdir()
    (tmp_path / "b" / "dir-named").write_text("")
    (tmp_path / "b" / "dir-named").chmod(0o755)
    (tmp_path / "a" / "link").symlink_to(tmp_path / "b" / "tool")
    (tmp_path / "a" / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "a" / "link-to-dir").symlink_to(tmp_path / "c")
    (tmp_path / "tool").write_text("")
    (tmp_path / "tool").chmod(0o755)
    return tmp_path


NAMES = ["tool", "plain", "only-c", "readonly-exec", "dir-named", "link", "dangling", "link-to-dir", "absent"]


def paths(root: Path) -> list[str]:
    entries = [str(root / "a"), str(root / "b"), str(root / "c"), "", "a", str(root / "a") + "/"]
    found = ["", ":", os.pathsep.join([str(root / "a"), str(root / "a")])]
    for size in (1, 2, 3):
        found += [os.pathsep.join(combo) for combo in itertools.permutations(entries, size)]
    return found


def test_every_name_on_every_path_is_found_as_shutil_finds_it(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tree)  # empty and relative PATH entries are relative to the working directory
    compared = 0
    for path in paths(tree):
        for name in NAMES:
            assert which(name, path) == shutil.which(name, path=path), (name, path)
            compared += 1
    assert compared > 1000


@pytest.mark.parametrize(
    "name", ["./tool", "tool/", "a/tool", "a/plain", "b/plain", "a/dir-named", "a/link", "/bin/sh"]
)
def test_a_name_with_a_directory_part_is_checked_as_it_is(
    name: str, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tree)
    assert which(name, "/nonexistent") == shutil.which(name, path="/nonexistent")
    assert which(str(tree / name)) == shutil.which(str(tree / name))


def test_the_process_path_is_the_default(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", os.pathsep.join([str(tree / "c"), str(tree / "a")]))
    for name in NAMES:
        assert which(name) == shutil.which(name), name
    assert which("only-c") == str(tree / "c" / "only-c")
    monkeypatch.setenv("PATH", "")
    assert which("tool") is None and shutil.which("tool") is None
    monkeypatch.delenv("PATH")
    assert which("sh") == shutil.which("sh") is not None  # the system's default search path


def test_a_file_without_the_execute_bit_is_never_chosen(tree: Path) -> None:
    # The lookup that matters: a non-executable `docker` earlier on PATH is passed over.
    path = os.pathsep.join([str(tree / "a"), str(tree / "b")])
    assert which("plain", path) == str(tree / "b" / "plain")
    assert which("plain", str(tree / "a")) is None
