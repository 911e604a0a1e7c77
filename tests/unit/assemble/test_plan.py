"""The pure planner: same inputs give the same plan; each declared input moves exactly the
keys of the stages that read it (directly or through a stage they build on)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from terminai_sandbox.assemble.plan import STAGES, BuildPlan, FileDigest, derive_key

from tests.fixtures import plan as fx

ALL = set(STAGES)
AFTER_WHEELS = {"wheels", "layers", "oci"}
AFTER_TAPTS = {"tapts", "layers", "oci"}
IMAGE_ONLY = {"oci"}


def _changed(before: BuildPlan, after: BuildPlan) -> set[str]:
    old, new = before.keys(), after.keys()
    assert set(old) == set(new) == ALL
    return {name for name in STAGES if old[name] != new[name]}


def test_the_same_inputs_give_the_same_plan_and_keys() -> None:
    first, second = fx.sample_plan(), fx.sample_plan()
    assert first == second
    assert first.keys() == second.keys()
    assert len(set(first.keys().values())) == len(STAGES)  # no two stages share a key
    assert [s.name for s in first.stages] == list(STAGES)


def test_the_wheels_key_changes_with_the_image_interpreter() -> None:
    """The interpreter that byte-compiles the wheels into the image is a declared input of that
    stage: a new python3.13 in the base must not reuse wheels compiled by the old one."""
    before = fx.sample_plan()
    toolchain = dataclasses.replace(fx.toolchain(), image_interpreter=fx.interpreter("python3.13=3.13.9-1"))
    after = fx.sample_plan(toolchain=toolchain)
    assert before.stage("base").key == after.stage("base").key
    assert before.stage("wheels").key != after.stage("wheels").key
    assert after.stage("wheels").parameter("interpreter_package") == "python3.13=3.13.9-1"


def _spec(**kw: Any) -> Callable[[], dict[str, Any]]:
    return lambda: {"spec": dataclasses.replace(fx.spec(), **kw)}


def _locks(**kw: Any) -> Callable[[], dict[str, Any]]:
    return lambda: {"locks": dataclasses.replace(fx.locks(), **kw)}


def _sources(**kw: Any) -> Callable[[], dict[str, Any]]:
    return lambda: {"sources": dataclasses.replace(fx.sources(), **kw)}


def _toolchain(**kw: Any) -> Callable[[], dict[str, Any]]:
    return lambda: {"toolchain": dataclasses.replace(fx.toolchain(), **kw)}


def _digest(path: str, char: str) -> FileDigest:
    return FileDigest(path=path, sha256=char * 64)


CASES: dict[str, tuple[Callable[[], dict[str, Any]], set[str]]] = {
    "debian.lock bytes": (_locks(debian_file=_digest("images/sandbox/debian.lock", "9")), ALL),
    "one locked .deb": (
        _locks(debian=dataclasses.replace(fx.debian_lock(), packages=fx.debian_lock().packages[:1])),
        ALL,
    ),
    "SOURCE_DATE_EPOCH": (_locks(debian=dataclasses.replace(fx.debian_lock(), source_date_epoch=fx.SDE + 1)), ALL),
    "requirements.lock bytes": (_locks(wheels_file=_digest("images/sandbox/requirements.lock", "9")), AFTER_WHEELS),
    "one locked wheel": (_locks(wheels=fx.wheel_lock("restrictedpython", "9.1", "e" * 64)), AFTER_WHEELS),
    "build backend lock": (_locks(backend=fx.wheel_lock("setuptools", "85.0.0", "f" * 64)), AFTER_TAPTS),
    "T-APTS source tree": (_sources(tapts=_digest("packages/terminai-apts", "9")), AFTER_TAPTS),
    "entrypoint script": (_sources(entrypoint=_digest("images/sandbox/entrypoint", "9")), AFTER_TAPTS),
    "host interpreter of the wheel build": (_toolchain(builder_python="3.12.1"), AFTER_TAPTS),
    "image interpreter": (_toolchain(image_interpreter=fx.interpreter("python3.13=3.13.9-1")), ALL - {"base"}),
    "site-packages path": (_spec(site_packages="/usr/local/lib/python3.13/site-packages"), ALL - {"base"}),
    "Debian packages in image.toml": (_spec(packages=("python3", "ca-certificates")), ALL),
    "image user": (_spec(uid=10002), ALL),
    "assembler format": (_toolchain(assembler_format="3"), ALL),
    "image.toml bytes": (_sources(image_spec=_digest("images/sandbox/image.toml", "9")), IMAGE_ONLY),
    "source revision": (_sources(revision="0" * 40), IMAGE_ONLY),
    "contract version": (_sources(contract_version="1.1.0"), IMAGE_ONLY),
    "runtime env": (_spec(env=("PATH=/usr/bin",)), IMAGE_ONLY),
    "image version": (_toolchain(sandbox_version="1.2.4"), IMAGE_ONLY),
    "tag": (lambda: {"tag": "127.0.0.1:5000/terminai/sandbox:test"}, IMAGE_ONLY),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_declared_input_changes_exactly_the_keys_of_its_stages(name: str) -> None:
    change, expected = CASES[name]
    assert _changed(fx.sample_plan(), fx.sample_plan(**change())) == expected


def test_a_key_is_derived_from_the_declared_inputs_alone() -> None:
    stage = fx.sample_plan().stage("wheels")
    assert stage.key == derive_key(stage.name, stage.dependencies, dict(stage.parameters), dict(stage.after))
    assert stage.after == (("base", fx.sample_plan().stage("base").key),)


def test_the_plan_declares_what_provenance_records() -> None:
    built = fx.sample_plan()
    descriptors = [d.descriptor() for d in built.dependencies()]
    assert descriptors[0] == {"uri": f"git+{fx.SOURCE}@{fx.COMMIT}", "digest": {"gitCommit": fx.COMMIT}}
    assert {"name": "images/sandbox/debian.lock", "digest": {"sha256": "1" * 64}} in descriptors
    assert {"uri": "pkg:deb/debian/libc6@2.36-9?arch=amd64", "digest": {"sha256": "a" * 64}} in descriptors
    assert {"uri": "pkg:pypi/restrictedpython@9.0", "digest": {"sha256": "b" * 64}} in descriptors
    assert {"uri": "pkg:pypi/setuptools@84.2.1", "digest": {"sha256": "c" * 64}} in descriptors
    assert {"name": "packages/terminai-apts", "digest": {"sha256": "6" * 64}} in descriptors
    assert len(descriptors) == len({str(d) for d in descriptors})  # each once
    parameters = built.parameters()
    assert parameters["sourceDateEpoch"] == fx.SDE and parameters["assemblerFormat"] == "2"
    assert parameters["imageInterpreter"]["package"] == "python3.13=3.13.5-2+deb13u5"
    assert parameters["stageKeys"] == built.keys()


def test_labels_and_reference_come_from_the_inputs() -> None:
    labels = dict(fx.sample_plan().labels)
    assert labels["org.opencontainers.image.revision"] == fx.COMMIT
    assert labels["org.opencontainers.image.created"] == "2026-11-20T02:11:10Z"
    assert labels["dev.terminai.contract.version"] == "1.0.0"
    assert labels["dev.terminai.assembler-format"] == "2"
    assert fx.sample_plan().reference == "terminai/sandbox:1.2.3"
    assert fx.sample_plan(tag="r/x:y").reference == "r/x:y"


def test_where_the_files_lie_does_not_change_the_keys() -> None:
    """An image directory copied elsewhere (same bytes) is the same build: a record made in
    the checkout still applies to it."""
    moved = dataclasses.replace(
        fx.locks(),
        debian_file=FileDigest(path="/tmp/copy/debian.lock", sha256="1" * 64),
        wheels_file=FileDigest(path="/tmp/copy/requirements.lock", sha256="2" * 64),
    )
    assert fx.sample_plan(locks=moved).keys() == fx.sample_plan().keys()


def test_the_plan_carries_the_typed_locks_of_what_the_image_contains() -> None:
    """The SBOM of a release annotates components with the plan's own locks: the image's
    Debian packages and wheels, not the T-APTS build backend."""
    locks = fx.locks()
    image = locks.image()
    assert image.debian is locks.debian and image.wheels is locks.wheels
    assert image.deb_sha256[("libc6", "2.36-9", "amd64")] == "a" * 64
    assert image.wheel_sha256 == {("restrictedpython", "9.0"): ("b" * 64,)}
    assert fx.sample_plan().source_date_epoch == locks.debian.source_date_epoch == fx.SDE
