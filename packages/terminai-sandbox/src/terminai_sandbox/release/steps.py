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

A multi-platform release (the build callable returns an index, :class:`.platforms.BuiltIndex`)
keeps the same steps over one OCI image index in ``dist/X.Y.Z/oci``: the contracts pass
on every platform, each platform has its own SBOM and provenance, each platform manifest
is signed and attested and then the index is signed, verification checks the index rule
(step 1i) and every platform, and ``X.Y.Z`` tags the index's exact bytes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from terminai_apts import durable

from terminai_sandbox import provenance
from terminai_sandbox.artifacts.contract import Contract
from terminai_sandbox.artifacts.oci_layout import IndexLayout, OciLayout
from terminai_sandbox.assemble import BuildOptions, BuildPlan, plan_for
from terminai_sandbox.assemble.oci import link_or_copy
from terminai_sandbox.common.reference import ImageRef
from terminai_sandbox.contracts import run_contracts
from terminai_sandbox.engine.client import DockerApi
from terminai_sandbox.errors import ArtifactError, ReleaseError, SandboxError
from terminai_sandbox.registry import ProgressCallback, RegistryClient
from terminai_sandbox.release import platforms as each
from terminai_sandbox.release.signing import ReleaseSigner
from terminai_sandbox.release.state import ReleaseState
from terminai_sandbox.sbom import SbomOptions, generate
from terminai_sandbox.signing.formats import dsse
from terminai_sandbox.signing.formats import sig as sig_format
from terminai_sandbox.signing.store import RegistryStore, export_offline
from terminai_sandbox.signing.verify.image import verify_image
from terminai_sandbox.signing.verify.trust import VerificationPolicy

ATTESTED = ("cyclonedx", "slsaprovenance1")
SBOM_FILE, PROVENANCE_FILE = each.SBOM_FILE, each.PROVENANCE_FILE
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


def _layout(target: Path, state: ReleaseState) -> OciLayout | IndexLayout:
    try:
        if state.is_index:
            index = IndexLayout.open(target / "oci")
            state.check_image(index.index_digest)
            problem = each.layout_problem(index, state.platforms)
            if problem:
                raise ReleaseError(
                    f"the index in {target / 'oci'} is not the release's: {problem}",
                    hint="run 'terminai-sandbox release build' again for this index",
                )
            return index
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


def _resume(target: Path, after: str) -> tuple[ReleaseState, OciLayout | IndexLayout, ImageRef]:
    """The state, the image and the repository of a release whose step ``after`` passed."""
    state = ReleaseState.load(target)
    state.require(after)
    return state, _layout(target, state), _ref(state)


def build(
    target: Path, *, version: str, repository: str, image: Callable[[], BuiltImage | each.BuiltIndex]
) -> ReleaseState:
    """Step 1: build (or take) the image, or the index, and place its OCI layout in ``target/oci``."""
    ImageRef.parse(repository, what="release repository")  # refused before anything is built
    made = [p for p in (target, *target.parents) if not p.exists()]  # what this step creates
    target.mkdir(parents=True, exist_ok=True)
    try:
        built: BuiltImage | each.BuiltIndex = _step("build", image)
    except BaseException:
        # A failed first build (outside a checkout, say) leaves no empty dist/X.Y.Z behind;
        # a directory that held an earlier release's files is not touched.
        if made:
            shutil.rmtree(made[0], ignore_errors=True)
            for parent in made[1:]:
                with contextlib.suppress(OSError):
                    parent.rmdir()
        raise
    if isinstance(built, each.BuiltIndex):
        root, digest, config_digest, platforms = built.layout, built.index_digest, "", each.digests_of(built)
    else:
        root, digest, config_digest, platforms = built.oci_layout.root, built.manifest_digest, built.config_digest, {}
    if root.resolve() != (target / "oci").resolve():
        shutil.rmtree(target / "oci", ignore_errors=True)
        # Hard links: each blob of the release directory on disk once (the build's index is in build/).
        shutil.copytree(root, target / "oci", copy_function=link_or_copy)
    try:
        previous = ReleaseState.load(target)
    except ReleaseError:
        previous = ReleaseState(version=version, repository=repository, manifest_digest="", config_digest="")
    if previous.version != version or previous.repository != repository:
        previous = ReleaseState(version=version, repository=repository, manifest_digest="", config_digest="")
    state = previous.for_image(digest, config_digest, platforms)
    if state.passed("build") is None:  # the same image again keeps what passed for it
        record: dict[str, Any] = {"manifest_digest": digest}
        record.update({"platforms": platforms} if platforms else {"config_digest": config_digest})
        state = state.record("build", record)
    state.save(target)
    return state


def contracts(target: Path, engine: DockerApi, *, suite: Path | None = None) -> ReleaseState:
    """Step 2: run the contract suite (default: the one shipped with this version) inside the image."""
    state, _, _ = _resume(target, "build")
    wheels = target / "contract-wheels"
    # One image, or each platform's image of an index (a foreign one runs under qemu-user).
    images = (
        {name: (d["config_digest"], target / each.platform_dir(name)) for name, d in state.platforms.items()}
        if state.is_index
        else {"": (state.config_digest, target)}
    )
    per_platform: dict[str, dict[str, Any]] = {}
    passed = failed = 0
    for name, (config_digest, output_dir) in images.items():
        report = _step(
            "contracts",
            partial(
                run_contracts,
                engine,
                config_digest,
                suite=suite,
                wheelhouse=wheels if wheels.is_dir() else None,
                output_dir=output_dir,
            ),
        )
        summary = f"{len(report.passed)} passed, {len(report.failed)} failed"
        if not report.ok or report.failed or not report.passed:
            raise ReleaseError(
                f"release stopped at step 'contracts': {f'{name}: ' if name else ''}{summary}",
                hint="nothing was pushed or tagged; fix the image and release again",
            )
        passed, failed = passed + len(report.passed), failed + len(report.failed)
        per_platform[name] = {
            "ok": True,
            "summary": summary,
            "emulation": None if report.emulation is None else report.emulation.to_dict(),
        }
    outcome: dict[str, Any] = {
        "ok": True,
        "version": Contract.shipped().version,
        "summary": f"{passed} passed, {failed} failed",
    }
    if state.is_index:
        outcome["platforms"] = per_platform
    state = state.record("contracts", outcome)
    state.save(target)
    return state


def _plan(describe: Describe, platform: str | None = None) -> BuildPlan:
    # The plan is made from the checkout: provenance refuses it unless the image's labels
    # (commit, assembler format, contract version) agree with it.
    return plan_for(BuildOptions(spec_path=describe.image_dir / "image.toml", platform=platform))


def _lock_digests(planned: BuildPlan) -> dict[str, str]:
    locks = planned.locks
    return {
        Path(f.path).name: f"sha256:{f.sha256.removeprefix('sha256:')}"
        for f in (locks.debian_file, locks.wheels_file, locks.backend_file)
    }


def _sbom_text(layout: OciLayout, planned: BuildPlan, ref: ImageRef, version: str) -> str:
    return str(
        _step(
            "describe",
            lambda: generate(
                SbomOptions(
                    layout=layout,
                    repository=ref.name,
                    version=version,
                    source_date_epoch=planned.locks.source_date_epoch,
                    locks=planned.locks.image(),
                )
            ),
        )
    )


def _provenance_text(
    layout: OciLayout, planned: BuildPlan, ref: ImageRef, version: str, options: Describe, sbom: Path
) -> str:
    predicate = _step(
        "describe",
        lambda: provenance.generate(
            provenance.ProvenanceOptions(
                layout=layout,
                plan=planned,
                repository=ref.name,
                version=version,
                builder_id=options.builder_id,
                invocation_id=options.invocation_id,
                sbom=sbom,
            )
        ),
    )
    return provenance.dumps(predicate)


def _describe_index(
    target: Path, state: ReleaseState, index: IndexLayout, ref: ImageRef, options: Describe
) -> ReleaseState:
    """Step 3 of an index: each platform's SBOM and provenance, from that platform's plan."""
    images = each.images_by_platform(index)
    locks: dict[str, str] = {}
    files: dict[str, dict[str, Any]] = {}
    for name in state.platforms:
        planned: BuildPlan = _step("describe", partial(_plan, options, name))
        image = images[name]
        written = each.write_described(
            target,
            name,
            _sbom_text(image, planned, ref, state.version),
            partial(_provenance_text, image, planned, ref, state.version, options),
        )
        for lock, digest in _lock_digests(planned).items():  # per-arch locks have their own names
            if locks.setdefault(lock, digest) != digest:
                raise ReleaseError(
                    f"release stopped at step 'describe': two platforms read {lock} with different contents",
                    hint="each platform's locks must be its own file (debian.ARCH.lock) or the same bytes",
                )
        files[name] = {
            kind: {"path": each.relative(target, path), "sha256": _sha256_file(path)}
            for kind, path in (("sbom", written.sbom), ("provenance", written.provenance))
        }
    state = state.record("describe", {"locks": locks, "platforms": files})
    state.save(target)
    return state


def describe(target: Path, options: Describe) -> ReleaseState:
    """Step 3: the SBOM and the provenance of the image (of each platform), from the plan's locks."""
    state, layout, ref = _resume(target, "contracts")
    if isinstance(layout, IndexLayout):
        return _describe_index(target, state, layout, ref, options)
    planned = _step("describe", lambda: _plan(options))
    sbom_path = target / SBOM_FILE
    durable.write(sbom_path, _sbom_text(layout, planned, ref, state.version).encode())
    provenance_path = target / PROVENANCE_FILE
    provenance_text = _provenance_text(layout, planned, ref, state.version, options, sbom_path)
    durable.write(provenance_path, provenance_text.encode())
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
    if isinstance(layout, IndexLayout):  # every platform by digest, then the index's exact bytes
        pushed = _step("push", lambda: client.push_index_layout(layout, ref.repository, on_progress=on_progress))
    else:
        pushed = _step("push", lambda: client.push_layout(layout, ref.repository, on_progress=on_progress))
    if pushed.digest != state.manifest_digest:
        raise ReleaseError(f"the registry holds {pushed.digest}, not the built {state.manifest_digest}")
    state = state.record("push", {"reference": ref.with_digest(pushed.digest).pinned})
    state.save(target)
    return state


def _described(target: Path, state: ReleaseState, name: str, platform: str | None = None) -> Path:
    """A file the describe step wrote (for ``platform`` of an index), unchanged since."""
    described = state.require("describe")
    record = described[name] if platform is None else described["platforms"][platform][name]
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
    if state.is_index:
        return _sign_index(target, client, signer, state, ref)
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


def _sign_index(
    target: Path, client: RegistryClient, signer: ReleaseSigner, state: ReleaseState, ref: ImageRef
) -> ReleaseState:
    """Step 5 of an index: each platform signed and attested on its own digest, then the index."""
    signed_platforms: dict[str, Any] = {}
    for name, digests in state.platforms.items():
        folder = target / each.platform_dir(name)
        predicates = each.predicates_of(
            _described(target, state, "sbom", name), _described(target, state, "provenance", name)
        )
        signed_platforms[name] = _step(
            "sign",
            partial(signer.sign, client, ref.repository, digests["manifest_digest"], ref.name, predicates, folder),
        )
    # Last: an index signature never exists while one of its platforms is still unsigned.
    signed = _step("sign", lambda: signer.sign(client, ref.repository, state.manifest_digest, ref.name, [], target))
    state = state.record("sign", {**signed, "platforms": signed_platforms})
    state.save(target)
    return state


def verify(target: Path, client: RegistryClient, policy: VerificationPolicy) -> ReleaseState:
    """Step 6: verify the registry's copy; export its signatures for air-gapped checks."""
    state, _, ref = _resume(target, "sign")
    pinned = ref.with_digest(state.manifest_digest)
    verified = _step("verify", lambda: verify_image(pinned, policy, client=client, attestations=ATTESTED))
    children = tuple(d["manifest_digest"] for d in state.platforms.values())
    _step(
        "verify",
        lambda: export_offline(RegistryStore(client, ref.repository), state.manifest_digest, target, children=children),
    )
    state = state.record("verify", {"verified": verified.to_dict()})
    state.save(target)
    return state


def tag(target: Path, client: RegistryClient) -> ReleaseState:
    """Step 7: the version tag, on the manifest that verified."""
    state, layout, ref = _resume(target, "verify")
    # The exact bytes that were pushed, signed and verified (the index's, for an index).
    if isinstance(layout, IndexLayout):
        body, media_type = layout.index_bytes, layout.index.media_type
    else:
        body, media_type = layout.manifest_bytes, layout.manifest.media_type
    put = _step("tag", lambda: client.put_manifest(ref.repository, state.version, body, media_type))
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
    for platform in state.platforms or (None,):
        for name in ("sbom", "provenance"):
            _described(target, state, name, platform)
    signed = {k: v for k, v in state.require("sign").items() if k != "platforms"}
    contract = state.require("contracts")
    signatures: dict[str, Any] = {
        "signature_tag": f"{ref.name}:{sig_format.signature_tag(state.manifest_digest)}",
        "attestation_tag": f"{ref.name}:{dsse.attestation_tag(state.manifest_digest)}",
        "verified": state.require("verify")["verified"],
        **signed,
    }
    body: dict[str, Any] = {
        "version": state.version,
        "tag": tagged["tag"],
        "reference": state.require("push")["reference"],
        "manifest_digest": state.manifest_digest,
        "locks": described["locks"],
        "signatures": signatures,
        "contracts": {"version": contract["version"], "ok": contract["ok"], "summary": contract["summary"]},
    }
    if state.is_index:
        body["index_digest"] = state.manifest_digest
        body["platforms"] = _platform_entries(state, ref)
    else:
        body.update(config_digest=state.config_digest, sbom=described["sbom"], provenance=described["provenance"])
    durable.write(target / MANIFEST_FILE, (json.dumps(body, indent=2, sort_keys=True) + "\n").encode())
    state.record("manifest", {"path": MANIFEST_FILE, "sha256": _sha256_file(target / MANIFEST_FILE)}).save(target)
    return body


def _platform_entries(state: ReleaseState, ref: ImageRef) -> dict[str, Any]:
    """release.json's ``platforms``: what each platform is, its files, contracts and signatures."""
    described = state.require("describe")["platforms"]
    contracts = state.require("contracts")["platforms"]
    signed = state.require("sign").get("platforms", {})
    out: dict[str, Any] = {}
    for name, digests in state.platforms.items():
        digest = digests["manifest_digest"]
        out[name] = {
            "manifest_digest": digest,
            "config_digest": digests["config_digest"],
            "reference": ref.with_digest(digest).pinned,
            "sbom": described[name]["sbom"],
            "provenance": described[name]["provenance"],
            "contracts": dict(contracts[name]),
            "signatures": {
                "signature_tag": f"{ref.name}:{sig_format.signature_tag(digest)}",
                "attestation_tag": f"{ref.name}:{dsse.attestation_tag(digest)}",
                **signed.get(name, {}),
            },
        }
    return out
