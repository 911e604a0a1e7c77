"""Run the T-APTS contract suite inside an image.

The test image is the release image plus exactly one layer (pinned pytest wheels and
``contracts/``), committed from a never-started container, so the tested bits are the
released bits. The suite runs through the image's own entrypoint (its health check runs
first) as the non-root image user, with ``--network none`` and a read-only root; only
``/tmp`` (tmpfs) and the report directory are writable. Results come back as JUnit XML.

The suite and the lock of its test wheels ship inside this package
(:mod:`terminai_sandbox.resources`), so an installed launcher runs the same suite as a
checkout. An image the engine does not hold is pulled by digest first (a tag is resolved
to its digest once, through the engine).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from terminai_sandbox import resources, wheels
from terminai_sandbox.common import deadlines
from terminai_sandbox.common.reference import ImageRef
from terminai_sandbox.common.registry_auth import docker_config_credentials, engine_auth
from terminai_sandbox.emulation import EmulationReport
from terminai_sandbox.emulation import probe as probe_emulation
from terminai_sandbox.engine.client import LABEL, DockerApi
from terminai_sandbox.errors import ConfigError, ContractError
from terminai_sandbox.layers import write_layer

if TYPE_CHECKING:
    from terminai_sandbox.engine.client import PullCallback

HEALTH_EXIT = 70
#: Where the test layer puts the suite and its test tools inside the image.
SUITE_DIR = "/opt/terminai/contracts"
SUITE_SITE = "/opt/terminai/contract-tools"


class BuiltImage(Protocol):
    """What the runner takes of a build's result (:class:`terminai_sandbox.assemble.BuildResult`).

    Declared here so the runner does not import the build: ``run --deep`` loads this module.
    """

    @property
    def config_digest(self) -> str: ...
    @property
    def contract_wheels(self) -> Path: ...


def contract_layer(suite: Path, test_lock: Path, wheelhouse: Path, work: Path) -> bytes:
    """The test layer's tar: ``test_lock``'s wheels (by sha256, from or into ``wheelhouse``) and ``suite``.

    Built with the image's wheel checks (:mod:`terminai_sandbox.wheels`) and deterministic tar
    rules (:mod:`terminai_sandbox.layers`).
    """
    staging = work / "test-layer"
    locked = wheels.locked_wheels(test_lock, wheelhouse)
    # A directory of its own (on PYTHONPATH when the suite runs), not the image's
    # site-packages: that path names the image's Python version.
    wheels.install(locked, staging, site_packages=SUITE_SITE, scripts=f"{SUITE_SITE}/bin")
    target = staging / SUITE_DIR.lstrip("/")
    shutil.copytree(suite, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    layer = write_layer(staging, work / "test-layer.tar", source_date_epoch=0)
    return layer.tar.read_bytes()


@dataclass(frozen=True, slots=True, kw_only=True)
class ContractReport:
    image_id: str
    passed: tuple[str, ...]
    failed: tuple[tuple[str, str], ...]
    junit: Path | None
    exit_code: int
    seconds: float
    output_tail: str = ""
    health_failed: bool = False
    skipped: tuple[str, ...] = field(default_factory=tuple)
    #: The image's platform and, under emulation, the guarantees proven another way.
    emulation: EmulationReport | None = None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.failed and bool(self.passed)

    def to_dict(self) -> dict[str, Any]:
        return {
            "image_id": self.image_id,
            "ok": self.ok,
            "passed": list(self.passed),
            "failed": [{"test": name, "message": message} for name, message in self.failed],
            "skipped": list(self.skipped),
            "junit": str(self.junit) if self.junit else None,
            "exit_code": self.exit_code,
            "health_failed": self.health_failed,
            "seconds": round(self.seconds, 2),
            "emulation": None if self.emulation is None else self.emulation.to_dict(),
        }


_IMAGE_ID = re.compile(r"^(sha256:)?[0-9a-f]{12,64}$")


def image_in_engine(engine: DockerApi, image: str, *, on_pull: PullCallback | None = None) -> str:
    """The engine's id for ``image`` (an image id or a reference), pulling it by digest if absent.

    Raises :class:`ConfigError` for a malformed reference or an absent image id, and
    :class:`~terminai_sandbox.errors.RegistryError` when the registry cannot serve it.
    """
    if _IMAGE_ID.match(image):
        found = engine.inspect_image(image)
        if found is None:
            raise ConfigError(
                f"no image with id {image} in the engine at {engine.info.host}",
                hint="an image id names a local image only: build or load it, or pass REGISTRY/REPO:TAG[@DIGEST]",
            )
        return str(found["Id"])
    ref = ImageRef.parse(image, what="the image")
    found = engine.inspect_image(image)
    if found is not None:
        return str(found["Id"])
    # What the docker CLI would send for the registry, as `docker pull` would.
    auth = engine_auth(docker_config_credentials(ref.registry), ref.registry)
    digest = ref.digest
    if digest is None:
        tagged = f"{ref.name}:{ref.tag or 'latest'}"
        # A registry request, though the engine makes it: bounded as the registry client's are
        # (TERMINAI_REGISTRY_TIMEOUT, as RegistryClient reads it; 30 s, where a person waits).
        seconds = deadlines.registry_seconds(os.environ, deadlines.REGISTRY_INTERACTIVE_SECONDS)
        # checked: a well-formed sha256 digest or RegistryError
        digest = engine.distribution_digest(tagged, auth=auth, seconds=seconds)
    return engine.pull_by_digest(ref.name, digest, auth=auth, on_progress=on_pull)


def _parse_junit(path: Path) -> tuple[list[str], list[tuple[str, str]], list[str]]:
    tree = ET.parse(path)  # noqa: S314 - written by pytest in our own container
    passed, failed, skipped = [], [], []
    for case in tree.iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if problem is not None:
            failed.append((name, (problem.get("message") or problem.text or "")[:2000]))
        elif case.find("skipped") is not None:
            skipped.append(name)
        else:
            passed.append(name)
    return passed, failed, skipped


def run_contracts(
    engine: DockerApi,
    image: BuiltImage | str,
    *,
    suite: Path | None = None,
    test_lock: Path | None = None,
    wheelhouse: Path | None = None,
    output_dir: Path | None = None,
    timeout: float = 600,
    runtime: str | None = None,
    on_pull: PullCallback | None = None,
) -> ContractReport:
    """Run the contract suite inside ``image``; return the report.

    ``image`` is a build's result (its image id and contract wheels directory are used) or
    a reference or image id. ``suite`` (a directory holding ``t-apts/`` and ``tests/``) and
    ``test_lock`` default to the copies shipped in this package. The lock's test wheels are
    taken from ``wheelhouse`` (default: the build's ``contract_wheels``, else the user
    cache) by sha256; only missing ones are downloaded. ``runtime`` names the engine runtime the
    suite runs on (``runsc``: under gVisor; default: the engine's default); ``on_pull`` hears
    the progress of pulling an image the engine does not hold. Raises
    :class:`ContractError` when any test fails, the health check refuses the image, or no test
    ran at all.
    """
    started = time.monotonic()
    if not isinstance(image, str):
        wheelhouse = wheelhouse or image.contract_wheels
        image = image.config_digest
    base = image_in_engine(engine, image, on_pull=on_pull)
    # Asked before the suite: an image of another architecture runs under qemu-user, and what
    # emulation cannot hold is named in the report, never skipped silently.
    emulation = probe_emulation(engine, base, runtime=runtime)
    with tempfile.TemporaryDirectory(prefix="terminai-contracts-") as tmp:
        work = Path(tmp)
        layer = contract_layer(
            suite or resources.contract_suite(),
            test_lock or resources.contract_test_lock(),
            wheelhouse or wheels.default_cache() / "contract-wheels",
            work,
        )
        holder = engine.create_container(base, ["true"], labels={LABEL: "contracts-build"})
        try:
            engine.put_archive(holder, "/", layer)
            test_image = engine.commit(holder, changes=[f'LABEL dev.terminai.contract-test-of="{base}"'])
        finally:
            engine.remove_container(holder)
        reports = work / "out"
        reports.mkdir()
        reports.chmod(0o777)  # the image user (non-root) writes the JUnit file here
        try:
            code, out, err = engine.run(
                test_image,
                [
                    "python3",
                    "-m",
                    "pytest",
                    "-p",
                    "no:cacheprovider",
                    "-q",
                    "-rfE",
                    f"{SUITE_DIR}/tests",
                    "--junitxml=/out/contracts.junit.xml",
                    "-o",
                    "junit_family=xunit2",
                ],
                network_mode="none",
                read_only=True,
                tmpfs={"/tmp": "rw,size=128m"},
                volumes={str(reports): {"bind": "/out", "mode": "rw"}},
                environment={
                    "HOME": "/tmp",
                    "PYTHONPATH": SUITE_SITE,
                    "TAPTS_CONTRACT_MANIFEST": f"{SUITE_DIR}/t-apts/contract.json",
                },
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                timeout=timeout,
                runtime=runtime,
            )
        finally:
            engine.remove_image(test_image, force=True)
        text = (out + err).decode(errors="replace")
        tail = "\n".join(text.splitlines()[-40:])
        junit_src = reports / "contracts.junit.xml"
        junit: Path | None = None
        passed: list[str] = []
        failed: list[tuple[str, str]] = []
        skipped: list[str] = []
        if junit_src.exists():
            passed, failed, skipped = _parse_junit(junit_src)
            if output_dir is not None:
                output_dir.mkdir(parents=True, exist_ok=True)
                junit = output_dir / "contracts.junit.xml"
                shutil.copyfile(junit_src, junit)
    report = ContractReport(
        image_id=base,
        passed=tuple(passed),
        failed=tuple(failed),
        skipped=tuple(skipped),
        junit=junit,
        exit_code=code,
        seconds=time.monotonic() - started,
        output_tail=tail,
        health_failed=code == HEALTH_EXIT,
        emulation=emulation,
    )
    if report.health_failed:
        raise ContractError(
            f"image {image} refused by its own health check before the suite ran:\n{tail}",
            hint="the toolset in this image does not satisfy the contract; rebuild it",
        )
    if failed:
        names = "\n".join(f"  - {name}: {message.splitlines()[0] if message else ''}" for name, message in failed)
        raise ContractError(
            f"{len(failed)} contract test(s) failed in {image}:\n{names}",
            hint="the image is not releasable; fix the toolset or the contract and rebuild",
        )
    if code != 0 or not passed:
        raise ContractError(f"the contract suite did not run cleanly in {image} (exit {code}):\n{tail}")
    return report


__all__ = ["BuiltImage", "ContractReport", "contract_layer", "image_in_engine", "run_contracts"]
