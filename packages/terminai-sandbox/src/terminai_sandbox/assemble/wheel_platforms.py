"""Per-architecture wheel locks: the primary lock's versions, each architecture's own hashes.

``requirements.lock`` pins the primary architecture's wheels. A pure-Python wheel
(``py3-none-any``) is the same file everywhere, but a binary one (``google-re2``'s
``cp313-manylinux``) is a different file per machine, so every other architecture gets
its own lock (``requirements.arm64.lock``): the same names and versions, the sha256 of the
wheel pip picks for that architecture's interpreter tags. Keeping them apart keeps each
platform's stage keys a function of that platform's inputs only.
"""

from __future__ import annotations

import hashlib
import sys
import tempfile
from pathlib import Path

from terminai_sandbox.artifacts.wheel_lock import WheelLock
from terminai_sandbox.errors import LockError
from terminai_sandbox.wheels import run_tool

HEADER = (
    "# Wheels installed into the {arch} sandbox image: the versions of {primary}, each with the\n"
    "# sha256 of the wheel for {arch}. Written by 'terminai-sandbox lock'; do not edit by hand.\n"
)


def render(pins: dict[tuple[str, str], tuple[str, str]], *, arch: str, primary: str) -> str:
    """The lock text: one ``name==version --hash=sha256:HEX  # wheel file`` line per pin, sorted."""
    lines = [HEADER.format(arch=arch, primary=primary)]
    for (name, version), (digest, filename) in sorted(pins.items()):
        lines.append(f"# {filename}\n{name}=={version} --hash=sha256:{digest}\n")
    return "".join(lines)


def resolve(primary: Path, tags: list[str], *, arch: str) -> str:
    """The wheel lock for ``arch``: every pin of ``primary`` downloaded for ``tags`` (from
    ``python.target_tags``) and hashed. A pin with no wheel for those tags is a LockError."""
    lock = WheelLock.load(primary)
    pins: dict[tuple[str, str], tuple[str, str]] = {}
    with tempfile.TemporaryDirectory(prefix="terminai-wheel-lock-") as tmp:
        for name, version in sorted(lock.pins):
            into = Path(tmp) / f"{name}-{version}"
            run_tool(
                [
                    sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
                    "--no-deps", "--only-binary=:all:", "-d", str(into), *tags, f"{name}=={version}",
                ],
                f"resolving the {arch} wheel of {name}=={version}",
            )  # fmt: skip
            found = sorted(into.glob("*.whl"))
            if len(found) != 1:
                raise LockError(
                    f"pip gave {len(found)} wheels for {name}=={version} on {arch}",
                    hint=f"publish or pick a version with a wheel for {arch}",
                )
            pins[(name, version)] = (hashlib.sha256(found[0].read_bytes()).hexdigest(), found[0].name)
    return render(pins, arch=arch, primary=primary.name)
