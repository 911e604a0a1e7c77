"""Gather the planner's inputs: the one place the build reads the checkout, git and the host.

:func:`gather` reads ``image.toml`` and the locks, digests the sources the image is made
of, asks git for the revision and the running interpreter for its version, and returns
them as plain values for the pure :func:`~terminai_sandbox.assemble.plan.plan`.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from terminai_sandbox import wheels
from terminai_sandbox._version import __version__
from terminai_sandbox.artifacts.contract import Contract
from terminai_sandbox.artifacts.debian_lock import DebianLock
from terminai_sandbox.artifacts.wheel_lock import WheelLock
from terminai_sandbox.assemble import debian, python
from terminai_sandbox.assemble.plan import ASSEMBLER_FORMAT, FileDigest, ImageInterpreter, Locks, Sources, Toolchain
from terminai_sandbox.assemble.spec import ImageSpec, load_spec
from terminai_sandbox.common.files import read_regular
from terminai_sandbox.common.platforms import native_platform
from terminai_sandbox.errors import BuildError, LockError

#: What a copy of the T-APTS sources leaves out (the wheel is built from such a copy).
TAPTS_IGNORED = ("build", "*.egg-info", "__pycache__", "*.pyc", "dist")


def repo_root() -> Path:
    """The repository checkout this package runs from (editable install), else the working directory."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "images" / "sandbox" / "image.toml").exists():
            return parent
    return Path.cwd()


def default_platform(spec: ImageSpec) -> str:
    """What a build without ``--platforms`` makes: the host's own platform when image.toml
    declares it (no emulation, the image this host runs), else the first declared one."""
    native = native_platform()
    return native if native in spec.declared else spec.declared[0]


def git_revision(root: Path) -> str:
    proc = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else "unknown"


def contract_version(root: Path, tapts: Path) -> str:
    for candidate in (
        tapts / "src" / "terminai_apts" / "contract.json",
        root / "contracts" / "t-apts" / "contract.json",
    ):
        if candidate.exists():
            return Contract.load(candidate).version
    raise BuildError("no contract manifest found (contracts/t-apts/contract.json)")


def file_digest(path: Path, name: str) -> FileDigest:
    try:
        return FileDigest(path=name, sha256=hashlib.sha256(read_regular(path)).hexdigest())
    except OSError as exc:
        raise BuildError(f"cannot read {path}: {exc.strerror}", hint="restore it from the checkout") from None


def _ignored(name: str) -> bool:
    return any(Path(name).match(pattern) for pattern in TAPTS_IGNORED)


def tree_digest(root: Path) -> str:
    """sha256 over the files a T-APTS wheel is built from: relative path, executable bit, content."""
    digest = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        dirnames[:] = sorted(d for d in dirnames if not _ignored(d))
        for name in sorted(filenames):
            if _ignored(name):
                continue
            full = Path(dirpath) / name
            relative = full.relative_to(root).as_posix()
            executable = "x" if os.access(full, os.X_OK) else "-"
            digest.update(f"{relative}\0{executable}\0".encode())
            digest.update(hashlib.sha256(full.read_bytes()).digest())
    return digest.hexdigest()


def image_interpreter(spec: ImageSpec, lock: DebianLock) -> ImageInterpreter:
    """The image's python3: the Debian package that provides it (from the lock) and its wheel tags."""
    found = re.search(r"python(\d+\.\d+)", spec.site_packages)
    if not found:
        raise LockError(f"cannot tell the image's Python version from {spec.site_packages!r}")
    name = f"python{found[1]}"
    versions = [p.version for p in lock.packages if p.name == name]
    if len(versions) != 1:
        raise LockError(
            f"{spec.debian_lock} locks no single {name} package, but image.toml installs into {spec.site_packages}",
            hint="relock with 'terminai-sandbox lock' or correct python.site_packages",
        )
    return ImageInterpreter(
        path=wheels.IMAGE_INTERPRETER,
        package=f"{name}={versions[0]}",
        tags=tuple(python.target_tags(spec.site_packages, spec.architecture)),
    )


def _pinning(path: Path) -> WheelLock:
    """The wheel lock at ``path``, which must pin something: the image's toolset and the
    wheel's build backend both need wheels, so an empty (or all-comment) lock is a mistake,
    not an image without Python."""
    lock = WheelLock.load(path)
    if not lock.pins:
        raise LockError(f"the wheel lock {path} pins no wheel", hint="restore it from the checkout (it is never empty)")
    return lock


@dataclass(frozen=True, slots=True, kw_only=True)
class Gathered:
    spec: ImageSpec
    locks: Locks
    sources: Sources
    toolchain: Toolchain
    tapts: Path  # the T-APTS source tree the plan's digest was taken of


def _repo_name(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.name


def gather(
    root: Path,
    spec_path: Path | None = None,
    *,
    tapts: Path | None = None,
    revision: str | None = None,
    platform: str | None = None,
) -> Gathered:
    """Read everything the plan of one platform needs from the checkout at ``root`` (and the
    running interpreter): that platform's locks only (default: :func:`default_platform`)."""
    spec = load_spec(spec_path or root / "images" / "sandbox" / "image.toml")
    spec = spec.for_platform(platform or default_platform(spec))
    tapts = tapts or root / "packages" / "terminai-apts"
    lock = debian.read_lock(spec.debian_lock)
    locks = Locks(
        debian=lock,
        debian_file=file_digest(spec.debian_lock, _repo_name(spec.debian_lock, root)),
        wheels=_pinning(spec.wheels_lock),
        wheels_file=file_digest(spec.wheels_lock, _repo_name(spec.wheels_lock, root)),
        backend=_pinning(spec.build_requirements),
        backend_file=file_digest(spec.build_requirements, _repo_name(spec.build_requirements, root)),
    )
    sources = Sources(
        image_spec=file_digest(spec.directory / "image.toml", _repo_name(spec.directory / "image.toml", root)),
        entrypoint=file_digest(spec.entrypoint_script, _repo_name(spec.entrypoint_script, root)),
        tapts=FileDigest(path="packages/terminai-apts", sha256=tree_digest(tapts)),
        contract_version=contract_version(root, tapts),
        revision=revision or git_revision(root),
    )
    toolchain = Toolchain(
        assembler_format=ASSEMBLER_FORMAT,
        sandbox_version=__version__,
        builder_python=sys.version.split()[0],
        image_interpreter=image_interpreter(spec, lock),
    )
    return Gathered(spec=spec, locks=locks, sources=sources, toolchain=toolchain, tapts=tapts)
