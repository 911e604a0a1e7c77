"""image.toml declares the platforms; each platform has its own locks; the old key is refused."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from terminai_sandbox.assemble import repo_root
from terminai_sandbox.assemble.spec import PLATFORMS, load_spec
from terminai_sandbox.errors import ConfigError

SPEC = repo_root() / "images" / "sandbox" / "image.toml"


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "image.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_image_declares_amd64_and_arm64() -> None:
    spec = load_spec(SPEC)
    assert spec.platforms == ("linux/amd64", "linux/arm64")
    assert spec.architecture == "amd64"  # the first declared platform's


def test_each_architecture_reads_its_own_locks() -> None:
    spec = load_spec(SPEC)
    amd64, arm64 = spec.for_platform("linux/amd64"), spec.for_platform("linux/arm64")
    directory = SPEC.parent
    # amd64 keeps the names every earlier release had, so its inputs did not change.
    assert (amd64.debian_lock, amd64.wheels_lock, amd64.layers_record) == (
        directory / "debian.lock",
        directory / "requirements.lock",
        directory / "layers.lock",
    )
    assert (arm64.debian_lock, arm64.wheels_lock, arm64.layers_record) == (
        directory / "debian.arm64.lock",
        directory / "requirements.arm64.lock",
        directory / "layers.arm64.lock",
    )
    assert arm64.architecture == "arm64" and arm64.platform == "linux/arm64"
    # Going back and forth lands on the same files.
    assert arm64.for_platform("linux/amd64") == amd64
    assert amd64.for_platform("linux/arm64").for_platform("linux/arm64") == arm64


def test_the_locks_of_every_declared_platform_are_in_the_checkout() -> None:
    spec = load_spec(SPEC)
    for platform in spec.platforms:
        one = spec.for_platform(platform)
        for path in (one.debian_lock, one.wheels_lock, one.layers_record):
            assert path.is_file(), f"{platform}: {path} is missing"


def test_the_old_architecture_key_is_refused_with_the_new_spelling(tmp_path: Path) -> None:
    text = SPEC.read_text(encoding="utf-8").replace('suite = "trixie"', 'suite = "trixie"\narchitecture = "amd64"')
    with pytest.raises(ConfigError) as caught:
        load_spec(_write(tmp_path, text))
    assert "debian.architecture was replaced by image.platforms" in caught.value.message
    assert 'platforms = ["linux/amd64"]' in (caught.value.hint or "")


@pytest.mark.parametrize(
    "value",
    ['["linux/sparc64"]', '["arm64"]', "[]", '["linux/amd64", "linux/amd64"]', '"linux/amd64"'],
)
def test_a_platform_list_the_build_cannot_honour_is_refused(tmp_path: Path, value: str) -> None:
    text = SPEC.read_text(encoding="utf-8")
    data = tomllib.loads(text)
    assert data["image"]["platforms"]
    text = text.replace('platforms = ["linux/amd64", "linux/arm64"]', f"platforms = {value}")
    with pytest.raises(ConfigError) as caught:
        load_spec(_write(tmp_path, text))
    assert "image.platforms" in caught.value.message


def test_selecting_platforms_keeps_the_declared_order_and_refuses_undeclared_ones(tmp_path: Path) -> None:
    spec = load_spec(SPEC)
    assert spec.select("linux/arm64,linux/amd64") == ("linux/amd64", "linux/arm64")
    assert spec.select(None) == spec.platforms
    assert spec.select(" linux/arm64 ") == ("linux/arm64",)
    with pytest.raises(ConfigError, match="unknown platform"):
        spec.select("linux/riscv64")
    with pytest.raises(ConfigError, match="names no platform"):
        spec.select(",")
    only = load_spec(_write(tmp_path, SPEC.read_text().replace('["linux/amd64", "linux/arm64"]', '["linux/amd64"]')))
    with pytest.raises(ConfigError, match="does not declare the platform linux/arm64") as caught:
        only.select("linux/arm64")
    assert "add linux/arm64 to [image] platforms" in (caught.value.hint or "")
    assert set(PLATFORMS) == {"linux/amd64", "linux/arm64"}


def test_a_spec_whose_first_platform_is_arm64_reads_the_arm64_locks(tmp_path: Path) -> None:
    text = SPEC.read_text().replace('["linux/amd64", "linux/arm64"]', '["linux/arm64", "linux/amd64"]')
    spec = load_spec(_write(tmp_path, text))
    assert spec.architecture == "arm64"
    assert (spec.debian_lock.name, spec.wheels_lock.name, spec.layers_record.name) == (
        "debian.arm64.lock",
        "requirements.arm64.lock",
        "layers.arm64.lock",
    )
    assert spec.for_platform("linux/amd64").wheels_lock.name == "requirements.lock"
