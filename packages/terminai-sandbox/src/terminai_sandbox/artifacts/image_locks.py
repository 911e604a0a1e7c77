"""The locks an image was built from (``debian.lock``, ``requirements.lock``), read together.

The SBOM adds their sha256 to each component and the provenance records each as a
resolved dependency. A lock that is absent is ``None`` (an image without Python wheels
has no ``requirements.lock``); a lock that is present but malformed is an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from terminai_sandbox.artifacts.debian_lock import DebianLock
from terminai_sandbox.artifacts.wheel_lock import WheelLock

DEBIAN_LOCK = "debian.lock"
WHEEL_LOCK = "requirements.lock"


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageLocks:
    debian: DebianLock | None
    wheels: WheelLock | None

    @classmethod
    def read(cls, image_dir: Path) -> ImageLocks:
        """The locks in ``image_dir`` (``images/sandbox``, or the copies shipped as package data)."""
        deb, req = image_dir / DEBIAN_LOCK, image_dir / WHEEL_LOCK
        return cls(
            debian=DebianLock.load(deb) if deb.exists() else None,
            wheels=WheelLock.load(req) if req.exists() else None,
        )

    @property
    def deb_sha256(self) -> dict[tuple[str, str, str], str]:
        """(name, version, architecture) → sha256 hex of the ``.deb``."""
        packages = self.debian.packages if self.debian is not None else ()
        return {(p.name, p.version, p.architecture): p.sha256 for p in packages}

    @property
    def wheel_sha256(self) -> dict[tuple[str, str], tuple[str, ...]]:
        """(normalised name, version) → sha256 hex digests of its wheels."""
        return dict(self.wheels.pins) if self.wheels is not None else {}
