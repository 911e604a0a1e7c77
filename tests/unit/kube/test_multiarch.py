"""Mixed-architecture node pools: the pod names the verified index digest, and schedules only
onto Linux nodes of an architecture the index lists; a single-manifest image renders as before."""

from __future__ import annotations

from pathlib import Path

import yaml
from terminai_sandbox.common.reference import ImageRef
from terminai_sandbox.kube.hardening import SessionShape
from terminai_sandbox.kube.manifests import manifests
from terminai_sandbox.kube.render import to_yaml
from terminai_sandbox.kube.source import VerifiedSource
from terminai_sandbox.signing.verify.result import PlatformResult, VerificationResult

from tests.fixtures import kube_schemas
from tests.unit.kube.support import DIGEST, REFERENCE, by_kind, emitted, key_policy

ARM = "sha256:" + "cd" * 32
AMD = "sha256:" + "ef" * 32


def _index_source(tmp: Path) -> VerifiedSource:
    policy, _ = key_policy(tmp)
    ref = ImageRef.parse(REFERENCE).with_digest(DIGEST)
    platforms = (
        PlatformResult(platform="linux/arm64", digest=ARM, signatures=()),
        PlatformResult(platform="linux/amd64", digest=AMD, signatures=()),
    )
    result = VerificationResult(
        digest=DIGEST, repository=ref.name, signatures=(), policy_fingerprint=policy.fingerprint(), platforms=platforms
    )
    return VerifiedSource(ref=ref, policy=policy, result=result)


def _pod_specs(objects: list[dict[str, object]]) -> list[dict[str, object]]:
    kinds = by_kind(objects)  # type: ignore[arg-type]
    return [
        kinds["Pod"]["spec"],
        kinds["Job"]["spec"]["template"]["spec"],
        kinds["SandboxTemplate"]["spec"]["podTemplate"]["spec"],
    ]


def test_an_index_renders_its_digest_and_an_architecture_affinity(tmp_path: Path) -> None:
    objects = manifests(_index_source(tmp_path), SessionShape(), "sandboxes")
    parsed = list(yaml.safe_load_all(to_yaml(objects)))  # the YAML a cluster reads
    for spec in _pod_specs(parsed):
        assert spec["containers"][0]["image"] == f"{REFERENCE}@{DIGEST}"  # the index, never a platform
        terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert terms["nodeSelectorTerms"] == [
            {
                "matchExpressions": [
                    {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]},
                ]
            }
        ]
    text = to_yaml(objects)
    assert ARM not in text and AMD not in text
    for obj in parsed:
        assert kube_schemas.errors(obj) == [], obj["kind"]


def test_a_single_manifest_has_no_affinity(tmp_path: Path) -> None:
    policy, _ = key_policy(tmp_path)
    for spec in _pod_specs(emitted(policy)):
        assert "affinity" not in spec
