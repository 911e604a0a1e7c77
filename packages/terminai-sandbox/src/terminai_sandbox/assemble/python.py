"""Python side of the build: the T-APTS wheel, byte-compiling in the image.

Wheels (checked against their locked sha256) are installed by :mod:`terminai_sandbox.wheels`
into a staging tree at their final image paths. They are then byte-compiled by the image's own interpreter inside an
unpacked copy of the image root, with checked-hash invalidation (so ``.pyc`` files hold
no build path, no timestamp and nothing of the host's Python). The T-APTS wheel is built
from the repository with SOURCE_DATE_EPOCH so its zip is reproducible.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import installer
from installer.destinations import SchemeDictionaryDestination
from installer.exceptions import InvalidWheelSource
from installer.sources import WheelFile

from terminai_sandbox.errors import BuildError, LockError
from terminai_sandbox.wheels import IMAGE_INTERPRETER, INSTALLER_TAG, locked_wheels
from terminai_sandbox.wheels import run_tool as _run


def target_tags(site_packages: str, architecture: str) -> list[str]:
    """pip options that select wheels for the image's interpreter, not the host's:
    the version comes from the image's site-packages path (``.../python3.13/...``)."""
    found = re.search(r"python(\d+)\.(\d+)", site_packages)
    if not found:
        raise LockError(f"cannot tell the image's Python version from {site_packages!r}")
    version = "".join(found.groups())
    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(architecture, architecture)
    platforms = [f"manylinux_2_{minor}_{machine}" for minor in (28, 17)] + [f"manylinux2014_{machine}"]
    return [
        "--python-version", f"{found[1]}.{found[2]}", "--implementation", "cp", "--abi", f"cp{version}",
        *(option for platform in platforms for option in ("--platform", platform)),
    ]  # fmt: skip


def wheel_builder(lock: Path, wheelhouse: Path, where: Path) -> Path:
    """A virtual environment holding only the build backend of ``lock``; returns its python.

    The environment has no pip and no access to the running environment's packages; the
    backend's wheels are checked by sha256 and installed with ``installer``. It is kept in
    ``where`` under a name derived from the lock and the interpreter, and reused.
    """
    key = hashlib.sha256(lock.read_bytes() + sys.version.encode() + sys.executable.encode()).hexdigest()[:24]
    venv = where / f"wheel-builder-{key}"
    python = venv / "bin" / "python"
    if (venv / "terminai-ready").exists():
        return python
    partial = where / f"{venv.name}.partial-{uuid.uuid4().hex}"
    _run([sys.executable, "-m", "venv", "--without-pip", str(partial)], "creating the wheel builder environment")
    paths = json.loads(
        subprocess.run(
            [str(partial / "bin" / "python"), "-c", "import json, sysconfig; print(json.dumps(sysconfig.get_paths()))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    destination = SchemeDictionaryDestination(
        scheme_dict={
            "purelib": paths["purelib"],
            "platlib": paths["platlib"],
            "headers": paths["include"],
            "scripts": paths["scripts"],
            "data": paths["data"],
        },
        interpreter=str(python),
        script_kind="posix",
    )
    try:
        for wheel in locked_wheels(lock, wheelhouse):
            with WheelFile.open(wheel) as source:
                source.validate_record()
                installer.install(source, destination, additional_metadata={"INSTALLER": INSTALLER_TAG})
    except (InvalidWheelSource, ValueError, OSError) as exc:
        shutil.rmtree(partial, ignore_errors=True)
        raise BuildError(f"installing the T-APTS build backend from {lock.name} failed: {exc}") from None
    (partial / "terminai-ready").write_text(lock.read_text())
    try:
        partial.rename(venv)
    except OSError:  # another build finished the same environment first
        shutil.rmtree(partial, ignore_errors=True)
    return python


def build_tapts_wheel(source: Path, out_dir: Path, *, source_date_epoch: int, builder: Path) -> Path:
    """Build the T-APTS wheel reproducibly with the locked backend in ``builder``.

    The PEP 517 hook runs in ``builder`` (see :func:`wheel_builder`) on a clean copy of the
    sources, with SOURCE_DATE_EPOCH fixing the zip timestamps.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    work = out_dir / "src"
    if work.exists():
        shutil.rmtree(work)
    # Build from a clean copy so no stray build/ or egg-info of the checkout leaks in.
    shutil.copytree(
        source,
        work,
        symlinks=False,
        ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "*.pyc", "dist"),
    )
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(out_dir),
        "LC_ALL": "C.UTF-8",
        "SOURCE_DATE_EPOCH": str(source_date_epoch),
        "PYTHONHASHSEED": "0",
        "PYTHONNOUSERSITE": "1",
    }
    hook = "import sys, setuptools.build_meta as backend; backend.build_wheel(sys.argv[1])"
    _run([str(builder), "-c", hook, str(out_dir)], "building the T-APTS wheel", env, cwd=work)
    wheels = sorted(out_dir.glob("terminai_apts-*.whl"))
    if len(wheels) != 1:
        raise BuildError(f"expected one T-APTS wheel in {out_dir}, found {len(wheels)}")
    shutil.rmtree(work)
    return wheels[0]


def compile_in_image(staging: Path, image_root: Path) -> int:
    """Byte-compile the ``.py`` files of ``staging`` with the image's own interpreter.

    ``image_root`` is an unpacked copy of the Debian base; it is left as it was, so one
    unpacked copy serves every build of that base. The staged tree is copied under a
    private directory in the root's ``/tmp``; the image's ``python3`` runs ``compileall``
    inside that root (chroot as root, a user namespace otherwise), one process, sorted
    order, checked-hash, with that private prefix replaced by ``/`` in the recorded file
    names, so every ``.pyc`` is byte for byte what compiling at the final path gives. The
    ``.pyc`` files are copied back next to their sources. Nothing of the host's Python is
    involved. Returns the number of ``.pyc`` files written.
    """
    sources = sorted(p.relative_to(staging) for p in staging.rglob("*.py") if p.is_file())
    if not sources:
        return 0
    private = f"/tmp/terminai-compile-{uuid.uuid4().hex}"
    inside = image_root / private.lstrip("/")
    try:
        shutil.copytree(staging, inside, symlinks=True)
        (inside / "files.list").write_text("".join(f"{private}/{p}\n" for p in sources))
        command = [
            IMAGE_INTERPRETER,
            "-m",
            "compileall",
            "-q",
            "-j",
            "1",
            "--invalidation-mode",
            "checked-hash",
            "-s",
            private,
            "-p",
            "/",
            "-i",
            f"{private}/files.list",
        ]
        # DONTWRITEBYTECODE: the interpreter's own imports must not write into the shared root.
        env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}
        _run([*_enter(image_root), *command], "byte-compiling with the image's interpreter", env)
        written = 0
        for source in sources:
            for pyc in sorted((inside / source.parent / "__pycache__").glob(f"{source.stem}.*.pyc")):
                target = staging / source.parent / "__pycache__" / pyc.name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(pyc, target)
                written += 1
    finally:
        shutil.rmtree(inside, ignore_errors=True)
    if written < len(sources):
        raise BuildError(f"the image's interpreter compiled {written} of {len(sources)} Python files")
    return written


def unpacked_root(tar: Path, diff_id: str, cache: Path | None, work: Path) -> Path:
    """An unpacked copy of the base layer ``tar``: shared in ``cache`` by diff_id, else in ``work``."""
    if cache is None:
        root = work / "image-root"
        unpack(tar, root)
        return root
    root = cache / f"root-{diff_id.removeprefix('sha256:')[:32]}"
    if (root / "usr" / "bin").is_dir():
        return root
    partial = cache / f"{root.name}.partial-{uuid.uuid4().hex}"
    unpack(tar, partial)
    try:
        partial.rename(root)
    except OSError:  # another build finished the same unpack first
        shutil.rmtree(partial, ignore_errors=True)
    return root


def _enter(root: Path) -> list[str]:
    """The command prefix that runs a program with ``root`` as ``/``."""
    # Resolved on the host's PATH: the command itself runs with the image's environment.
    chroot = shutil.which("chroot") or shutil.which("chroot", path="/usr/sbin:/sbin")
    if os.geteuid() == 0 and chroot is not None:
        return [chroot, str(root)]
    unshare = shutil.which("unshare") or shutil.which("unshare", path="/usr/bin:/bin")
    if unshare is None:
        raise BuildError(
            "byte-compiling in the image root needs root or 'unshare' (util-linux)",
            hint="build as root, or install util-linux and allow unprivileged user namespaces",
        )
    return [unshare, "--map-root-user", f"--root={root}"]


def unpack(tar: Path, root: Path) -> None:
    """Unpack a layer tar into ``root`` (GNU tar keeps symlinks, modes and owners)."""
    root.mkdir(parents=True, exist_ok=True)
    _run(["tar", "-xf", str(tar), "-C", str(root), "--numeric-owner"], f"unpacking {tar.name}")
