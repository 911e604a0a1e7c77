"""Every emitted object validates against the pinned upstream schemas, and the validator is live."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from terminai_sandbox.kube.hardening import SessionShape
from terminai_sandbox.signing.verify.trust import KeylessIdentity, VerificationPolicy

from tests.fixtures import kube_schemas
from tests.unit.kube.support import by_kind, emitted, key_policy, keyless_policy

KINDS = {"RuntimeClass", "ClusterImagePolicy", "ClusterPolicy", "NetworkPolicy", "SandboxTemplate", "Pod", "Job"}


@pytest.mark.parametrize("name", sorted(kube_schemas.PINNED))
def test_the_schema_files_are_the_pinned_upstream_bytes(name: str) -> None:
    assert kube_schemas.sha256(name) == kube_schemas.PINNED[name]


def test_the_readme_names_every_pinned_file_and_hash() -> None:
    readme = (kube_schemas.ROOT / "README.md").read_text()
    for name, digest in kube_schemas.PINNED.items():
        assert name in readme and digest in readme, name


def _policies(tmp: Path) -> dict[str, VerificationPolicy]:
    key, _ = key_policy(tmp)
    regexp = VerificationPolicy(
        identities=(KeylessIdentity(identity_regexp="^https://github.com/terminai/.*$", issuer_regexp="^https://.*$"),),
        mode="warn",
    )
    return {"key": key, "keyless": keyless_policy(), "both+regexp": key.compose(keyless_policy()).compose(regexp)}


@pytest.mark.parametrize("which", ["key", "keyless", "both+regexp"])
@pytest.mark.parametrize("runtime_class", ["gvisor", None])
def test_every_emitted_object_validates(tmp_path: Path, which: str, runtime_class: str | None) -> None:
    objects = emitted(_policies(tmp_path)[which], SessionShape(runtime_class=runtime_class))
    kinds = {obj["kind"] for obj in objects}
    assert kinds == (KINDS if runtime_class else KINDS - {"RuntimeClass"})
    for obj in objects:
        assert kube_schemas.errors(obj) == [], obj["kind"]


def _set(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    broken = copy.deepcopy(obj)
    *parents, last = path.split(".")
    node: Any = broken
    for part in parents:
        node = node[int(part)] if part.isdigit() else node[part]
    node[int(last) if last.isdigit() else last] = value
    return broken


@pytest.mark.parametrize(
    ("kind", "path", "value", "message"),
    [
        ("Pod", "spec.securityContext.runAsUser", "10001", "is not of type"),
        ("Pod", "spec.containers.0.securityContext.readOnlyRootFilesystm", True, "Additional properties"),
        ("Job", "spec.backoffLimit", "none", "is not of type"),
        ("NetworkPolicy", "spec.policyTypes", "Ingress", "is not of type"),
        ("RuntimeClass", "handler", 7, "is not of type"),
        ("SandboxTemplate", "spec.networkPolicyManagement", "Sometimes", "is not one of"),
        ("SandboxTemplate", "spec.podTemplate.spec.containers.0.securityContext.runAsUser", "root", "is not of type"),
        ("SandboxTemplate", "spec.podTemplate.spec.runtimeClass", "gvisor", "Additional properties"),
        ("ClusterImagePolicy", "spec.authorities", {"key": "x"}, "is not of type"),
        ("ClusterImagePolicy", "spec.authorities.0.key.pem", "x", "Additional properties"),
        ("ClusterPolicy", "spec.rules.0.verifyImages.0.failureAction", "Refuse", "is not one of"),
        ("ClusterPolicy", "spec.rules.0.verifyImages.0.attestors.0.count", "one", "is not of type"),
    ],
)
def test_a_broken_object_fails_validation(tmp_path: Path, kind: str, path: str, value: Any, message: str) -> None:
    obj = by_kind(emitted(_policies(tmp_path)["key"]))[kind]
    assert kube_schemas.errors(obj) == []
    found = kube_schemas.errors(_set(obj, path, value))
    assert any(message in error for error in found), found


def test_an_unpinned_kind_has_no_schema_to_pass_against() -> None:
    with pytest.raises(AssertionError, match="no pinned schema"):
        kube_schemas.validator({"apiVersion": "agents.x-k8s.io/v1alpha1", "kind": "Sandbox"})
