"""``terminai-sandbox lock`` for one platform: its Debian lock and, off the primary
architecture, its wheel lock.

The Debian set is resolved by an unpinned mmdebstrap of that architecture (a foreign one
runs its maintainer scripts under qemu-user through binfmt_misc); the wheels by
:mod:`~terminai_sandbox.assemble.wheel_platforms`. The primary architecture's wheel lock
is the hand-reviewed ``requirements.lock`` and is never rewritten here.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from terminai_sandbox.assemble import debian, python, wheel_platforms
from terminai_sandbox.assemble.foreign import require_emulation
from terminai_sandbox.assemble.spec import PRIMARY_ARCHITECTURE, ImageSpec


@dataclass(frozen=True, slots=True, kw_only=True)
class Locked:
    platform: str
    debian_lock: Path
    packages: int
    source_date_epoch: int
    wheel_lock: Path | None  # written for a non-primary architecture only

    def to_dict(self) -> dict[str, Any]:
        return {
            "lock": str(self.debian_lock),
            "packages": self.packages,
            "source_date_epoch": self.source_date_epoch,
            "wheel_lock": None if self.wheel_lock is None else str(self.wheel_lock),
        }

    def summary(self) -> str:
        wheels = "" if self.wheel_lock is None else f" and {self.wheel_lock}"
        return (
            f"{self.platform}: wrote {self.debian_lock}{wheels}: {self.packages} packages, "
            f"SOURCE_DATE_EPOCH {self.source_date_epoch}"
        )


def lock_platform(spec: ImageSpec, *, log: Callable[[str], None]) -> Locked:
    """Resolve and write the locks of ``spec``'s platform (see :meth:`ImageSpec.for_platform`)."""
    require_emulation(spec.architecture)
    log(f"{spec.platform}: resolving the Debian package set")
    with tempfile.TemporaryDirectory(prefix="terminai-lock-") as tmp:
        collected = debian.run_mmdebstrap(
            spec, Path(tmp) / "rootfs.tar", workdir=Path(tmp), source_date_epoch=None, prefs=None, log=log
        )
        # The collected archive indexes live in the temporary directory: read them before it goes.
        lock = debian.make_lock(spec, collected)
    debian.write_lock(spec.debian_lock, lock)
    wheel_lock = None
    if spec.architecture != PRIMARY_ARCHITECTURE:
        log(f"{spec.platform}: resolving the wheels of {spec.requirements.name}")
        text = wheel_platforms.resolve(
            spec.requirements,
            python.target_tags(spec.site_packages, spec.architecture),
            arch=spec.architecture,
        )
        spec.wheels_lock.write_text(text)
        wheel_lock = spec.wheels_lock
    return Locked(
        platform=spec.platform,
        debian_lock=spec.debian_lock,
        packages=len(lock.packages),
        source_date_epoch=lock.source_date_epoch,
        wheel_lock=wheel_lock,
    )
