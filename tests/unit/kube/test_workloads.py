"""The workloads: pinned by digest, hardened with ``run``'s values, deterministic."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from terminai_sandbox.common.hardening import HARDENED_LIMITS, HOME_IN_IMAGE, HOME_SIZE, IMAGE_UID, TMP_SIZE
from terminai_sandbox.errors import ConfigError
from terminai_sandbox.kube.hardening import SessionShape, pod_spec, quantity
from terminai_sandbox.kube.render import to_json, to_yaml, write_dir
from terminai_sandbox.kube.source import verified_source

from tests.unit.kube.support import DIGEST, REFERENCE, by_kind, emitted, key_policy, keyless_policy


def _pod_specs(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    kinds = by_kind(objects)
    return {
        "SandboxTemplate": kinds["SandboxTemplate"]["spec"]["podTemplate"]["spec"],
        "Pod": kinds["Pod"]["spec"],
        "Job": kinds["Job"]["spec"]["template"]["spec"],
    }


def _images(node: Any) -> list[str]:
    if isinstance(node, dict):
        return [v for k, v in node.items() if k == "image" and isinstance(v, str)] + [
            i for v in node.values() for i in _images(v)
        ]
    if isinstance(node, list):
        return [i for v in node for i in _images(v)]
    return []


def test_every_image_is_named_by_the_verified_digest() -> None:
    objects = emitted(keyless_policy())
    images = _images(objects)
    assert images == [f"{REFERENCE}@{DIGEST}"] * 3


def test_a_pod_spec_refuses_an_image_not_pinned_to_its_digest() -> None:
    with pytest.raises(ConfigError, match="not pinned"):
        pod_spec(f"{REFERENCE}:0.1.0", DIGEST, SessionShape(), restart="Never")


def test_a_reference_with_neither_tag_nor_digest_is_refused_before_any_network() -> None:
    # No registry listens on this port: the refusal must come first.
    with pytest.raises(ConfigError, match="neither tag nor digest"):
        verified_source("127.0.0.1:9/terminai/sandbox", keyless_policy())


def test_the_hardening_is_run_s(tmp_path: Path) -> None:
    for kind, spec in _pod_specs(emitted(key_policy(tmp_path)[0])).items():
        [container] = spec["containers"]
        context = container["securityContext"]
        assert context["runAsUser"] == context["runAsGroup"] == IMAGE_UID == spec["securityContext"]["runAsUser"], kind
        assert context["runAsNonRoot"] is True and context["readOnlyRootFilesystem"] is True
        assert context["allowPrivilegeEscalation"] is False and context["privileged"] is False
        assert context["capabilities"] == {"drop": ["ALL"]}
        assert context["seccompProfile"] == spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        assert spec["automountServiceAccountToken"] is False and spec["enableServiceLinks"] is False
        assert spec["runtimeClassName"] == "gvisor"
        assert container["resources"]["limits"] == {"cpu": HARDENED_LIMITS.cpus, "memory": "2Gi"}
        mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
        volumes = {v["name"]: v["emptyDir"] for v in spec["volumes"]}
        assert volumes[mounts["/tmp"]] == {"medium": "Memory", "sizeLimit": quantity(TMP_SIZE)}
        assert volumes[mounts[HOME_IN_IMAGE]] == {"medium": "Memory", "sizeLimit": quantity(HOME_SIZE)}
        assert "medium" not in volumes[mounts["/workspace"]] and container["workingDir"] == "/workspace"
        assert {"name": "HOME", "value": HOME_IN_IMAGE} in container["env"]


def test_the_network_is_denied_both_ways() -> None:
    kinds = by_kind(emitted(keyless_policy()))
    policy = kinds["NetworkPolicy"]["spec"]
    assert policy["policyTypes"] == ["Ingress", "Egress"] and "ingress" not in policy and "egress" not in policy
    # it selects the session pod (whose labels also name its template, for an egress proxy)
    assert policy["podSelector"]["matchLabels"].items() <= kinds["Pod"]["metadata"]["labels"].items()
    # agent-sandbox: a managed policy with no rules denies all ingress and egress.
    template = kinds["SandboxTemplate"]["spec"]
    assert template["networkPolicyManagement"] == "Managed"
    assert template["networkPolicy"] == {"egress": [], "ingress": []}
    assert kinds["RuntimeClass"]["handler"] == "runsc"


@pytest.mark.parametrize(("size", "expected"), [("2g", "2Gi"), ("512m", "512Mi"), ("64k", "64Ki"), ("100", "100")])
def test_engine_sizes_become_binary_quantities(size: str, expected: str) -> None:
    assert quantity(size) == expected


@pytest.mark.parametrize("size", ["", "2gb", "0g", "-1m", "1.5g"])
def test_a_malformed_size_is_refused(size: str) -> None:
    with pytest.raises(ConfigError, match="is not a whole number"):
        quantity(size)


@pytest.mark.parametrize(("field", "value"), [("name", "Bad_Name"), ("name", "x" * 60), ("runtime_class", "-gvisor")])
def test_names_must_be_kubernetes_names(field: str, value: str) -> None:
    with pytest.raises(ConfigError, match="is not a Kubernetes name"):
        emitted(keyless_policy(), SessionShape(**{field: value}))


def test_the_output_is_deterministic_and_round_trips(tmp_path: Path) -> None:
    policy, _ = key_policy(tmp_path)
    first, second = emitted(policy), emitted(policy)
    assert to_yaml(first) == to_yaml(second) and to_json(first) == to_json(second)
    assert list(yaml.safe_load_all(to_yaml(first))) == first
    assert json.loads(to_json(first))["items"] == first
    text = to_yaml(first)
    assert "creationTimestamp" not in text and "-----BEGIN PUBLIC KEY-----\n" in text  # PEM as a literal block
    kinds = [obj["kind"] for obj in first]
    assert kinds == [
        "RuntimeClass",
        "ClusterImagePolicy",
        "ClusterPolicy",
        "NetworkPolicy",
        "SandboxTemplate",
        "Pod",
        "Job",
    ]


def test_out_writes_one_file_per_object_and_never_overwrites(tmp_path: Path) -> None:
    objects = emitted(keyless_policy())
    paths = write_dir(objects, tmp_path / "out", as_json=False)
    assert [p.name for p in paths][:2] == [
        "01-runtimeclass-gvisor.yaml",
        "02-clusterimagepolicy-terminai-sandbox-signed.yaml",
    ]
    assert [yaml.safe_load(p.read_text()) for p in paths] == objects
    with pytest.raises(ConfigError, match="already exists"):
        write_dir(objects, tmp_path / "out", as_json=False)
    as_json = write_dir(objects, tmp_path / "json", as_json=True)
    assert [json.loads(p.read_text()) for p in as_json] == objects


def test_an_offline_directory_without_an_oci_index_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is missing or is not an OCI index"):
        verified_source("registry.example/terminai/sandbox:0.1.0", keyless_policy(), offline_dir=tmp_path)
