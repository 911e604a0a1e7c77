"""The build plan: what each stage of the image reads, and the cache key that follows from it.

:func:`plan` is pure: it takes the checked spec, the parsed locks, the digests of the
sources and the toolchain (all gathered beforehand by :mod:`~terminai_sandbox.assemble.inputs`)
and returns a frozen :class:`BuildPlan`. No file, environment variable, clock, git or
engine is read here, so the same inputs always give the same plan, and a unit test can
check that each input changes exactly the keys of the stages that read it.

Each :class:`Stage` declares its inputs in two kinds:

* ``dependencies``: artefacts pinned by digest (a lock file, one ``.deb``, one wheel, the
  T-APTS source tree): these are in-toto resource descriptors, and the provenance
  attestation records exactly them;
* ``parameters``: values that shape the bytes (SOURCE_DATE_EPOCH, the image interpreter
  and its wheel tags, the assembler format, the image.toml fields the stage reads).

A stage's key is the sha256 of its name, its declared inputs and the keys of the stages it
builds on; nothing else enters it, so nothing can be forgotten in a hand-written list.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from packageurl import PackageURL

from terminai_sandbox.artifacts.contract import LABEL as CONTRACT_LABEL
from terminai_sandbox.artifacts.debian_lock import DebianLock
from terminai_sandbox.artifacts.image_locks import ImageLocks
from terminai_sandbox.artifacts.wheel_lock import WheelLock
from terminai_sandbox.assemble.hooks import MMDEBSTRAP_SKIP, base_hooks
from terminai_sandbox.assemble.oci import iso
from terminai_sandbox.assemble.spec import ImageSpec

#: Bumped whenever a change of the assembler changes output bytes for the same inputs.
ASSEMBLER_FORMAT = "2"
FORMAT_LABEL = "dev.terminai.assembler-format"
#: The stages in the order they run; ``base`` and ``wheels`` depend on the locks alone
#: and are recorded in ``layers.lock``.
STAGES = ("base", "wheels", "tapts", "layers", "oci")
LOCK_ONLY = ("base", "wheels")

Param = str | int | tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class FileDigest:
    """One source file (or tree) by its path in the repository and its sha256."""

    path: str
    sha256: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Dependency:
    """An artefact a stage reads, pinned by digest: an in-toto resource descriptor."""

    uri: str = ""
    name: str = ""
    digest: tuple[tuple[str, str], ...]

    def descriptor(self) -> dict[str, Any]:
        out: dict[str, Any] = {"uri": self.uri} if self.uri else {"name": self.name}
        out["digest"] = dict(self.digest)
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageInterpreter:
    """The image's own Python: it byte-compiles every Python layer, its tags pick the wheels."""

    path: str
    package: str  # the Debian package and version that provide it, e.g. python3.13=3.13.5-2
    tags: tuple[str, ...]  # pip's --python-version/--abi/--platform options for its wheels


@dataclass(frozen=True, slots=True, kw_only=True)
class Locks:
    """The parsed locks: the Debian package set and the two wheel locks, each with its file."""

    debian: DebianLock
    debian_file: FileDigest
    wheels: WheelLock  # requirements.lock: the wheels installed into the image
    wheels_file: FileDigest
    backend: WheelLock  # requirements-build.lock: the T-APTS build backend
    backend_file: FileDigest

    @property
    def source_date_epoch(self) -> int:
        return self.debian.source_date_epoch

    def image(self) -> ImageLocks:
        """The locks of what the image contains (the build backend is not in it): what the SBOM annotates."""
        return ImageLocks(debian=self.debian, wheels=self.wheels)


@dataclass(frozen=True, slots=True, kw_only=True)
class Sources:
    """What the build reads of the checkout, by digest, plus the revision that names it."""

    image_spec: FileDigest
    entrypoint: FileDigest
    tapts: FileDigest  # a digest over the T-APTS source tree (see inputs.tree_digest)
    contract_version: str
    revision: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Toolchain:
    """The tools whose versions reach the bytes."""

    assembler_format: str
    sandbox_version: str  # the image version label and default tag
    builder_python: str  # the host interpreter that runs the T-APTS build backend
    image_interpreter: ImageInterpreter


def _canonical(data: Any) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def derive_key(
    name: str, dependencies: Sequence[Dependency], parameters: Mapping[str, Param], after: Mapping[str, str]
) -> str:
    """The cache key of a stage: a digest of exactly what it declares.

    A file dependency enters by its digest and its place in the stage's list, not by its
    path: where the checkout or the image directory lies does not change the bytes built.
    """
    document = {
        "stage": name,
        "dependencies": [[d.uri, dict(d.digest)] for d in dependencies],
        "parameters": {k: list(v) if isinstance(v, tuple) else v for k, v in parameters.items()},
        "after": dict(after),
    }
    return hashlib.sha256(_canonical(document)).hexdigest()[:32]


@dataclass(frozen=True, slots=True, kw_only=True)
class Stage:
    """One step of the build, its declared inputs and the key derived from them."""

    name: str
    dependencies: tuple[Dependency, ...]
    parameters: tuple[tuple[str, Param], ...]
    after: tuple[tuple[str, str], ...] = ()  # (stage, key) of the stages it builds on
    key: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "key", derive_key(self.name, self.dependencies, dict(self.parameters), dict(self.after))
        )

    def parameter(self, name: str) -> Param:
        return dict(self.parameters)[name]

    def texts(self, name: str) -> tuple[str, ...]:
        """A parameter that is a list of strings (hooks, wheel tags)."""
        value = self.parameter(name)
        if not isinstance(value, tuple):
            raise TypeError(f"stage {self.name}: parameter {name} is not a list")
        return value


def _stage(
    name: str, dependencies: Iterable[Dependency], parameters: Mapping[str, Param], after: Iterable[Stage] = ()
) -> Stage:
    return Stage(
        name=name,
        dependencies=tuple(dependencies),
        parameters=tuple(sorted(parameters.items())),
        after=tuple((s.name, s.key) for s in after),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class BuildPlan:
    """The frozen stages of one image build and the image metadata they end in."""

    spec: ImageSpec
    locks: Locks
    stages: tuple[Stage, ...]
    reference: str
    version: str
    labels: tuple[tuple[str, str], ...]
    history: tuple[str, ...]
    source_date_epoch: int
    source: Dependency  # the source revision the image names in its labels
    image_spec: str  # the image.toml the plan was made from, as a repository path

    def stage(self, name: str) -> Stage:
        for stage in self.stages:
            if stage.name == name:
                return stage
        raise KeyError(name)

    def keys(self) -> dict[str, str]:
        return {stage.name: stage.key for stage in self.stages}

    def dependencies(self) -> tuple[Dependency, ...]:
        """Every declared artefact of every stage, once, in stage order: what provenance records."""
        seen: dict[Dependency, None] = {self.source: None}
        for stage in self.stages:
            seen.update(dict.fromkeys(stage.dependencies))
        return tuple(seen)

    def parameters(self) -> dict[str, Any]:
        """What the build fixed itself (provenance ``internalParameters``)."""
        wheels = self.stage("wheels")
        return {
            "sourceDateEpoch": self.source_date_epoch,
            "assemblerFormat": str(wheels.parameter("assembler_format")),
            "imageInterpreter": {
                "path": wheels.parameter("interpreter"),
                "package": wheels.parameter("interpreter_package"),
                "tags": list(wheels.texts("interpreter_tags")),
            },
            "stageKeys": self.keys(),
        }


def _file(item: FileDigest) -> Dependency:
    return Dependency(name=item.path, digest=(("sha256", item.sha256),))


def _debs(lock: DebianLock) -> list[Dependency]:
    out = []
    for item in sorted(lock.packages, key=lambda p: (p.name, p.version, p.architecture)):
        purl = PackageURL(
            type="deb",
            namespace="debian",
            name=item.name,
            version=item.version,
            qualifiers={"arch": item.architecture},
        )
        out.append(Dependency(uri=purl.to_string(), digest=(("sha256", item.sha256),)))
    return out


def _wheels(lock: WheelLock) -> list[Dependency]:
    entries = sorted((name, version, sha) for (name, version), hashes in lock.pins.items() for sha in hashes)
    return [
        Dependency(uri=PackageURL(type="pypi", name=name, version=version).to_string(), digest=(("sha256", sha),))
        for name, version, sha in entries
    ]


def plan(spec: ImageSpec, locks: Locks, sources: Sources, toolchain: Toolchain, *, tag: str | None = None) -> BuildPlan:
    """The stages that build ``spec`` from ``locks`` and ``sources`` with ``toolchain``."""
    sde = locks.source_date_epoch
    fmt = toolchain.assembler_format
    interpreter = toolchain.image_interpreter
    image: dict[str, Param] = {
        "interpreter": interpreter.path,
        "interpreter_package": interpreter.package,
        "interpreter_tags": interpreter.tags,
        "site_packages": spec.site_packages,
    }
    base = _stage(
        "base",
        [_file(locks.debian_file), *_debs(locks.debian)],
        {
            "assembler_format": fmt,
            "source_date_epoch": sde,
            "suite": spec.suite,
            "architecture": spec.architecture,
            "variant": spec.variant,
            "packages": spec.packages,
            "mirrors": spec.mirrors,
            "path_exclude": spec.path_exclude,
            "path_include": spec.path_include,
            "user": f"{spec.user}:{spec.uid}:{spec.gid}:{spec.home}",
            "workdir": spec.workdir,
            "hooks": base_hooks(spec, sde),
            "mmdebstrap_skip": MMDEBSTRAP_SKIP,
        },
    )
    wheels = _stage(
        "wheels",
        [_file(locks.wheels_file), *_wheels(locks.wheels)],
        {"assembler_format": fmt, "source_date_epoch": sde, **image},
        after=[base],
    )
    tapts = _stage(
        "tapts",
        [_file(sources.tapts), _file(sources.entrypoint), _file(locks.backend_file), *_wheels(locks.backend)],
        {"assembler_format": fmt, "source_date_epoch": sde, "builder_python": toolchain.builder_python, **image},
        after=[base],
    )
    layers = _stage("layers", [], {"assembler_format": fmt, "compression": "gzip-6"}, after=[base, wheels, tapts])
    reference = tag or f"{spec.repository}:{toolchain.sandbox_version}"
    labels = dict(spec.labels)
    labels.update(
        {
            "org.opencontainers.image.version": toolchain.sandbox_version,
            "org.opencontainers.image.revision": sources.revision,
            "org.opencontainers.image.source": spec.source,
            "org.opencontainers.image.created": iso(sde),
            "org.opencontainers.image.ref.name": reference,
            CONTRACT_LABEL: sources.contract_version,
            FORMAT_LABEL: fmt,
        }
    )
    history = (
        f"debian {spec.suite} {spec.variant} + {', '.join(spec.packages)} pinned to debian.lock",
        "wheels from requirements.lock (by sha256)",
        f"terminai-apts {toolchain.sandbox_version} + contract + entrypoint",
    )
    oci = _stage(
        "oci",
        [_file(sources.image_spec)],
        {
            "assembler_format": fmt,
            "labels": tuple(f"{k}={v}" for k, v in sorted(labels.items())),
            "history": history,
            "reference": reference,
            "user": f"{spec.uid}:{spec.gid}",
            "env": spec.env,
            "entrypoint": spec.entrypoint,
            "cmd": spec.cmd,
            "workdir": spec.workdir,
            "architecture": spec.architecture,
        },
        after=[layers],
    )
    return BuildPlan(
        spec=spec,
        locks=locks,
        stages=(base, wheels, tapts, layers, oci),
        reference=reference,
        version=toolchain.sandbox_version,
        labels=tuple(sorted(labels.items())),
        history=history,
        source_date_epoch=sde,
        source=Dependency(uri=f"git+{spec.source}@{sources.revision}", digest=(("gitCommit", sources.revision),)),
        image_spec=sources.image_spec.path,
    )
