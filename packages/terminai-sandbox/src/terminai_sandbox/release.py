"""``release``: build → contracts → SBOM, provenance → push by digest → sign → attest → verify → manifest.

Every step must pass before the next starts. The version tag (``X.Y.Z``) is written to the
registry only after the contracts passed *and* the pushed image verified; until then the
image exists in the registry only by digest. The SBOM and the SLSA v1 provenance are both
attested (cosign ``.att``) and both verified before the tag. The result is
``dist/X.Y.Z/release.json`` plus, next to it, everything an air-gapped verifier needs
(``oci/``, ``signatures.json``, ``sbom.cdx.json``, ``provenance.slsa.json``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from cryptography.hazmat.primitives.asymmetric import ec
from terminai_apts import durable

from terminai_sandbox import provenance
from terminai_sandbox.artifacts.oci_layout import OciLayout
from terminai_sandbox.assemble import BuildPlan
from terminai_sandbox.errors import ReleaseError, SandboxError
from terminai_sandbox.launch.reference import ImageRef
from terminai_sandbox.registry import RegistryClient
from terminai_sandbox.sbom import SbomOptions, generate
from terminai_sandbox.signing import sign
from terminai_sandbox.signing.formats import dsse, keys
from terminai_sandbox.signing.formats import sig as sig_format
from terminai_sandbox.signing.store import RegistryStore, export_offline
from terminai_sandbox.signing.verify.image import verify_image
from terminai_sandbox.signing.verify.trust import TrustedKey, VerificationPolicy


class BuiltImage(Protocol):
    @property
    def oci_layout(self) -> OciLayout: ...
    @property
    def manifest_digest(self) -> str: ...
    @property
    def config_digest(self) -> str: ...
    @property
    def reference(self) -> str: ...
    @property
    def source_date_epoch(self) -> int: ...
    @property
    def plan(self) -> BuildPlan | None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class ContractOutcome:
    ok: bool
    version: str
    summary: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ReleaseOptions:
    repository: str  # registry/repo, e.g. 127.0.0.1:5000/terminai/sandbox
    version: str
    dist_root: Path
    image_dir: Path
    insecure: bool = False
    builder_id: str = provenance.LOCAL_BUILDER


def _sha256_file(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def _step(name: str, action: Callable[[], Any]) -> Any:
    try:
        return action()
    except SandboxError as exc:
        raise ReleaseError(f"release stopped at step '{name}': {exc.message}", hint=exc.hint) from None


def release(
    options: ReleaseOptions,
    *,
    build: Callable[[], BuiltImage],
    contracts: Callable[[BuiltImage], ContractOutcome],
    key: ec.EllipticCurvePrivateKey,
    client: RegistryClient | None = None,
) -> dict[str, Any]:
    """Run the release; return (and write) the release manifest."""
    target = options.dist_root / options.version
    target.mkdir(parents=True, exist_ok=True)
    image: BuiltImage = _step("build", build)
    outcome: ContractOutcome = _step("contracts", lambda: contracts(image))
    if not outcome.ok:
        raise ReleaseError(
            f"release stopped at step 'contracts': {outcome.summary}",
            hint="nothing was pushed or tagged; fix the image and release again",
        )
    ref = ImageRef.parse(options.repository, what="release repository")
    layout = image.oci_layout
    built_plan = image.plan
    if built_plan is None:
        raise ReleaseError(
            "release stopped at step 'build': the build returned no plan (the SBOM and provenance record its inputs)"
        )
    sbom_text = _step(
        "sbom",
        lambda: generate(
            SbomOptions(
                layout=layout,
                repository=ref.name,
                version=options.version,
                source_date_epoch=image.source_date_epoch,
                locks=built_plan.locks.image(),  # the locks the image was planned from
            )
        ),
    )
    sbom_path = target / "sbom.cdx.json"
    durable.write(sbom_path, sbom_text.encode())
    predicate = _step(
        "provenance",
        lambda: provenance.generate(
            provenance.ProvenanceOptions(
                layout=layout,
                plan=built_plan,
                repository=ref.name,
                version=options.version,
                builder_id=options.builder_id,
                sbom=sbom_path,
            )
        ),
    )
    provenance_path = target / "provenance.slsa.json"
    durable.write(provenance_path, provenance.dumps(predicate).encode())
    client = client or RegistryClient(ref.registry, insecure=options.insecure)
    pushed = _step("push", lambda: client.push_layout(layout, ref.repository))  # by digest, no tag yet
    if pushed.digest != image.manifest_digest:
        raise ReleaseError(f"the registry holds {pushed.digest}, not the built {image.manifest_digest}")
    pinned = ref.with_digest(pushed.digest)
    payload, signature, _ = _step(
        "sign", lambda: sign.sign(client, ref.repository, pushed.digest, key, docker_reference=ref.name)
    )
    for kind, body in (("cyclonedx", json.loads(sbom_text)), ("slsaprovenance1", predicate)):
        _step(
            "attest",
            functools.partial(
                sign.attest,
                client,
                ref.repository,
                pushed.digest,
                key,
                subject_name=ref.name,
                predicate_uri=dsse.PREDICATE_TYPES[kind],
                predicate=body,
            ),
        )
    public = keys.public_pem(key)
    policy = VerificationPolicy(keys=(TrustedKey(pem=public, source="release key"),))
    verified = _step(
        "verify",
        lambda: verify_image(pinned, policy, client=client, attestations=("cyclonedx", "slsaprovenance1")),
    )
    _step(
        "tag",
        lambda: client.put_manifest(ref.repository, options.version, layout.manifest_bytes, layout.manifest.media_type),
    )
    if layout.root.resolve() != (target / "oci").resolve():
        shutil.rmtree(target / "oci", ignore_errors=True)
        shutil.copytree(layout.root, target / "oci")
    _step("export", lambda: export_offline(RegistryStore(client, ref.repository), pushed.digest, target))
    durable.write(target / "cosign.pub", public)
    durable.write(target / "payload.json", payload)
    durable.write(target / "payload.sig", signature)
    manifest = {
        "version": options.version,
        "tag": f"{ref.name}:{options.version}",
        "reference": pinned.pinned,
        "manifest_digest": pushed.digest,
        "config_digest": image.config_digest,
        "locks": {p.name: _sha256_file(p) for p in sorted(options.image_dir.glob("*.lock")) if p.is_file()},
        "sbom": {"path": "sbom.cdx.json", "sha256": _sha256_file(sbom_path)},
        "provenance": {"path": "provenance.slsa.json", "sha256": _sha256_file(provenance_path)},
        "signatures": {
            "signature_tag": f"{ref.name}:{sig_format.signature_tag(pushed.digest)}",
            "attestation_tag": f"{ref.name}:{dsse.attestation_tag(pushed.digest)}",
            "key_id": keys.key_id(key.public_key()),
            "verified": verified.to_dict(),
        },
        "contracts": {"version": outcome.version, "ok": outcome.ok, "summary": outcome.summary},
    }
    durable.write(target / "release.json", (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode())
    return manifest
