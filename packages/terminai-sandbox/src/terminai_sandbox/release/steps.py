"""The release steps, each resumable from the persisted :class:`ReleaseState`.

1. ``build``: build the image into ``dist/X.Y.Z/oci`` (loaded into the engine).
2. ``contracts``: run the contract suite inside that image; nothing goes on unless it passed.
3. ``describe``: the CycloneDX SBOM and the SLSA v1 provenance, from the plan's locks.
4. ``push``: push the image by digest (no tag yet).
5. ``sign``: sign the digest and attest the SBOM and the provenance (key or keyless).
6. ``verify``: verify what the registry now holds, with the release's trust policy, and
   export every signature for air-gapped verification.
7. ``tag``: only now, put ``X.Y.Z`` on the verified manifest.
8. ``manifest``: write ``release.json``, the one description of the release, from the state.

Every step checks that the image in ``dist/X.Y.Z/oci`` is the one the state describes and
that the step before it passed. The version tag never exists before the contracts passed
and the pushed digest verified.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from terminai_apts import durable

from terminai_sandbox import provenance
from terminai_sandbox.artifacts.contract import Contract
from terminai_sandbox.artifacts.oci_layout import OciLayout
from terminai_sandbox.assemble import BuildOptions, BuildPlan, plan_for
from terminai_sandbox.common.reference import ImageRef
from terminai_sandbox.contracts import run_contracts
from terminai_sandbox.engine.client import DockerApi
from terminai_sandbox.errors import ArtifactError, ReleaseError, SandboxError
from terminai_sandbox.registry import ProgressCallback, RegistryClient
from terminai_sandbox.release.signing import ReleaseSigner
from terminai_sandbox.release.state import ReleaseState
from terminai_sandbox.sbom import SbomOptions, generate
from terminai_sandbox.signing.formats import dsse
from terminai_sandbox.signing.formats import sig as sig_format
from terminai_sandbox.signing.store import RegistryStore, export_offline
from terminai_sandbox.signing.verify.image import verify_image
from terminai_sandbox.signing.verify.trust import VerificationPolicy

ATTESTED = ("cyclonedx", "slsaprovenance1")
SBOM_FILE = "sbom.cdx.json"
PROVENANCE_FILE = "provenance.slsa.json"
MANIFEST_FILE = "release.json"


class BuiltImage(Protocol):
    @property
    def oci_layout(self) -> OciLayout: ...
    @property
    def manifest_digest(self) -> str: ...
    @property
    def config_digest(self) -> str: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Describe:
    image_dir: Path  # the image's spec and locks (images/sandbox)
    builder_id: str = provenance.LOCAL_BUILDER
    invocation_id: str | None = None


def _step(name: str, action: Callable[[], Any]) -> Any:
    try:
        return action()
    except SandboxError as exc:
        raise ReleaseError(f"release stopped at step '{name}': {exc.message}", hint=exc.hint) from None


def _sha256_file(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def _layout(target: Path, state: ReleaseState) -> OciLayout:
    try:
        layout = OciLayout.open(target / "oci")
    except ArtifactError as exc:
        raise ReleaseError(
            f"the release's image in {target / 'oci'} cannot be read: {exc.message}",
            hint="run 'terminai-sandbox release build' again to place the image's layout there",
        ) from None
    state.check_image(layout.manifest_digest)
    return layout


def _ref(state: ReleaseState) -> ImageRef:
    return ImageRef.parse(state.repository, what="release repository")


def _resume(target: Path, after: str) -> tuple[ReleaseState, OciLayout, ImageRef]:
    """The state, the image and the repository of a release whose step ``after`` passed."""
    state = ReleaseState.load(target)
    state.require(after)
    return state, _layout(target, state), _ref(state)


def build(target: Path, *, version: str, repository: str, image: Callable[[], BuiltImage]) -> ReleaseState:
    """Step 1: build (or take) the image and place its OCI layout in ``target/oci``."""
    ImageRef.parse(repository, what="release repository")  # refused before anything is built
    made = [p for p in (target, *target.parents) if not p.exists()]  # what this step creates
    target.mkdir(parents=True, exist_ok=True)
    try:
        built: BuiltImage = _step("build", image)
    except BaseException:
        # A failed first build (outside a checkout, say) leaves no empty dist/X.Y.Z behind;
        # a directory that held an earlier release's files is not touched.
        if made:
            shutil.rmtree(made[0], ignore_errors=True)
            for parent in made[1:]:
                with contextlib.suppress(OSError):
                    parent.rmdir()
        raise
    layout = built.oci_layout
    if layout.root.resolve() != (target / "oci").resolve():
        shutil.rmtree(target / "oci", ignore_errors=True)
        shutil.copytree(layout.root, target / "oci")
    try:
        previous = ReleaseState.load(target)
    except ReleaseError:
        previous = ReleaseState(version=version, repository=repository, manifest_digest="", config_digest="")
    if previous.version != version or previous.repository != repository:
        previous = ReleaseState(version=version, repository=repository, manifest_digest="", config_digest="")
    state = previous.for_image(built.manifest_digest, built.config_digest)
    if state.passed("build") is None:  # the same image again keeps what passed for it
        state = state.record("build", {"manifest_digest": built.manifest_digest, "config_digest": built.config_digest})
    state.save(target)
    return state


def contracts(target: Path, engine: DockerApi, *, suite: Path | None = None) -> ReleaseState:
    """Step 2: run the contract suite (default: the one shipped with this version) inside the image."""
    state, _, _ = _resume(target, "build")
    wheels = target / "contract-wheels"
    report = _step(
        "contracts",
        lambda: run_contracts(
            engine,
            state.config_digest,
            suite=suite,
            wheelhouse=wheels if wheels.is_dir() else None,
            output_dir=target,
        ),
    )
    summary = f"{len(report.passed)} passed, {len(report.failed)} failed"
    if not report.ok or report.failed or not report.passed:
        raise ReleaseError(
            f"release stopped at step 'contracts': {summary}",
            hint="nothing was pushed or tagged; fix the image and release again",
        )
    state = state.record("contracts", {"ok": True, "version": Contract.shipped().version, "summary": summary})
    state.save(target)
    return state


def _plan(describe: Describe) -> BuildPlan:
    # The plan is made from the checkout: provenance refuses it unless the image's labels
    # (commit, assembler format, contract version) agree with it.
    return plan_for(BuildOptions(spec_path=describe.image_dir / "image.toml"))


def describe(target: Path, options: Describe) -> ReleaseState:
    """Step 3: the SBOM and the provenance of the image, from the plan's locks."""
    state, layout, ref = _resume(target, "contracts")
    planned = _step("describe", lambda: _plan(options))
    sbom_text = _step(
        "describe",
        lambda: generate(
            SbomOptions(
                layout=layout,
                repository=ref.name,
                version=state.version,
                source_date_epoch=planned.locks.source_date_epoch,
                locks=planned.locks.image(),
            )
        ),
    )
    sbom_path = target / SBOM_FILE
    durable.write(sbom_path, sbom_text.encode())
    predicate = _step(
        "describe",
        lambda: provenance.generate(
            provenance.ProvenanceOptions(
                layout=layout,
                plan=planned,
                repository=ref.name,
                version=state.version,
                builder_id=options.builder_id,
                invocation_id=options.invocation_id,
                sbom=sbom_path,
            )
        ),
    )
    provenance_path = target / PROVENANCE_FILE
    durable.write(provenance_path, provenance.dumps(predicate).encode())
    locks = planned.locks
    state = state.record(
        "describe",
        {
            "sbom": {"path": SBOM_FILE, "sha256": _sha256_file(sbom_path)},
            "provenance": {"path": PROVENANCE_FILE, "sha256": _sha256_file(provenance_path)},
            "locks": {
                Path(f.path).name: f"sha256:{f.sha256.removeprefix('sha256:')}"
                for f in (locks.debian_file, locks.wheels_file, locks.backend_file)
            },
        },
    )
    state.save(target)
    return state


def push(target: Path, client: RegistryClient, *, on_progress: ProgressCallback | None = None) -> ReleaseState:
    """Step 4: push the image by digest; no tag yet (``on_progress`` hears about each blob)."""
    state, layout, ref = _resume(target, "describe")
    pushed = _step("push", lambda: client.push_layout(layout, ref.repository, on_progress=on_progress))
    if pushed.digest != state.manifest_digest:
        raise ReleaseError(f"the registry holds {pushed.digest}, not the built {state.manifest_digest}")
    state = state.record("push", {"reference": ref.with_digest(pushed.digest).pinned})
    state.save(target)
    return state


def _described(target: Path, state: ReleaseState, name: str) -> Path:
    """A file the describe step wrote, unchanged since."""
    record = state.require("describe")[name]
    path = target / str(record["path"])
    if not path.is_file() or _sha256_file(path) != record["sha256"]:
        raise ReleaseError(
            f"{path} changed since the describe step recorded it",
            hint="run 'terminai-sandbox release describe' again",
        )
    return path


def sign(target: Path, client: RegistryClient, signer: ReleaseSigner) -> ReleaseState:
    """Step 5: sign the pushed digest and attest the SBOM and the provenance."""
    state, _, ref = _resume(target, "push")
    predicates = [
        (dsse.PREDICATE_TYPES["cyclonedx"], json.loads(_described(target, state, "sbom").read_text())),
        (dsse.PREDICATE_TYPES["slsaprovenance1"], json.loads(_described(target, state, "provenance").read_text())),
    ]
    signed = _step(
        "sign",
        lambda: signer.sign(client, ref.repository, state.manifest_digest, ref.name, predicates, target),
    )
    state = state.record("sign", signed)
    state.save(target)
    return state


def verify(target: Path, client: RegistryClient, policy: VerificationPolicy) -> ReleaseState:
    """Step 6: verify the registry's copy; export its signatures for air-gapped checks."""
    state, _, ref = _resume(target, "sign")
    pinned = ref.with_digest(state.manifest_digest)
    verified = _step("verify", lambda: verify_image(pinned, policy, client=client, attestations=ATTESTED))
    _step("verify", lambda: export_offline(RegistryStore(client, ref.repository), state.manifest_digest, target))
    state = state.record("verify", {"verified": verified.to_dict()})
    state.save(target)
    return state


def tag(target: Path, client: RegistryClient) -> ReleaseState:
    """Step 7: the version tag, on the manifest that verified."""
    state, layout, ref = _resume(target, "verify")
    put = _step(
        "tag",
        lambda: client.put_manifest(ref.repository, state.version, layout.manifest_bytes, layout.manifest.media_type),
    )
    if put != state.manifest_digest:
        raise ReleaseError(f"the registry tagged {put}, not the verified {state.manifest_digest}")
    state = state.record("tag", {"tag": f"{ref.name}:{state.version}"})
    state.save(target)
    return state


def manifest(target: Path) -> dict[str, Any]:
    """Step 8: write ``release.json`` from the state (the only writer of that file)."""
    state, _, ref = _resume(target, "tag")
    tagged = state.require("tag")
    described = state.require("describe")
    for name in ("sbom", "provenance"):
        _described(target, state, name)
    signed = state.require("sign")
    contract = state.require("contracts")
    signatures: dict[str, Any] = {
        "signature_tag": f"{ref.name}:{sig_format.signature_tag(state.manifest_digest)}",
        "attestation_tag": f"{ref.name}:{dsse.attestation_tag(state.manifest_digest)}",
        "verified": state.require("verify")["verified"],
        **signed,
    }
    body = {
        "version": state.version,
        "tag": tagged["tag"],
        "reference": state.require("push")["reference"],
        "manifest_digest": state.manifest_digest,
        "config_digest": state.config_digest,
        "locks": described["locks"],
        "sbom": described["sbom"],
        "provenance": described["provenance"],
        "signatures": signatures,
        "contracts": {"version": contract["version"], "ok": contract["ok"], "summary": contract["summary"]},
    }
    durable.write(target / MANIFEST_FILE, (json.dumps(body, indent=2, sort_keys=True) + "\n").encode())
    state.record("manifest", {"path": MANIFEST_FILE, "sha256": _sha256_file(target / MANIFEST_FILE)}).save(target)
    return body
