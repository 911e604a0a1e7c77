"""Python side of the build: wheels fetched by hash, the T-APTS wheel, staged installs.

Wheels are installed with ``--no-index --no-deps --require-hashes --no-compile`` into a
staging tree at their final image path, then byte-compiled there with checked-hash
invalidation (so ``.pyc`` files hold no build path and no timestamp). The T-APTS wheel is
built from the repository with SOURCE_DATE_EPOCH so its zip is reproducible.
"""

from __future__ import annotations

import compileall
import hashlib
import os
import py_compile
import shutil
import subprocess
import sys
from pathlib import Path

from terminai_sandbox.errors import BuildError, LockError


def _run(cmd: list[str], what: str, env: dict[str, str] | None = None) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr + proc.stdout).splitlines()[-20:])
        raise BuildError(f"{what} failed (exit {proc.returncode}):\n{tail}")


def locked_wheels(requirements: Path, cache: Path) -> list[Path]:
    """Download (or reuse from ``cache``) every wheel in the lock and check its sha256."""
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
        _run(
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
                str(cache),
            ],
            "downloading locked wheels",
        )
        by_hash = {hashlib.sha256(p.read_bytes()).hexdigest(): p for p in cache.glob("*.whl")}
    out = []
    for req, digest in sorted(wanted.items()):
        if digest not in by_hash:
            raise LockError(f"no wheel with the locked sha256 for {req}", hint="check requirements.lock")
        out.append(by_hash[digest])
    return out


def build_tapts_wheel(source: Path, out_dir: Path, *, source_date_epoch: int) -> Path:
    """Build the T-APTS wheel reproducibly (fixed zip timestamps from SOURCE_DATE_EPOCH)."""
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
    env = {**os.environ, "SOURCE_DATE_EPOCH": str(source_date_epoch), "PYTHONHASHSEED": "0"}
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out_dir),
            str(work),
        ],
        "building the T-APTS wheel",
        env,
    )
    wheels = sorted(out_dir.glob("terminai_apts-*.whl"))
    if len(wheels) != 1:
        raise BuildError(f"expected one T-APTS wheel in {out_dir}, found {len(wheels)}")
    shutil.rmtree(work)
    return wheels[0]


def install(wheels: list[Path], staging: Path, *, site_packages: str, hashes_required: bool) -> None:
    """Install ``wheels`` into ``staging`` + ``site_packages`` and byte-compile them there."""
    target = staging / site_packages.lstrip("/")
    target.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-index",
        "--no-deps",
        "--no-compile",
        "--disable-pip-version-check",
        "--no-warn-script-location",
        "--target",
        str(target),
    ]
    if hashes_required:
        req = staging.parent / f"{staging.name}.requirements.txt"
        req.write_text("".join(f"{w} --hash=sha256:{hashlib.sha256(w.read_bytes()).hexdigest()}\n" for w in wheels))
        cmd += ["--require-hashes", "-r", str(req)]
    else:
        cmd += [str(w) for w in wheels]
    _run(cmd, "installing wheels")
    bin_dir = target / "bin"
    if bin_dir.exists():
        dest = staging / "usr" / "local" / "bin"
        dest.mkdir(parents=True, exist_ok=True)
        for script in sorted(bin_dir.iterdir()):
            text = script.read_bytes()
            if text.startswith(b"#!"):
                text = b"#!/usr/bin/python3\n" + text.split(b"\n", 1)[1]
            (dest / script.name).write_bytes(text)
            (dest / script.name).chmod(0o755)
        shutil.rmtree(bin_dir)
    # direct_url.json records where the wheel file was (a build path): drop it and its RECORD line.
    for junk in target.glob("*.dist-info/direct_url.json"):
        junk.unlink()
        record = junk.parent / "RECORD"
        lines = [line for line in record.read_text().splitlines() if "/direct_url.json," not in line]
        record.write_text("\n".join(lines) + "\n")
    _compile(target, site_packages)


def _compile(target: Path, site_packages: str) -> None:
    ok = compileall.compile_dir(
        str(target),
        quiet=1,
        ddir=site_packages,
        workers=1,
        invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH,
    )
    if not ok:
        raise BuildError(f"byte-compiling {site_packages} failed")
