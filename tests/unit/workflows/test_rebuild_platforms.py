"""The scheduled relock builds, records and contract-tests every platform image.toml declares.

A relock changes each platform's lock-only layers, which a build then refuses until
``layers.lock`` / ``layers.ARCH.lock`` are re-recorded, so the pull request must carry
them; and the arm64 locks must be built and tested before anyone reviews them, not only
the host's.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

from tests.unit.workflows import rules

ROOT = Path(__file__).resolve().parents[3]
REBUILD = ROOT / ".github" / "workflows" / "rebuild.yml"
DECLARED = tuple(tomllib.loads((ROOT / "images" / "sandbox" / "image.toml").read_text())["image"]["platforms"])


def _relock_lines() -> list[str]:
    steps = rules.load(REBUILD)["jobs"]["relock"]["steps"]
    return [line for step in steps for line in (step.get("run") or "").replace("\\\n", " ").splitlines()]


def _make_variable(name: str) -> str:
    match = re.search(rf"^{name} := (.+)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert match, f"Makefile has no {name}"
    return match.group(1).strip()


def test_the_relocked_layers_of_every_declared_platform_are_recorded() -> None:
    builds = [shlex.split(line) for line in _relock_lines() if " build " in f" {line} " and "terminai-sandbox" in line]
    (words,) = [w for w in builds if "--record-layers" in w]
    assert tuple(words[words.index("--platforms") + 1].split(",")) == DECLARED


def test_the_relocked_index_is_built_twice_and_contract_tested_on_every_platform() -> None:
    lines = _relock_lines()
    assert any("make image-multiarch" in line for line in lines)
    assert not any(re.search(r"make image(\s|$)", line) for line in lines), "make image builds the host's platform only"
    assert tuple(_make_variable("MULTIARCH").split(",")) == DECLARED
    recipe = (ROOT / "Makefile").read_text().split("\nimage-multiarch:", 1)[1].split("\n\n", 1)[0]
    assert "--check-reproducible" in recipe and "-m multiarch" in recipe


def test_the_pull_request_carries_every_lock_and_layer_record() -> None:
    (add,) = [line for line in _relock_lines() if line.strip().startswith("git add")]
    assert "images/sandbox/*.lock" in add.split()
    records = sorted(p.name for p in (ROOT / "images" / "sandbox").glob("layers*.lock"))
    assert len(records) == len(DECLARED), records
