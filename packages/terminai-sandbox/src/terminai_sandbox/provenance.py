"""SLSA v1 provenance (``https://slsa.dev/provenance/v1``) of a built image, from its build plan.

The predicate says how the image was made, not what is in it (that is the SBOM). It
records exactly what the :class:`~terminai_sandbox.assemble.plan.BuildPlan` declared:

* ``buildDefinition.buildType``: :data:`BUILD_TYPE`, this project's build (documented in
  ``docs/VERIFYING.md``).
* ``externalParameters``: what the person or workflow chose: the release version and
  repository, the image spec file and the source it was built from.
* ``internalParameters``: what the plan fixed itself: SOURCE_DATE_EPOCH (from
  ``debian.lock``), the assembler format, the image's interpreter and its wheel tags, and
  the key of every stage (the base and wheels keys are the ``inputs`` of ``layers.lock``).
* ``resolvedDependencies``: every dependency a stage declared, with its digest: the source
  commit, the lock files, image spec, entrypoint and T-APTS source tree (sha256), each
  ``.deb`` (sha256 from ``debian.lock``) and each wheel (sha256 from the wheel locks).
* ``runDetails.builder``: who ran the build (the CI workflow's identity, or
  :data:`LOCAL_BUILDER`) and the ``terminai-sandbox`` version; ``byproducts``: the SBOM.

The image's own OCI labels must agree with the plan (source commit, assembler format,
contract version): a plan of another checkout than the image's is refused rather than
recorded. Nothing depends on the clock or the host, so the same image and plan give the
same bytes. The statement's subject (the image manifest digest) is added when the
predicate is attested.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from terminai_sandbox._version import __version__
from terminai_sandbox.artifacts.contract import LABEL as CONTRACT_LABEL
from terminai_sandbox.artifacts.oci_layout import OciLayout
from terminai_sandbox.assemble.plan import BuildPlan
from terminai_sandbox.errors import SbomError, VerificationError

PREDICATE_TYPE = "https://slsa.dev/provenance/v1"
BUILD_TYPE = "https://github.com/terminai/sovereign-sandbox/blob/main/docs/VERIFYING.md#build-type-v1"
#: A maintainer's machine running ``terminai-sandbox release``; the signing key vouches for it.
LOCAL_BUILDER = "urn:terminai-sandbox:builder:local"
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


@dataclass(frozen=True, slots=True, kw_only=True)
class ProvenanceOptions:
    layout: OciLayout  # the built image
    plan: BuildPlan  # what it was built from
    repository: str
    version: str
    builder_id: str = LOCAL_BUILDER
    invocation_id: str | None = None  # e.g. the CI run's URL
    sbom: Path | None = None  # recorded as a byproduct


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


#: Labels the build writes from the plan: the image and the plan must agree on each.
_PLANNED_LABELS = (
    "org.opencontainers.image.revision",
    "dev.terminai.assembler-format",
    CONTRACT_LABEL,
)


def _check_plan_matches(layout: OciLayout, labels: Mapping[str, str], plan: BuildPlan) -> None:
    planned = dict(plan.labels)
    for label in _PLANNED_LABELS:
        found, wanted = labels.get(label), planned.get(label)
        if (found or "") != (wanted or ""):
            raise SbomError(
                f"{layout.root}: the image's {label} is {found!r}, but the build plan gives {wanted!r}",
                hint="generate provenance from the checkout (commit, locks, sources) the image was built from",
            )


def generate(options: ProvenanceOptions) -> dict[str, Any]:
    """The SLSA v1 provenance predicate for the image in ``options.layout``."""
    labels = options.layout.labels()
    commit = str(labels.get("org.opencontainers.image.revision", ""))
    source = str(labels.get("org.opencontainers.image.source", ""))
    if not _COMMIT.match(commit) or not source:
        raise SbomError(
            f"{options.layout.root}: the image does not name its source commit "
            "(labels org.opencontainers.image.revision and .source)",
            hint="build from a git checkout with 'terminai-sandbox build'",
        )
    _check_plan_matches(options.layout, labels, options.plan)
    source_uri = f"git+{source}@{commit}"
    dependencies = [d.descriptor() for d in options.plan.dependencies()]
    run_details: dict[str, Any] = {
        "builder": {"id": options.builder_id, "version": {"terminai-sandbox": __version__}},
    }
    if options.invocation_id:
        run_details["metadata"] = {"invocationId": options.invocation_id}
    if options.sbom is not None:
        run_details["byproducts"] = [
            {
                "name": options.sbom.name,
                "digest": {"sha256": _sha256(options.sbom)},
                "mediaType": "application/vnd.cyclonedx+json",
            }
        ]
    predicate: dict[str, Any] = {
        "buildDefinition": {
            "buildType": BUILD_TYPE,
            "externalParameters": {
                "repository": options.repository,
                "version": options.version,
                "imageSpec": options.plan.image_spec,
                "source": source_uri,
            },
            "internalParameters": options.plan.parameters(),
            "resolvedDependencies": dependencies,
        },
        "runDetails": run_details,
    }
    return predicate


def dumps(predicate: Mapping[str, Any]) -> str:
    """Canonical text: sorted keys, two-space indent, final newline (stable bytes)."""
    return json.dumps(predicate, indent=2, sort_keys=True) + "\n"


def _descriptor_problem(item: Any) -> str | None:
    if not isinstance(item, dict):
        return "a resource descriptor is not an object"
    if not any(item.get(k) for k in ("uri", "name", "digest")):
        return "a resource descriptor has neither uri, name nor digest"
    digest = item.get("digest", {})
    if not isinstance(digest, dict) or not all(isinstance(v, str) and v for v in digest.values()):
        return f"resource descriptor {item.get('uri') or item.get('name')!r} has a malformed digest"
    return None


def check_predicate(predicate: Any) -> None:
    """Refuse a provenance predicate without the fields SLSA v1 requires."""
    problems: list[str] = []
    if not isinstance(predicate, dict):
        raise VerificationError("provenance predicate is not a JSON object")
    definition = predicate.get("buildDefinition")
    details = predicate.get("runDetails")
    if not isinstance(definition, dict) or not isinstance(details, dict):
        raise VerificationError("provenance predicate lacks buildDefinition or runDetails")
    if not isinstance(definition.get("buildType"), str) or not definition["buildType"]:
        problems.append("buildDefinition.buildType is missing")
    if not isinstance(definition.get("externalParameters"), dict) or not definition["externalParameters"]:
        problems.append("buildDefinition.externalParameters is missing")
    builder = details.get("builder")
    if not isinstance(builder, dict) or not isinstance(builder.get("id"), str) or not builder["id"]:
        problems.append("runDetails.builder.id is missing")
    for key, where in (("resolvedDependencies", definition), ("byproducts", details)):
        items = where.get(key, [])
        if not isinstance(items, list):
            problems.append(f"{key} is not a list")
            continue
        problems += [p for p in map(_descriptor_problem, items) if p]
    if problems:
        raise VerificationError(f"malformed SLSA provenance: {'; '.join(sorted(set(problems)))}")


def summary(predicate: Mapping[str, Any]) -> dict[str, Any]:
    """What an auditor reads first: builder, source, and how many inputs were pinned."""
    definition = predicate.get("buildDefinition", {})
    details = predicate.get("runDetails", {})
    return {
        "builder": details.get("builder", {}).get("id"),
        "buildType": definition.get("buildType"),
        "source": definition.get("externalParameters", {}).get("source"),
        "resolvedDependencies": len(definition.get("resolvedDependencies", [])),
    }


def builder_from_env(env: Mapping[str, str], builder_id: str | None) -> tuple[str, str | None]:
    """The provenance's builder and invocation: the GitHub Actions workflow run when run there."""
    invocation = None
    if env.get("GITHUB_ACTIONS") == "true" and env.get("GITHUB_WORKFLOW_REF"):
        server = env.get("GITHUB_SERVER_URL", "https://github.com")
        # the same identity the keyless signing certificate carries for this workflow run
        builder_id = builder_id or f"{server}/{env['GITHUB_WORKFLOW_REF']}"
        if env.get("GITHUB_RUN_ID"):
            attempt = env.get("GITHUB_RUN_ATTEMPT", "1")
            invocation = (
                f"{server}/{env.get('GITHUB_REPOSITORY')}/actions/runs/{env['GITHUB_RUN_ID']}/attempts/{attempt}"
            )
    return builder_id or LOCAL_BUILDER, invocation
