"""Every module path the documentation names exists.

``docs/ARCHITECTURE.md`` as a whole, and the tables of every ``docs/*.md`` page, name
modules (``launch/entry.py``) and packages (``signing/verify/``). A name with a folder in
it must be a path of the repository or end one (a table of the host side says
``engine/client.py`` for ``.../terminai_sandbox/engine/client.py``); a bare file name
(``plan.py`` in the ``assemble/`` row) must name some file of the repository. A module that
was moved or removed then fails here, naming the page and the line.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "docs"
# `name.py`, `folder/`, `a/b/c.py`: in backticks, no spaces, no wildcard or placeholder.
NAMED = re.compile(r"`((?:\.\./)?[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)*(?:\.py|/))`")


def _tracked() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return listed


TRACKED = _tracked()
FILES = set(TRACKED)
FOLDERS = {str(Path(p).parent) + "/" for p in TRACKED} | {
    "/".join(p.split("/")[:i]) + "/" for p in TRACKED for i in range(1, p.count("/") + 1)
}
BASENAMES = {p.rsplit("/", 1)[-1] for p in TRACKED}


def _exists(name: str) -> bool:
    name = name.removeprefix("../")
    known = FOLDERS if name.endswith("/") else FILES
    if name in known:
        return True
    if "/" in name.rstrip("/"):
        return any(path.endswith("/" + name) for path in known)
    if name.endswith("/"):
        return any(path.endswith("/" + name) or path == name for path in FOLDERS)
    return name in BASENAMES


def _named(page: Path, *, tables_only: bool) -> list[tuple[int, str]]:
    found = []
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
        if tables_only and not line.startswith("|"):
            continue
        found += [(number, name) for name in NAMED.findall(line) if name != "/" and name not in WRITTEN]
    return found


PAGES = sorted(DOCS.glob("*.md"))
# Folders the tools write, not modules of the repository.
WRITTEN = {"dist/", "dist/X.Y.Z/", "oci/", ".terminai/", "cold/archive/"}


def test_the_pages_name_modules_at_all() -> None:
    # A pattern that matched nothing would pass the test below on any page.
    named = {name for _, name in _named(DOCS / "ARCHITECTURE.md", tables_only=False)}
    assert {"launch/entry.py", "engine/client.py", "signing/", "plan.py"} <= named
    assert not _exists("launch/nothing_here.py") and not _exists("no_such_module.py")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_module_a_page_names_exists(page: Path) -> None:
    missing = [
        f"{page.name}:{number}: {name}"
        for number, name in _named(page, tables_only=page.name != "ARCHITECTURE.md")
        if not _exists(name)
    ]
    assert missing == []
