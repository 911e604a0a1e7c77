"""Deterministic image build: pinned Debian base, hashed wheels, T-APTS, OCI outputs.

:func:`build_image` runs the stages (each cached by a hash of its inputs) and returns a
:class:`BuildResult`. The same inputs give the same layer diff_ids, config digest and
manifest digest: see :mod:`terminai_sandbox.build.layers` for the rules that make it so.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from terminai_sandbox._version import __version__
from terminai_sandbox.artifacts.contract import LABEL as CONTRACT_LABEL
from terminai_sandbox.artifacts.contract import Contract
from terminai_sandbox.artifacts.debian_lock import DebianLock
from terminai_sandbox.build import debian, layers, oci, python, record
from terminai_sandbox.build.spec import ImageSpec, load_spec
from terminai_sandbox.engine import Engine
from terminai_sandbox.errors import BuildError, ReproducibilityError

#: Bumped whenever a change here changes output bytes for the same inputs.
ASSEMBLER_FORMAT = "2"

Progress = Callable[[str], None]


def _quiet(_message: str) -> None:
    return None


def repo_root() -> Path:
    """The repository checkout this package runs from (editable install)."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "images" / "sandbox" / "image.toml").exists():
            return parent
    return Path.cwd()


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "terminai-sandbox"


@dataclass(frozen=True, slots=True, kw_only=True)
class BuildOptions:
    """What to build and where. Paths default to the repository layout."""

    root: Path = field(default_factory=repo_root)
    spec_path: Path | None = None
    output_dir: Path | None = None
    cache_dir: Path | None = None
    use_cache: bool = True
    tapts_source: Path | None = None
    load: bool = True
    tag: str | None = None
    progress: Progress = _quiet
    #: Write the lock-only layers' digests to layers.lock instead of checking them.
    record_layers: bool = False
    #: The source revision label; by default ``git rev-parse HEAD`` of ``root``.
    revision: str | None = None

    def resolved_spec(self) -> Path:
        return self.spec_path or self.root / "images" / "sandbox" / "image.toml"


@dataclass(frozen=True, slots=True, kw_only=True)
class BuildResult:
    """What a build produced. ``config_digest`` is also the engine's image id."""

    reference: str
    config_digest: str
    manifest_digest: str
    oci_layout: Path
    archive: Path
    output_dir: Path
    source_date_epoch: int
    labels: dict[str, str]
    diff_ids: tuple[str, ...]
    uncompressed_size: int
    compressed_size: int
    seconds: float
    loaded: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "reference": self.reference,
            "config_digest": self.config_digest,
            "manifest_digest": self.manifest_digest,
            "oci_layout": str(self.oci_layout),
            "archive": str(self.archive),
            "source_date_epoch": self.source_date_epoch,
            "labels": self.labels,
            "diff_ids": list(self.diff_ids),
            "uncompressed_size": self.uncompressed_size,
            "compressed_size": self.compressed_size,
            "seconds": round(self.seconds, 2),
            "loaded": self.loaded,
        }


def _key(*parts: Any) -> str:
    return hashlib.sha256(json.dumps([ASSEMBLER_FORMAT, *parts], sort_keys=True, default=str).encode()).hexdigest()[:32]


def _revision(root: Path) -> str:
    proc = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else "unknown"


def _contract_version(root: Path, tapts: Path) -> str:
    for candidate in (
        tapts / "src" / "terminai_apts" / "contract.json",
        root / "contracts" / "t-apts" / "contract.json",
    ):
        if candidate.exists():
            return Contract.load(candidate).version
    raise BuildError("no contract manifest found (contracts/t-apts/contract.json)")


#: Debian's maintainer scripts byte-compile the Python modules they install in parallel
#: batches; marshal output depends on what the compiling process saw before (reference
#: counts decide its FLAG_REF bits), so the same lock gave different .pyc bytes from run to
#: run. The image's python3 recompiles exactly those files again, one process, sorted order,
#: fixed hash seed: measured identical across runs and hosts.
RECOMPILE_HOOK = (
    'find "$1/usr" -path "*/__pycache__/*.pyc" | LC_ALL=C sort | '
    'sed -e "s#^$1##" -e "s#/__pycache__/\\([^/]*\\)\\.cpython-[0-9]*\\.pyc\\$#/\\1.py#" '
    '> "$1/tmp/terminai-pyc.list" && if [ -s "$1/tmp/terminai-pyc.list" ]; then '
    'PYTHONHASHSEED=0 chroot "$1" /usr/bin/python3 -m compileall -q -f -j 1 '
    "--invalidation-mode checked-hash -i /tmp/terminai-pyc.list; fi"
)


def _user_hooks(spec: ImageSpec, sde: int) -> tuple[str, ...]:
    days = sde // 86400
    u, g, home = spec.uid, spec.gid, spec.home
    return (
        f"echo '{spec.user}:x:{u}:{g}::{home}:/bin/sh' >> \"$1/etc/passwd\" && "
        f"echo '{spec.user}:x:{g}:' >> \"$1/etc/group\" && "
        f"echo '{spec.user}:*:{days}:0:99999:7:::' >> \"$1/etc/shadow\" && "
        f"echo '{spec.user}:!::' >> \"$1/etc/gshadow\" && "
        f'mkdir -p "$1{home}" "$1{spec.workdir}" && chown {u}:{g} "$1{home}" "$1{spec.workdir}"',
        RECOMPILE_HOOK,
        # Scrub what differs between builds or leaks the build host.
        'rm -rf "$1"/var/log/* "$1"/var/cache/ldconfig/aux-cache "$1"/var/cache/apt/*.bin '
        '"$1"/var/cache/debconf/*-old "$1"/var/lib/dpkg/*-old "$1"/tmp/* "$1"/var/tmp/* '
        '"$1"/var/lib/dbus/machine-id && : > "$1/etc/machine-id" && echo sandbox > "$1/etc/hostname" && '
        ': > "$1/etc/resolv.conf"',
    )


def _base_key(spec: ImageSpec, lock: DebianLock) -> str:
    """Everything the Debian base is built from: the lock and the image.toml fields it reads."""
    return _key(
        "base",
        lock.to_dict(),  # the document as read, so the key is the one layers.lock records
        _user_hooks(spec, lock.source_date_epoch),
        spec.variant,
        spec.packages,
        spec.mirrors,
        spec.path_exclude,
        spec.path_include,
        spec.user,
        spec.uid,
        spec.gid,
        spec.home,
        spec.workdir,
    )


def _base_layer(spec: ImageSpec, lock: DebianLock, cache: Path, opts: BuildOptions, work: Path) -> layers.Layer:
    sde = lock.source_date_epoch
    key = _base_key(spec, lock)
    cached = cache / f"base-{key}.tar"
    if opts.use_cache and cached.exists():
        opts.progress(f"base: cached ({cached.stat().st_size / 1e6:.1f} MB)")
        return layers.Layer(tar=cached, diff_id=layers.sha256_file(cached), size=cached.stat().st_size)
    raw = work / "rootfs.tar"
    collected = debian.run_mmdebstrap(
        spec,
        raw,
        workdir=work / "mm",
        source_date_epoch=sde,
        prefs=debian.preferences(lock),
        extra_hooks=_user_hooks(spec, sde),
        log=opts.progress,
    )
    debian.verify_against_lock(lock, collected)
    opts.progress(f"base: installed set equals debian.lock ({len(lock.packages)} packages)")
    out = work / "base.tar"
    layer = layers.normalise_tar(raw, out, source_date_epoch=sde)
    raw.unlink()
    if opts.use_cache:
        cache.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(".tmp")
        shutil.move(out, tmp)
        os.replace(tmp, cached)
        return layers.Layer(tar=cached, diff_id=layer.diff_id, size=layer.size)
    return layer


def _wheels_key(spec: ImageSpec, sde: int, base: layers.Layer) -> str:
    """The wheels layer's inputs: the wheel lock, where it goes, and the base that compiles it."""
    return _key("wheels", spec.requirements.read_text(), spec.site_packages, sde, base.diff_id)


def _wheels_layer(
    spec: ImageSpec, sde: int, base: layers.Layer, image_root: Path, cache: Path, opts: BuildOptions, work: Path
) -> layers.Layer:
    key = _wheels_key(spec, sde, base)
    cached = cache / f"wheels-{key}.tar"
    if opts.use_cache and cached.exists():
        opts.progress("wheels: cached")
        return layers.Layer(tar=cached, diff_id=layers.sha256_file(cached), size=cached.stat().st_size)
    staging = work / "wheels-root"
    wheels = python.locked_wheels(
        spec.requirements,
        (cache if opts.use_cache else work) / "wheelhouse",
        python.target_tags(spec.site_packages, spec.architecture),
    )
    python.install(wheels, staging, site_packages=spec.site_packages)
    compiled = python.compile_in_image(staging, image_root)
    out = work / "wheels.tar"
    layer = layers.write_layer(staging, out, source_date_epoch=sde)
    opts.progress(f"wheels: {len(wheels)} wheel(s) installed by hash, {compiled} .pyc by the image's python3")
    if opts.use_cache:
        cache.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(out, cached)
    return layer


def _tapts_layer(
    spec: ImageSpec, sde: int, tapts: Path, image_root: Path, cache: Path, work: Path, opts: BuildOptions
) -> layers.Layer:
    staging = work / "tapts-root"
    where = cache if opts.use_cache else work
    where.mkdir(parents=True, exist_ok=True)
    builder = python.wheel_builder(spec.build_requirements, where / "wheelhouse", where)
    wheel = python.build_tapts_wheel(tapts, work / "tapts-wheel", source_date_epoch=sde, builder=builder)
    python.install([wheel], staging, site_packages=spec.site_packages)
    python.compile_in_image(staging, image_root)
    bin_dir = staging / "usr" / "local" / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    entry = bin_dir / "terminai-entrypoint"
    shutil.copyfile(spec.entrypoint_script, entry)
    entry.chmod(0o755)
    out = work / "tapts.tar"
    layer = layers.write_layer(staging, out, source_date_epoch=sde)
    opts.progress(f"t-apts: {wheel.name}")
    return layer


def _compressed(layer: layers.Layer, cache: Path, work: Path, use_cache: bool) -> layers.Layer:
    name = f"gz-{layer.diff_id.removeprefix('sha256:')}.tar.gz"
    target = (cache if use_cache else work) / name
    if use_cache and target.exists():
        return layers.Layer(
            tar=layer.tar,
            diff_id=layer.diff_id,
            size=layer.size,
            gzip=target,
            digest=layers.sha256_file(target),
            gzip_size=target.stat().st_size,
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    return layers.compress(layer, target)


def build_image(opts: BuildOptions | None = None) -> BuildResult:
    """Build the sandbox image; return digests and where the outputs are."""
    opts = opts or BuildOptions()
    started = time.monotonic()
    spec = load_spec(opts.resolved_spec())
    lock = debian.read_lock(spec.debian_lock)
    sde = lock.source_date_epoch
    tapts = opts.tapts_source or opts.root / "packages" / "terminai-apts"
    cache = opts.cache_dir or default_cache()
    output = opts.output_dir or opts.root / "dist" / __version__
    reference = opts.tag or f"{spec.repository}:{__version__}"
    output.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="terminai-build-", dir=output) as tmp:
        work = Path(tmp)
        stage = time.monotonic()
        base = _base_layer(spec, lock, cache, opts, work)
        opts.progress(f"base layer {base.size / 1e6:.1f} MB in {time.monotonic() - stage:.1f} s")
        stage = time.monotonic()
        # The image's own python3 byte-compiles the Python layers inside a copy of the base.
        image_root = python.unpacked_root(base.tar, base.diff_id, cache if opts.use_cache else None, work)
        wheels = _wheels_layer(spec, sde, base, image_root, cache, opts, work)
        tapts_layer = _tapts_layer(spec, sde, tapts, image_root, cache, work, opts)
        opts.progress(f"python layers in {time.monotonic() - stage:.1f} s")
        _check_recorded(
            spec,
            opts,
            {"base": (_base_key(spec, lock), base), "wheels": (_wheels_key(spec, sde, base), wheels)},
        )
        stage = time.monotonic()
        packed = [_compressed(layer, cache / "blobs", work, opts.use_cache) for layer in (base, wheels, tapts_layer)]
        opts.progress(f"compressed in {time.monotonic() - stage:.1f} s")
        labels = dict(spec.labels)
        labels.update(
            {
                "org.opencontainers.image.version": __version__,
                "org.opencontainers.image.revision": opts.revision or _revision(opts.root),
                "org.opencontainers.image.source": spec.source,
                "org.opencontainers.image.created": oci.iso(sde),
                "org.opencontainers.image.ref.name": reference,
                CONTRACT_LABEL: _contract_version(opts.root, tapts),
                "dev.terminai.assembler-format": ASSEMBLER_FORMAT,
            }
        )
        history = [
            f"debian {spec.suite} {spec.variant} + {', '.join(spec.packages)} pinned to debian.lock",
            "wheels from requirements.lock (by sha256)",
            f"terminai-apts {__version__} + contract + entrypoint",
        ]
        config = oci.make_config(
            layers=packed,
            history=history,
            user=f"{spec.uid}:{spec.gid}",
            env=spec.env,
            entrypoint=spec.entrypoint,
            cmd=spec.cmd,
            workdir=spec.workdir,
            labels=labels,
            source_date_epoch=sde,
            architecture=spec.architecture,
        )
        annotations = {k: v for k, v in labels.items() if k.startswith("org.opencontainers.") or k == CONTRACT_LABEL}
        manifest = oci.make_manifest(config, packed, annotations)
        layout = output / "oci"
        manifest_digest = oci.write_oci_layout(
            layout, config=config, manifest=manifest, layers=packed, ref_name=__version__
        )
        archive = output / "image.tar"
        oci.write_docker_archive(archive, config=config, layers=packed, repo_tag=reference, source_date_epoch=sde)
        (output / "build.json").write_text(json.dumps({"diff_ids": [p.diff_id for p in packed]}) + "\n")
    config_digest = oci.digest_of(config)
    loaded = False
    if opts.load:
        stage = time.monotonic()
        engine = Engine.connect()
        with archive.open("rb") as handle:
            engine.client.images.load(handle.read())
        image = engine.client.images.get(reference)
        if image.id != config_digest:
            raise BuildError(
                f"the engine loaded {reference} as {image.id}, but the assembled config is {config_digest}",
                hint="another image may hold this tag; remove it and build again",
            )
        loaded = True
        opts.progress(f"loaded into {engine.info.name} {engine.info.version} in {time.monotonic() - stage:.1f} s")
    return BuildResult(
        reference=reference,
        config_digest=config_digest,
        manifest_digest=manifest_digest,
        oci_layout=layout,
        archive=archive,
        output_dir=output,
        source_date_epoch=sde,
        labels=labels,
        diff_ids=tuple(p.diff_id for p in packed),
        uncompressed_size=sum(p.size for p in packed),
        compressed_size=sum(p.gzip_size or 0 for p in packed),
        seconds=time.monotonic() - started,
        loaded=loaded,
    )


def cached_base(opts: BuildOptions) -> Path:
    """Where ``build_image`` caches the Debian base for ``opts`` (it may not exist yet)."""
    spec = load_spec(opts.resolved_spec())
    lock = debian.read_lock(spec.debian_lock)
    return (opts.cache_dir or default_cache()) / f"base-{_base_key(spec, lock)}.tar"


def lock_only_inputs(opts: BuildOptions, base_diff_id: str) -> dict[str, str]:
    """The input hashes ``layers.lock`` must carry for the current locks and ``image.toml``."""
    spec = load_spec(opts.resolved_spec())
    lock = debian.read_lock(spec.debian_lock)
    sde = lock.source_date_epoch
    base = layers.Layer(tar=Path(), diff_id=base_diff_id, size=0)
    return {"base": _base_key(spec, lock), "wheels": _wheels_key(spec, sde, base)}


def _check_recorded(spec: ImageSpec, opts: BuildOptions, built: dict[str, tuple[str, layers.Layer]]) -> None:
    """Compare the lock-only layers with ``layers.lock`` (or rewrite it with ``record_layers``)."""
    path = spec.directory / record.RECORD_NAME
    if opts.record_layers:
        record.write(path, {name: record.expected(key, layer.diff_id, layer.tar) for name, (key, layer) in built.items()})
        opts.progress(f"recorded the digests of {', '.join(sorted(built))} in {path}")
        return
    recorded = record.read(path)
    for name, (key, layer) in built.items():
        record.check(name, path, recorded.get(name), key, layer.diff_id, layer.tar)
    opts.progress(f"{', '.join(sorted(built))}: the digests recorded in {path.name} match")


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
            )
            second = result_from_dict(data)
            if second.manifest_digest != first.manifest_digest or second.config_digest != first.config_digest:
                raise ReproducibilityError(_explain(first, second))
            return first, second


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
) -> dict[str, Any]:
    """Build the sources in ``tree`` from a fresh virtual environment made with ``python``.

    With ``inherit`` the new environment reads third-party libraries from this one
    (same interpreter only); otherwise ``requirements`` (a pinned lock) is installed
    into it. Our two packages are always installed from ``tree``, not editable. The
    build runs with ``umask``, cold caches under ``work``, another time zone and locale.
    ``seed_base`` (a cached Debian base tar) is the one stage it may reuse: the base does
    not read the host's Python or the checkout, and every build checks it against the
    digest recorded in ``layers.lock``, which cold builds prove. Returns the build's JSON.
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
    if seed_base is not None:
        seeded = work / "cache" / "terminai-sandbox" / seed_base.name
        seeded.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(seed_base, seeded)
    else:
        command.append("--no-cache")
    command += [
        "--output",
        str(work / "out"),
        "--revision",
        revision,
    ]
    if spec is not None:
        command += ["--spec", str(spec)]
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


def result_from_dict(data: dict[str, Any]) -> BuildResult:
    """The :class:`BuildResult` that ``build --json`` printed."""
    return BuildResult(
        reference=data["reference"],
        config_digest=data["config_digest"],
        manifest_digest=data["manifest_digest"],
        oci_layout=Path(data["oci_layout"]),
        archive=Path(data["archive"]),
        output_dir=Path(data["archive"]).parent,
        source_date_epoch=int(data["source_date_epoch"]),
        labels=dict(data["labels"]),
        diff_ids=tuple(data["diff_ids"]),
        uncompressed_size=int(data["uncompressed_size"]),
        compressed_size=int(data["compressed_size"]),
        seconds=float(data["seconds"]),
        loaded=bool(data["loaded"]),
    )


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
