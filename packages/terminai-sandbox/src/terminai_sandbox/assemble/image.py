"""``build_image``: gather the inputs, plan, check the record, execute, load.

Each step is its own module: :mod:`.inputs` (the only reads of the checkout, git and the
host), :mod:`.plan` (pure), :mod:`.record` (``layers.lock``), :mod:`.execute` (stages
against :mod:`.cache`, then the OCI layout and docker archive) and :mod:`.load` (engine).
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from terminai_sandbox._version import __version__
from terminai_sandbox.artifacts.oci_layout import OciLayout
from terminai_sandbox.assemble import execute, oci, record
from terminai_sandbox.assemble.cache import StageCache
from terminai_sandbox.assemble.foreign import require_emulation
from terminai_sandbox.assemble.inputs import Gathered, gather, repo_root
from terminai_sandbox.assemble.load import load
from terminai_sandbox.assemble.plan import LOCK_ONLY, BuildPlan, plan
from terminai_sandbox.common.platforms import native_platform
from terminai_sandbox.wheels import default_cache

Progress = Callable[[str], None]


def _quiet(_message: str) -> None:
    return None


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
    #: Where the contract suite's pinned test wheels are kept (default: the user cache).
    contract_wheels: Path | None = None
    #: The platform to build (one image.toml declares); default: inputs.default_platform.
    platform: str | None = None

    def resolved_spec(self) -> Path:
        return self.spec_path or self.root / "images" / "sandbox" / "image.toml"

    def cache(self) -> Path:
        return self.cache_dir or default_cache()


@dataclass(frozen=True, slots=True, kw_only=True)
class BuildResult:
    """What a build produced. ``config_digest`` is also the engine's image id.

    ``plan`` is the plan the image was built from (its declared inputs are what the
    provenance records); a result read back from ``build --json`` has none.
    """

    reference: str
    config_digest: str
    manifest_digest: str
    oci_layout: OciLayout
    archive: Path
    output_dir: Path
    source_date_epoch: int
    labels: dict[str, str]
    diff_ids: tuple[str, ...]
    uncompressed_size: int
    compressed_size: int
    seconds: float
    loaded: bool
    contract_wheels: Path
    stage_keys: dict[str, str] = field(default_factory=dict)
    cached: tuple[str, ...] = ()
    plan: BuildPlan | None = None
    platform: str = "linux/amd64"

    def to_dict(self) -> dict[str, Any]:
        return {
            "reference": self.reference,
            "config_digest": self.config_digest,
            "manifest_digest": self.manifest_digest,
            "oci_layout": str(self.oci_layout.root),
            "archive": str(self.archive),
            "source_date_epoch": self.source_date_epoch,
            "labels": self.labels,
            "diff_ids": list(self.diff_ids),
            "uncompressed_size": self.uncompressed_size,
            "compressed_size": self.compressed_size,
            "seconds": round(self.seconds, 2),
            "loaded": self.loaded,
            "contract_wheels": str(self.contract_wheels),
            "stage_keys": self.stage_keys,
            "cached": list(self.cached),
            "platform": self.platform,
        }


def result_from_dict(data: dict[str, Any]) -> BuildResult:
    """The :class:`BuildResult` that ``build --json`` printed."""
    return BuildResult(
        reference=data["reference"],
        config_digest=data["config_digest"],
        manifest_digest=data["manifest_digest"],
        oci_layout=OciLayout.open(Path(data["oci_layout"])),
        archive=Path(data["archive"]),
        output_dir=Path(data["archive"]).parent,
        source_date_epoch=int(data["source_date_epoch"]),
        labels=dict(data["labels"]),
        diff_ids=tuple(data["diff_ids"]),
        uncompressed_size=int(data["uncompressed_size"]),
        compressed_size=int(data["compressed_size"]),
        seconds=float(data["seconds"]),
        loaded=bool(data["loaded"]),
        contract_wheels=Path(data.get("contract_wheels") or default_cache() / "contract-wheels"),
        stage_keys=dict(data.get("stage_keys") or {}),
        cached=tuple(data.get("cached") or ()),
        platform=str(data.get("platform") or "linux/amd64"),
    )


def engine_tag(built_plan: BuildPlan) -> str:
    """The tag the image is loaded under: its reference for the host's own platform, the
    reference with ``-ARCH`` for another, so an emulated image never takes the host's tag."""
    if built_plan.spec.platform == native_platform():
        return built_plan.reference
    return f"{built_plan.reference}-{built_plan.spec.architecture}"


def plan_for(opts: BuildOptions) -> BuildPlan:
    """The plan ``build_image(opts)`` would execute (reads the checkout; builds nothing)."""
    found = gather(
        opts.root, opts.resolved_spec(), tapts=opts.tapts_source, revision=opts.revision, platform=opts.platform
    )
    return plan(found.spec, found.locks, found.sources, found.toolchain, tag=opts.tag)


def check_inputs(opts: BuildOptions) -> tuple[Gathered, dict[str, record.Expected]]:
    """Every input of the build, read and checked before any work starts: ``image.toml``
    (one schema), the locks and the layer record (``layers.lock``). A refused input is an
    error here, so a build never runs for minutes to fail on a file it could have read first."""
    found = gather(
        opts.root, opts.resolved_spec(), tapts=opts.tapts_source, revision=opts.revision, platform=opts.platform
    )
    path = found.spec.layers_record
    return found, record.read_before_build(path, write=opts.record_layers)


def check_record(
    built_plan: BuildPlan,
    built: execute.Built,
    *,
    write: bool,
    progress: Progress,
    recorded: dict[str, record.Expected] | None = None,
) -> None:
    """Compare the lock-only layers with ``layers.lock`` (or rewrite it when ``write``);
    ``recorded`` is the record :func:`check_inputs` read before the build (else read now)."""
    path = built_plan.spec.layers_record
    layers = {"base": built.base, "wheels": built.wheels}
    keys = {name: built_plan.stage(name).key for name in LOCK_ONLY}
    if write:
        record.write(
            path, {name: record.expected(keys[name], layers[name].diff_id, layers[name].tar) for name in LOCK_ONLY}
        )
        progress(f"recorded the digests of {', '.join(LOCK_ONLY)} in {path}")
        return
    if recorded is None:
        recorded = record.read(path)
    for name in LOCK_ONLY:
        record.check(name, path, recorded.get(name), keys[name], layers[name].diff_id, layers[name].tar)
    progress(f"{', '.join(LOCK_ONLY)}: the digests recorded in {path.name} match")


def build_image(opts: BuildOptions | None = None) -> BuildResult:
    """Build the sandbox image; return digests and where the outputs are."""
    opts = opts or BuildOptions()
    started = time.monotonic()
    found, recorded = check_inputs(opts)
    require_emulation(found.spec.architecture)
    built_plan = plan(found.spec, found.locks, found.sources, found.toolchain, tag=opts.tag)
    cache = StageCache(opts.cache() if opts.use_cache else None)
    # Absolute: the T-APTS wheel is built by a process in another working directory.
    output = (opts.output_dir or opts.root / "dist" / __version__).absolute()
    output.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="terminai-build-", dir=output) as tmp:
        work = Path(tmp)
        built = execute.build_layers(built_plan, tapts=found.tapts, cache=cache, work=work, progress=opts.progress)
        check_record(built_plan, built, write=opts.record_layers, progress=opts.progress, recorded=recorded)
        packaged = execute.package(
            built_plan,
            built.ordered(),
            cache=cache,
            work=work,
            output=output,
            progress=opts.progress,
            archive_tag=engine_tag(built_plan),
        )
        (output / "build.json").write_text(json.dumps({"diff_ids": [p.diff_id for p in packaged.layers]}) + "\n")
    config_digest = oci.digest_of(packaged.config)
    if opts.load:
        stage = time.monotonic()
        engine = load(packaged.archive, engine_tag(built_plan), config_digest)
        opts.progress(f"loaded into {engine.info.name} {engine.info.version} in {time.monotonic() - stage:.1f} s")
    return BuildResult(
        reference=built_plan.reference,
        config_digest=config_digest,
        manifest_digest=packaged.manifest_digest,
        oci_layout=packaged.oci_layout,
        archive=packaged.archive,
        output_dir=output,
        source_date_epoch=built_plan.source_date_epoch,
        labels=dict(built_plan.labels),
        diff_ids=tuple(p.diff_id for p in packaged.layers),
        uncompressed_size=sum(p.size for p in packaged.layers),
        compressed_size=sum(p.gzip_size or 0 for p in packaged.layers),
        seconds=time.monotonic() - started,
        loaded=opts.load,
        contract_wheels=opts.contract_wheels or opts.cache() / "contract-wheels",
        stage_keys=built_plan.keys(),
        cached=built.cached,
        plan=built_plan,
        platform=built_plan.spec.platform,
    )


def cached_base(opts: BuildOptions) -> Path:
    """Where ``build_image`` caches the Debian base for ``opts`` (it may not exist yet)."""
    entry = StageCache(opts.cache()).entry(plan_for(opts).stage("base"))
    assert entry is not None
    return entry


def lock_only_inputs(opts: BuildOptions) -> dict[str, str]:
    """The input keys ``layers.lock`` must carry for the current locks and ``image.toml``."""
    keys = plan_for(opts).keys()
    return {name: keys[name] for name in LOCK_ONLY}
