"""Each platform's stage keys come from that platform's inputs only: the checkout's real
image.toml and locks are gathered per platform, then one platform's locks are changed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from terminai_sandbox.assemble import repo_root
from terminai_sandbox.assemble.inputs import gather
from terminai_sandbox.assemble.plan import plan

ROOT = repo_root()
TAPTS = ROOT / "packages" / "terminai-apts"
PLATFORMS = ("linux/amd64", "linux/arm64")


@pytest.fixture
def images(tmp_path: Path) -> Path:
    """A copy of images/sandbox whose locks a test may change."""
    target = tmp_path / "images" / "sandbox"
    shutil.copytree(ROOT / "images" / "sandbox", target)
    return target


def _keys(images: Path) -> dict[str, dict[str, str]]:
    out = {}
    for platform in PLATFORMS:
        found = gather(ROOT, images / "image.toml", tapts=TAPTS, revision="0" * 40, platform=platform)
        out[platform] = plan(found.spec, found.locks, found.sources, found.toolchain).keys()
    return out


def _change_debian_lock(path: Path) -> None:
    data = json.loads(path.read_text())
    data["packages"][0]["sha256"] = "f" * 64
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def _change_wheel_lock(path: Path) -> None:
    text = path.read_text()
    digest = next(line.split("sha256:")[1] for line in text.splitlines() if "--hash=sha256:" in line)
    path.write_text(text.replace(digest, "e" * 64))


def test_the_platforms_have_different_keys_at_every_stage(images: Path) -> None:
    keys = _keys(images)
    for stage, key in keys["linux/amd64"].items():
        assert keys["linux/arm64"][stage] != key, stage


@pytest.mark.parametrize(
    ("changed", "unchanged", "files"),
    [
        ("linux/arm64", "linux/amd64", ("debian.arm64.lock", "requirements.arm64.lock")),
        ("linux/amd64", "linux/arm64", ("debian.lock", "requirements.lock")),
    ],
)
def test_changing_one_platforms_locks_changes_no_key_of_the_other(
    images: Path, changed: str, unchanged: str, files: tuple[str, str]
) -> None:
    before = _keys(images)
    _change_debian_lock(images / files[0])
    _change_wheel_lock(images / files[1])
    after = _keys(images)
    assert after[unchanged] == before[unchanged]
    # ...while every stage of the changed platform that reads those locks has a new key.
    for stage in ("base", "wheels", "tapts", "layers", "oci"):
        assert after[changed][stage] != before[changed][stage], stage


def test_the_arm64_plan_reads_the_arm64_interpreter_and_wheel_tags(images: Path) -> None:
    found = gather(ROOT, images / "image.toml", tapts=TAPTS, revision="0" * 40, platform="linux/arm64")
    built = plan(found.spec, found.locks, found.sources, found.toolchain)
    tags = built.stage("wheels").texts("interpreter_tags")
    assert "manylinux_2_28_aarch64" in tags and not any("x86_64" in tag for tag in tags)
    assert built.stage("base").parameter("architecture") == "arm64"
    assert {p.architecture for p in found.locks.debian.packages} <= {"arm64", "all"}
