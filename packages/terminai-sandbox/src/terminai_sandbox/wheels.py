"""Wheels by hash, installed at their image paths: what the image build and the contract suite share.

Wheels are fetched by hash (reused from a cache when present) and installed with PyPA's
``installer`` into a staging tree at their final image paths, with console scripts for
the image's interpreter. The image build (:mod:`terminai_sandbox.assemble`) and the
contract suite's test layer (:mod:`terminai_sandbox.contracts`) both use these, so the
contract runner needs nothing of the build.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import installer
from installer.destinations import SchemeDictionaryDestination
from installer.exceptions import InvalidWheelSource
from installer.records import RecordEntry
from installer.scripts import Script
from installer.sources import WheelFile
from installer.utils import Scheme

from terminai_sandbox.errors import BuildError, LockError

if TYPE_CHECKING:
    from installer.scripts import ScriptSection

#: The interpreter console scripts name, and the one that byte-compiles: the image's own.
IMAGE_INTERPRETER = "/usr/bin/python3"
#: Console scripts run it isolated (-I): no PYTHON* variable and no working directory or user
#: site on sys.path, so nothing the session's environment or folder holds replaces the toolset.
SCRIPT_SHEBANG = f"#!{IMAGE_INTERPRETER} -I\n".encode()


class _IsolatedScripts(SchemeDictionaryDestination):
    """Console scripts with ``#!/usr/bin/python3 -I``.

    ``installer`` treats an interpreter with a space as a path with a space (a ``/bin/sh``
    wrapper quoting it as one word), so scripts are generated for the bare interpreter and
    the flag is added to their first line; ``#!python`` scripts get it through ``interpreter``.
    """

    def write_script(self, name: str, module: str, attr: str, section: ScriptSection) -> RecordEntry:
        script_name, data = Script(name, module, attr, section).generate(IMAGE_INTERPRETER, self.script_kind)
        first, _, rest = data.partition(b"\n")
        if first != f"#!{IMAGE_INTERPRETER}".encode():
            raise BuildError(f"the console script {name} starts {first[:60]!r}, not #!{IMAGE_INTERPRETER}")
        with io.BytesIO(SCRIPT_SHEBANG + rest) as stream:
            entry = self.write_to_fs(Scheme("scripts"), script_name, stream, is_executable=True)
        path = self._path_with_destdir(Scheme("scripts"), script_name)
        path.chmod(path.stat().st_mode | (path.stat().st_mode & 0o444) >> 2)
        return entry


INSTALLER_TAG = b"terminai-sandbox\n"


def run_tool(cmd: list[str], what: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, check=False)
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr + proc.stdout).splitlines()[-20:])
        raise BuildError(f"{what} failed (exit {proc.returncode}):\n{tail}")


def default_cache() -> Path:
    """The user's cache of terminai-sandbox: build stages, downloaded wheels."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "terminai-sandbox"


def locked_wheels(requirements: Path, cache: Path, target: list[str] | None = None) -> list[Path]:
    """Download (or reuse from ``cache``) every wheel in the lock and check its sha256.
    ``target`` (from ``assemble.python.target_tags``) picks binary wheels for the image's interpreter."""
    wanted: dict[str, str] = {}
    for raw in requirements.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        spec, _, hashpart = line.partition("--hash=sha256:")
        if not hashpart or "==" not in spec:
            raise LockError(f"{requirements}: every line needs NAME==VERSION --hash=sha256:HEX, got {line!r}")
        wanted[spec.strip()] = hashpart.strip()
    cache.mkdir(parents=True, exist_ok=True)
    by_hash = {hashlib.sha256(p.read_bytes()).hexdigest(): p for p in cache.glob("*.whl")}
    missing = [req for req, digest in wanted.items() if digest not in by_hash]
    if missing:
        # pip writes each wheel in place: it downloads into a private directory and the wheels
        # are renamed into the shared cache whole, so a build beside this one never hashes
        # half a file.
        private = Path(tempfile.mkdtemp(prefix=".download-", dir=cache))
        try:
            _download(requirements, private, target)
            for wheel in private.glob("*.whl"):
                os.replace(wheel, cache / wheel.name)
        finally:
            shutil.rmtree(private, ignore_errors=True)
        by_hash = {hashlib.sha256(p.read_bytes()).hexdigest(): p for p in cache.glob("*.whl")}
    out = []
    for req, digest in sorted(wanted.items()):
        if digest not in by_hash:
            raise LockError(f"no wheel with the locked sha256 for {req}", hint="check requirements.lock")
        out.append(by_hash[digest])
    return out


def _download(requirements: Path, into: Path, target: list[str] | None) -> None:
    run_tool(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--only-binary=:all:",
            "--require-hashes",
            "-r",
            str(requirements),
            "-d",
            str(into),
            *(target or []),
        ],
        "downloading locked wheels",
    )


def install(wheels: list[Path], staging: Path, *, site_packages: str, scripts: str = "/usr/local/bin") -> None:
    """Install ``wheels`` into ``staging`` as if ``staging`` were the image's root.

    PyPA's ``installer`` writes each file at its image path, generates console scripts
    for the image's interpreter and writes ``RECORD`` for exactly those bytes, so nothing
    of the host (its interpreter, pip, the checkout path) reaches the layer. Nothing is
    byte-compiled here: :func:`compile_in_image` does that with the image's interpreter.
    """
    destination = _IsolatedScripts(
        scheme_dict={
            "purelib": site_packages,
            "platlib": site_packages,
            "headers": "/usr/local/include",
            "scripts": scripts,
            "data": "/usr/local",
        },
        interpreter=f"{IMAGE_INTERPRETER} -I",
        script_kind="posix",
        bytecode_optimization_levels=(),
        destdir=str(staging),
    )
    for wheel in wheels:
        try:
            with WheelFile.open(wheel) as source:
                source.validate_record()
                installer.install(source, destination, additional_metadata={"INSTALLER": INSTALLER_TAG})
        except (InvalidWheelSource, ValueError, OSError) as exc:
            raise BuildError(f"installing {wheel.name} failed: {exc}") from None
