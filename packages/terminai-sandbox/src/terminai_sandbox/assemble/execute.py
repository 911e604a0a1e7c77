"""Run a :class:`~terminai_sandbox.assemble.plan.BuildPlan` against the stage cache.

:func:`build_layers` produces the three filesystem layers (a stage whose key is in the
cache is not run again) and :func:`package` compresses them and writes the two on-disk
forms of the image (an OCI layout and a docker archive). Nothing here decides what goes
into a stage: the plan did; this module only carries it out.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from terminai_sandbox import layers, wheels
from terminai_sandbox.artifacts.contract import LABEL as CONTRACT_LABEL
from terminai_sandbox.artifacts.oci_layout import OciLayout
from terminai_sandbox.assemble import debian, oci, python
from terminai_sandbox.assemble.cache import StageCache
from terminai_sandbox.assemble.plan import BuildPlan, Stage

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class Built:
    """The uncompressed layers of a plan and which stages the cache served."""

    base: layers.Layer
    wheels: layers.Layer
    tapts: layers.Layer
    cached: tuple[str, ...]

    def ordered(self) -> tuple[layers.Layer, ...]:
        return (self.base, self.wheels, self.tapts)


@dataclass(frozen=True, slots=True, kw_only=True)
class Packaged:
    layers: tuple[layers.Layer, ...]  # compressed, in image order
    config: bytes
    manifest_digest: str
    oci_layout: OciLayout
    archive: Path


def _from_cache(entry: Path) -> layers.Layer:
    return layers.Layer(tar=entry, diff_id=layers.sha256_file(entry), size=entry.stat().st_size)


def _cached_or(
    stage: Stage, cache: StageCache, progress: Progress, make: Callable[[], layers.Layer]
) -> tuple[layers.Layer, bool]:
    hit = cache.lookup(stage)
    if hit is not None:
        progress(f"{stage.name}: cached ({hit.stat().st_size / 1e6:.1f} MB, key {stage.key})")
        return _from_cache(hit), True
    made = make()
    stored = cache.store(stage, made.tar)
    return layers.Layer(tar=stored, diff_id=made.diff_id, size=made.size), False


def _base(plan: BuildPlan, stage: Stage, work: Path, progress: Progress) -> layers.Layer:
    spec, lock = plan.spec, plan.locks.debian
    raw = work / "rootfs.tar"
    collected = debian.run_mmdebstrap(
        spec,
        raw,
        workdir=work / "mm",
        source_date_epoch=plan.source_date_epoch,
        prefs=debian.preferences(lock),
        extra_hooks=stage.texts("hooks"),
        log=progress,
    )
    debian.verify_against_lock(lock, collected)
    progress(f"base: installed set equals debian.lock ({len(lock.packages)} packages)")
    layer = layers.normalise_tar(raw, work / "base.tar", source_date_epoch=plan.source_date_epoch)
    raw.unlink()
    return layer


def _wheels(
    plan: BuildPlan, stage: Stage, image_root: Path, cache: StageCache, work: Path, progress: Progress
) -> layers.Layer:
    spec = plan.spec
    staging = work / "wheels-root"
    locked = wheels.locked_wheels(
        spec.wheels_lock, cache.scratch(work, "wheelhouse"), list(stage.texts("interpreter_tags"))
    )
    wheels.install(locked, staging, site_packages=spec.site_packages)
    compiled = python.compile_in_image(staging, image_root)
    layer = layers.write_layer(staging, work / "wheels.tar", source_date_epoch=plan.source_date_epoch)
    progress(f"wheels: {len(locked)} wheel(s) installed by hash, {compiled} .pyc by the image's python3")
    return layer


def _tapts(
    plan: BuildPlan, tapts: Path, image_root: Path, cache: StageCache, work: Path, progress: Progress
) -> layers.Layer:
    spec = plan.spec
    staging = work / "tapts-root"
    where = cache.scratch(work, ".")
    builder = python.wheel_builder(spec.build_requirements, where / "wheelhouse", where)
    wheel = python.build_tapts_wheel(
        tapts, work / "tapts-wheel", source_date_epoch=plan.source_date_epoch, builder=builder
    )
    wheels.install([wheel], staging, site_packages=spec.site_packages)
    python.compile_in_image(staging, image_root)
    bin_dir = staging / "usr" / "local" / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    entry = bin_dir / "terminai-entrypoint"
    shutil.copyfile(spec.entrypoint_script, entry)
    entry.chmod(0o755)
    progress(f"t-apts: {wheel.name}")
    return layers.write_layer(staging, work / "tapts.tar", source_date_epoch=plan.source_date_epoch)


def build_layers(plan: BuildPlan, *, tapts: Path, cache: StageCache, work: Path, progress: Progress) -> Built:
    """The base, wheels and T-APTS layers of ``plan``, from the cache where their keys are."""
    cached: list[str] = []
    started = time.monotonic()
    stage = plan.stage("base")
    base, hit = _cached_or(stage, cache, progress, lambda: _base(plan, stage, work, progress))
    cached += [stage.name] if hit else []
    progress(f"base layer {base.size / 1e6:.1f} MB in {time.monotonic() - started:.1f} s")
    started = time.monotonic()
    # The image's own python3 byte-compiles the Python layers inside a copy of the base.
    roots: list[Path] = []

    def image_root() -> Path:
        if not roots:
            roots.append(python.unpacked_root(base.tar, base.diff_id, cache.root, work))
        return roots[0]

    wheels_stage, tapts_stage = plan.stage("wheels"), plan.stage("tapts")
    wheels, hit = _cached_or(
        wheels_stage, cache, progress, lambda: _wheels(plan, wheels_stage, image_root(), cache, work, progress)
    )
    cached += [wheels_stage.name] if hit else []
    tapts_layer, hit = _cached_or(
        tapts_stage, cache, progress, lambda: _tapts(plan, tapts, image_root(), cache, work, progress)
    )
    cached += [tapts_stage.name] if hit else []
    progress(f"python layers in {time.monotonic() - started:.1f} s")
    return Built(base=base, wheels=wheels, tapts=tapts_layer, cached=tuple(cached))


def _compressed(layer: layers.Layer, blobs: Path) -> layers.Layer:
    """The gzip blob of ``layer``, addressed by its diff_id (the same tar always gives the same blob)."""
    target = blobs / f"gz-{layer.diff_id.removeprefix('sha256:')}.tar.gz"
    if target.exists():
        return layers.Layer(
            tar=layer.tar,
            diff_id=layer.diff_id,
            size=layer.size,
            gzip=target,
            digest=layers.sha256_file(target),
            gzip_size=target.stat().st_size,
        )
    return layers.compress(layer, target)


def package(
    plan: BuildPlan,
    built: Sequence[layers.Layer],
    *,
    cache: StageCache,
    work: Path,
    output: Path,
    progress: Progress,
    archive_tag: str | None = None,
) -> Packaged:
    """Compress the layers and write ``output/oci`` (OCI layout) and ``output/image.tar`` (docker
    archive, tagged ``archive_tag``, default the plan's reference: the tag is not in the image's bytes)."""
    started = time.monotonic()
    blobs = cache.scratch(work, "blobs")
    packed = tuple(_compressed(layer, blobs) for layer in built)
    progress(f"compressed in {time.monotonic() - started:.1f} s")
    spec, labels, sde = plan.spec, dict(plan.labels), plan.source_date_epoch
    config = oci.make_config(
        layers=packed,
        history=plan.history,
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
        layout, config=config, manifest=manifest, layers=packed, ref_name=plan.version
    )
    archive = output / "image.tar"
    oci.write_docker_archive(
        archive, config=config, layers=packed, repo_tag=archive_tag or plan.reference, source_date_epoch=sde
    )
    written = OciLayout.open(layout)  # what every later room reads: checked once, here
    return Packaged(layers=packed, config=config, manifest_digest=manifest_digest, oci_layout=written, archive=archive)
