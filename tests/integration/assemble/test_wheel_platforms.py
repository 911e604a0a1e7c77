"""The committed arm64 wheel lock is what `terminai-sandbox lock` resolves: pip downloads each
pinned version for the arm64 image's tags from the package index and the sha256 is taken of
the file it got; the binary wheel differs from amd64's, the pure one does not."""

from __future__ import annotations

import pytest
from terminai_sandbox.artifacts.wheel_lock import WheelLock
from terminai_sandbox.assemble import python, repo_root, wheel_platforms
from terminai_sandbox.assemble.spec import load_spec

pytestmark = pytest.mark.integration

SPEC = repo_root() / "images" / "sandbox" / "image.toml"


def test_the_committed_arm64_wheel_lock_is_what_lock_resolves() -> None:
    arm64 = load_spec(SPEC).for_platform("linux/arm64")
    tags = python.target_tags(arm64.site_packages, arm64.architecture)
    resolved = wheel_platforms.resolve(arm64.requirements, tags, arch="arm64")
    assert resolved == arm64.wheels_lock.read_text()
    amd64, ours = WheelLock.load(arm64.requirements).pins, WheelLock.parse(resolved).pins
    assert amd64.keys() == ours.keys()
    assert ours[("restrictedpython", "9.0")] == amd64[("restrictedpython", "9.0")]  # py3-none-any
    assert ours[("google-re2", "1.1.20251105")] != amd64[("google-re2", "1.1.20251105")]  # cp313 manylinux
