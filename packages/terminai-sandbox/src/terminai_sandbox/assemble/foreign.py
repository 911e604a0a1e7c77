"""Before building another architecture's image: can this host run its programs?

mmdebstrap runs the foreign packages' maintainer scripts, and the build byte-compiles the
Python layers with the image's own interpreter, so the kernel must hand that
architecture's binaries to qemu-user. That is a binfmt_misc entry (Debian's
qemu-user-static registers ``qemu-aarch64``) which is enabled and has the ``F`` flag: the
interpreter is opened when registered, so it also runs inside the chroot and the
container, where ``/usr/libexec/qemu-binfmt`` does not exist.
"""

from __future__ import annotations

from pathlib import Path

from terminai_sandbox.common.platforms import native_platform
from terminai_sandbox.errors import BuildError

BINFMT = Path("/proc/sys/fs/binfmt_misc")
#: Debian architecture -> the binfmt_misc entry qemu-user-static registers for it.
QEMU_ENTRIES = {"arm64": "qemu-aarch64", "amd64": "qemu-x86_64"}
_HINT = (
    "run 'sudo scripts/ensure-host-tools' (qemu-user-static, binfmt-support), then "
    "'sudo update-binfmts --enable {entry}' (mount binfmt_misc on {binfmt} first if it is empty)"
)


def emulation_problem(architecture: str, binfmt: Path = BINFMT) -> str:
    """Why ``architecture``'s programs cannot run here ('' when they can: natively or by qemu)."""
    if native_platform() == f"linux/{architecture}":
        return ""
    entry = QEMU_ENTRIES.get(architecture)
    if entry is None:
        return f"no emulator is known for {architecture}"
    try:
        text = (binfmt / entry).read_text()
    except OSError:
        return f"{binfmt / entry} is not registered"
    lines = text.splitlines()
    if "enabled" not in lines:
        return f"{binfmt / entry} is disabled"
    flags = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("flags:")), "")
    if "F" not in flags:
        return f"{binfmt / entry} lacks the F flag (flags {flags or 'none'}): it would not run in a chroot"
    return ""


def require_emulation(architecture: str, binfmt: Path = BINFMT) -> None:
    """Refuse to start a build of ``architecture`` this host cannot run (a BuildError with the fix)."""
    problem = emulation_problem(architecture, binfmt)
    if problem:
        raise BuildError(
            f"cannot build linux/{architecture} here: {problem}",
            hint=_HINT.format(entry=QEMU_ENTRIES.get(architecture, "qemu-ARCH"), binfmt=binfmt),
        )
