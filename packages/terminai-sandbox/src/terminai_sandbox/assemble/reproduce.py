"""The reproducibility check: build twice, sharing nothing but the source bytes, and compare.

``check_reproducible`` is what ``terminai-sandbox build --check-reproducible`` runs;
``independent_build`` is also used by the test that builds two clones from two host
Pythons.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from terminai_sandbox import layers
from terminai_sandbox.assemble.image import BuildOptions, BuildResult, Progress, _quiet, build_image, result_from_dict
from terminai_sandbox.assemble.platforms import IndexResult, build_platforms, index_result_from_dict
from terminai_sandbox.errors import BuildError, ReproducibilityError


def check_reproducible(opts: BuildOptions) -> tuple[BuildResult, BuildResult]:
    """Build here, then again fully independently; fail unless both give the same digests.

    The second build shares nothing with the first but the source bytes: a copy of the
    sources at another path, its own virtual environment (its own pip, our packages
    installed from that copy, not editable), cold caches, umask 077, another time zone
    and locale. Both builds read one snapshot of the T-APTS source, so an edit in the
    checkout while the check runs cannot pass for a reproducibility failure.
    """
    with tempfile.TemporaryDirectory(prefix="terminai-repro-src-") as src_tmp:
        source = opts.tapts_source or opts.root / "packages" / "terminai-apts"
        snapshot = Path(src_tmp) / "terminai-apts"
        shutil.copytree(source, snapshot, symlinks=False, ignore=_source_junk)
        first = build_image(dataclasses.replace(opts, tapts_source=snapshot, record_layers=False))
        with tempfile.TemporaryDirectory(prefix="terminai-reproducibility-check-second-build-") as tmp:
            work = Path(tmp)
            tree = copy_sources(opts.root, work / "source-copy", tapts=snapshot)
            spec = opts.spec_path.resolve() if opts.spec_path else None
            data = independent_build(
                tree,
                work,
                python=Path(sys.executable),
                inherit=True,
                revision=first.labels["org.opencontainers.image.revision"],
                spec=spec,
                tag=first.reference,
                progress=opts.progress,
                platforms=(first.platform,),  # the second build makes the same platform, not its default
            )
            second = result_from_dict(data)
            if second.manifest_digest != first.manifest_digest or second.config_digest != first.config_digest:
                raise ReproducibilityError(_explain(first, second))
            return first, second


def check_reproducible_index(opts: BuildOptions, platforms: Sequence[str]) -> tuple[IndexResult, IndexResult]:
    """:func:`check_reproducible` for a multi-platform build: the second, independent build
    must give the same index digest and, platform by platform, the same manifest and config."""
    with tempfile.TemporaryDirectory(prefix="terminai-repro-src-") as src_tmp:
        source = opts.tapts_source or opts.root / "packages" / "terminai-apts"
        snapshot = Path(src_tmp) / "terminai-apts"
        shutil.copytree(source, snapshot, symlinks=False, ignore=_source_junk)
        first = build_platforms(dataclasses.replace(opts, tapts_source=snapshot, record_layers=False), platforms)
        with tempfile.TemporaryDirectory(prefix="terminai-reproducibility-check-second-build-") as tmp:
            work = Path(tmp)
            tree = copy_sources(opts.root, work / "source-copy", tapts=snapshot)
            data = independent_build(
                tree,
                work,
                python=Path(sys.executable),
                inherit=True,
                revision=first.platforms[0].labels["org.opencontainers.image.revision"],
                spec=opts.spec_path.resolve() if opts.spec_path else None,
                tag=first.platforms[0].reference,
                progress=opts.progress,
                platforms=platforms,
            )
            second = index_result_from_dict(data)
            problem = index_difference(first, second)
            if problem:
                raise ReproducibilityError(problem)
            return first, second


def index_difference(first: IndexResult, second: IndexResult) -> str:
    """What differs between two multi-platform builds ('' when nothing): the first platform
    whose manifest or config differs, explained layer by layer, else the index itself."""
    theirs = second.by_platform()
    for mine in first.platforms:
        other = theirs.get(mine.platform)
        if other is None:
            return f"the second build has no {mine.platform} image"
        if other.manifest_digest != mine.manifest_digest or other.config_digest != mine.config_digest:
            return f"{mine.platform}: {_explain(mine, other)}"
    if first.index_digest != second.index_digest:
        return f"the index differs: {first.index_digest} vs {second.index_digest} (same platform manifests)"
    return ""


_JUNK_NAMES = {"__pycache__", ".venv", ".git", ".mypy_cache", ".ruff_cache", ".pytest_cache"}


def _source_junk(directory: str, names: list[str]) -> set[str]:
    """Build outputs and caches of a checkout; ``build/`` only when it is not a Python package."""
    junk = {n for n in names if n in _JUNK_NAMES or n.endswith((".egg-info", ".pyc"))}
    for name in ("build", "dist"):
        if name in names and not (Path(directory) / name / "__init__.py").exists():
            junk.add(name)
    return junk


def copy_sources(root: Path, dest: Path, *, tapts: Path | None = None) -> Path:
    """Copy what a build reads (image inputs, both packages, the contract) to ``dest``."""
    for part in ("images", "packages", "contracts"):
        shutil.copytree(root / part, dest / part, symlinks=False, ignore=_source_junk)
    if tapts is not None:
        shutil.rmtree(dest / "packages" / "terminai-apts")
        shutil.copytree(tapts, dest / "packages" / "terminai-apts", ignore=_source_junk)
    return dest


def independent_build(
    tree: Path,
    work: Path,
    *,
    python: Path,
    inherit: bool,
    revision: str,
    spec: Path | None = None,
    tag: str | None = None,
    requirements: Path | None = None,
    umask: int = 0o077,
    seed_base: Path | None = None,
    progress: Progress = _quiet,
    platforms: Sequence[str] = (),
    seed_bases: Sequence[Path] = (),
) -> dict[str, Any]:
    """Build the sources in ``tree`` from a fresh virtual environment made with ``python``.

    With ``inherit`` the new environment reads third-party libraries from this one
    (same interpreter only); otherwise ``requirements`` (a pinned lock) is installed
    into it. Our two packages are always installed from ``tree``, not editable. The
    build runs with ``umask``, cold caches under ``work``, another time zone and locale.
    ``seed_base`` (a cached Debian base tar) is the one stage it may reuse: the base does
    not read the host's Python or the checkout, and every build checks it against the
    digest recorded in ``layers.lock``, which cold builds prove. ``platforms`` (two or more)
    builds each and their index; ``seed_bases`` seeds one cached base per platform the same
    way (each checked against that platform's ``layers.*.lock``). Returns the build's JSON.
    """
    venv = work / "venv"
    # An inheriting environment gets no pip or setuptools of its own: ensurepip's older
    # setuptools would shadow the pinned one that builds the T-APTS wheel.
    make_venv = [str(python), "-m", "venv", *(["--without-pip"] if inherit else []), str(venv)]
    _run_checked(make_venv, "creating the independent build's virtual environment")
    vpy = venv / "bin" / "python"
    if inherit:
        purelib = sysconfig.get_paths()["purelib"]
        site = subprocess.run(
            [str(vpy), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        # A plain path line: this environment's libraries, but not its editable installs.
        Path(site, "terminai-inherited.pth").write_text(purelib + "\n")
    elif requirements is not None:
        _run_checked(
            [str(vpy), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r", str(requirements)],
            "installing the pinned tools into the independent build's environment",
        )
    _run_checked(
        [
            str(vpy),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "--no-index",
            "--no-build-isolation",
            str(tree / "packages" / "terminai-apts"),
            str(tree / "packages" / "terminai-sandbox"),
        ],
        "installing terminai-sandbox into the independent build's environment",
    )
    command = [str(venv / "bin" / "terminai-sandbox"), "build", "--no-load", "--json"]
    seeds = [path for path in (seed_base, *seed_bases) if path is not None]
    for seed in seeds:
        seeded = work / "cache" / "terminai-sandbox" / seed.name
        seeded.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(seed, seeded)
    if not seeds:
        command.append("--no-cache")
    command += [
        "--output",
        str(work / "out"),
        "--revision",
        revision,
    ]
    if spec is not None:
        command += ["--spec", str(spec)]
    if platforms:
        command += ["--platforms", ",".join(platforms)]
    if tag is not None:
        command += ["--tag", tag]
    home = work / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
        "HOME": str(home),
        "XDG_CACHE_HOME": str(work / "cache"),
        "TZ": "Pacific/Kiritimati",
        "LANG": "C",
        "LC_ALL": "C",
    }
    for name in ("DOCKER_HOST", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_CONFIG_FILE"):
        if name in os.environ:
            env[name] = os.environ[name]
    progress(f"independent build with {python} in {work} (umask {umask:03o})")
    old_umask = os.umask(umask)
    try:
        proc = subprocess.run(command, capture_output=True, text=True, cwd=tree, env=env, check=False)
    finally:
        os.umask(old_umask)
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr + proc.stdout).splitlines()[-20:])
        raise BuildError(f"the independent build failed (exit {proc.returncode}):\n{tail}")
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


def _run_checked(cmd: list[str], what: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr + proc.stdout).splitlines()[-20:])
        raise BuildError(f"{what} failed (exit {proc.returncode}):\n{tail}")


def _explain(first: BuildResult, second: BuildResult) -> str:
    for index, (a, b) in enumerate(zip(first.diff_ids, second.diff_ids, strict=True)):
        if a != b:
            names = ("base", "wheels", "t-apts")
            tar_a = first.archive.parent / "diff-a.tar"
            tar_b = second.archive.parent / "diff-b.tar"
            detail = "?"
            for tar_path, archive in ((tar_a, first.archive), (tar_b, second.archive)):
                member = f"blobs/sha256/{(a if tar_path is tar_a else b).removeprefix('sha256:')}"
                data = layers.read_member(archive, member)
                if data is not None:
                    tar_path.write_bytes(data)
            if tar_a.exists() and tar_b.exists():
                detail = layers.first_difference(tar_a, tar_b) or "?"
            return f"layer {index} ({names[index]}) differs: {a} vs {b}; first difference: {detail}"
    return f"config differs: {first.config_digest} vs {second.config_digest} (labels or metadata)"
