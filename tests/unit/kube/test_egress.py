"""``kube`` with an ``allow`` policy: the proxy's objects, and what their NetworkPolicies let through.

The semantics check reads the rendered objects only, with an evaluator written from the
Kubernetes NetworkPolicy rules (kubernetes.io/docs/concepts/services-networking/network-policies):
a connection leaves a pod if no policy selects the pod for Egress or one that does has a
matching egress rule, and enters a pod likewise for Ingress; rules of all selecting
policies add up; a peer without ``namespaceSelector`` is in the policy's namespace; a rule
without ``to``/``from`` matches every peer, without ``ports`` every port.
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from terminai_apts.egress.policy import NetworkPolicy, parse_network_policy
from terminai_sandbox.common.reference import ImageRef
from terminai_sandbox.kube.egress import EGRESS_LABEL, PROXY_PORT, TEMPLATE_LABEL
from terminai_sandbox.kube.hardening import SANDBOX_LABEL, SessionShape
from terminai_sandbox.kube.manifests import manifests
from terminai_sandbox.kube.source import VerifiedSource
from terminai_sandbox.signing.verify.result import PlatformResult, VerificationResult

from tests.fixtures import kube_schemas
from tests.unit.kube.support import DIGEST, REFERENCE, emitted, key_policy

NAMESPACE = "sandboxes"
POLICY = "allow:pypi.org,files.pythonhosted.org,*.githubusercontent.com:8443,!evil.pypi.org"


def _objects(tmp: Path, spec: str = POLICY, **shape: Any) -> list[dict[str, Any]]:
    policy, _ = key_policy(tmp)
    return emitted(policy, SessionShape(network=parse_network_policy(spec, source="test"), **shape))


def _named(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert len(found) == 1, (kind, name, [o["metadata"]["name"] for o in objects if o["kind"] == kind])
    return found[0]


# --- the evaluator -----------------------------------------------------------------------


@dataclass(frozen=True)
class Pod:
    labels: dict[str, str]
    namespace: str = NAMESPACE
    ip: str = "10.244.0.9"
    namespace_labels: dict[str, str] = field(default_factory=dict)

    def ns_labels(self) -> dict[str, str]:
        return {"kubernetes.io/metadata.name": self.namespace, **self.namespace_labels}


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    for key, value in selector.get("matchLabels", {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions", []):
        present = expression["key"] in labels
        value = labels.get(expression["key"])
        operator = expression["operator"]
        if operator == "In" and value not in expression["values"]:
            return False
        if operator == "NotIn" and value in expression["values"]:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


def _peer_matches(peer: dict[str, Any], policy_ns: str, target: Pod | str) -> bool:
    if "ipBlock" in peer:
        if not isinstance(target, str):
            target = target.ip  # ipBlock is about addresses; a pod's address counts too
        address = ipaddress.ip_address(target)
        block = peer["ipBlock"]
        net = ipaddress.ip_network(block["cidr"])
        if address.version != net.version or address not in net:
            return False
        return not any(
            address in ipaddress.ip_network(e)
            for e in block.get("except", [])
            if ipaddress.ip_network(e).version == net.version
        )
    if isinstance(target, str):
        return False  # pod and namespace selectors match pods only
    if "namespaceSelector" in peer:
        if not _selects(peer["namespaceSelector"], target.ns_labels()):
            return False
    elif target.namespace != policy_ns:
        return False
    return "podSelector" not in peer or _selects(peer["podSelector"], target.labels)


def _port_matches(rule: dict[str, Any], port: int, protocol: str) -> bool:
    if "ports" not in rule:
        return True
    return any(p.get("protocol", "TCP") == protocol and ("port" not in p or p["port"] == port) for p in rule["ports"])


def _policies(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == "NetworkPolicy"]


def allowed(objects: list[dict[str, Any]], source: Pod, target: Pod | str, port: int, protocol: str = "TCP") -> bool:
    """Whether ``source`` may open ``port`` on ``target`` (a pod, or an address outside the cluster)."""
    out = [p for p in _policies(objects) if p["metadata"]["namespace"] == source.namespace]
    out = [p for p in out if _selects(p["spec"]["podSelector"], source.labels) and "Egress" in p["spec"]["policyTypes"]]
    if out and not any(
        _port_matches(rule, port, protocol)
        and ("to" not in rule or any(_peer_matches(peer, p["metadata"]["namespace"], target) for peer in rule["to"]))
        for p in out
        for rule in p["spec"].get("egress", [])
    ):
        return False
    if isinstance(target, str):
        return True
    into = [p for p in _policies(objects) if p["metadata"]["namespace"] == target.namespace]
    into = [
        p for p in into if _selects(p["spec"]["podSelector"], target.labels) and "Ingress" in p["spec"]["policyTypes"]
    ]
    return not into or any(
        _port_matches(rule, port, protocol)
        and (
            "from" not in rule or any(_peer_matches(peer, p["metadata"]["namespace"], source) for peer in rule["from"])
        )
        for p in into
        for rule in p["spec"].get("ingress", [])
    )


def _pods(objects: list[dict[str, Any]]) -> dict[str, Pod]:
    """The pods the objects would start, with the labels the objects give them."""
    session = _named(objects, "Pod")["metadata"]["labels"]
    proxy = _named(objects, "Deployment")["spec"]["template"]["metadata"]["labels"]
    return {
        "session": Pod(dict(session), ip="10.244.0.10"),
        "job-session": Pod(dict(_named(objects, "Job")["spec"]["template"]["metadata"]["labels"]), ip="10.244.0.11"),
        "proxy": Pod(dict(proxy), ip="10.244.0.20"),
        "other-template": Pod({SANDBOX_LABEL: "1", TEMPLATE_LABEL: "someone-else"}, ip="10.244.0.30"),
        "other-pod": Pod({"app": "web"}, ip="10.244.0.40"),
        "elsewhere": Pod(dict(session), namespace="other", ip="10.244.1.10"),
        "dns": Pod({"k8s-app": "kube-dns"}, namespace="kube-system", ip="10.96.0.10"),
    }


def test_a_policy_renders_every_object_and_each_validates(tmp_path: Path) -> None:
    objects = _objects(tmp_path)
    kinds = [o["kind"] for o in objects]
    for kind in ("ConfigMap", "Service", "Deployment"):
        assert kinds.count(kind) == 1, kinds
    assert kinds.count("NetworkPolicy") == 3
    for obj in objects:
        assert kube_schemas.errors(obj) == [], (obj["kind"], kube_schemas.errors(obj))


def test_the_validator_refuses_a_broken_proxy_object(tmp_path: Path) -> None:
    deployment = _named(_objects(tmp_path), "Deployment")
    deployment["spec"]["template"]["spec"]["containers"][0]["securityContext"]["readOnlyRootFs"] = True
    assert any("readOnlyRootFs" in e for e in kube_schemas.errors(deployment))


def test_the_service_exists_before_any_session_pod(tmp_path: Path) -> None:
    kinds = [o["kind"] for o in _objects(tmp_path)]
    first_session = min(kinds.index(k) for k in ("SandboxTemplate", "Pod", "Job"))
    assert kinds.index("Service") < first_session and kinds.index("ConfigMap") < kinds.index("Deployment")


def test_the_session_egress_is_the_proxy_port_only(tmp_path: Path) -> None:
    objects = _objects(tmp_path)
    pods = _pods(objects)
    for who in ("session", "job-session"):
        source = pods[who]
        assert allowed(objects, source, pods["proxy"], PROXY_PORT)
        assert not allowed(objects, source, pods["proxy"], 8080)
        assert not allowed(objects, source, pods["proxy"], PROXY_PORT, "UDP")
        assert not allowed(objects, source, pods["dns"], 53, "UDP")  # no DNS: the address is injected
        assert not allowed(objects, source, pods["dns"], 53)
        assert not allowed(objects, source, pods["other-pod"], 80)
        assert not allowed(objects, source, pods["session"], 22)
        for address in ("151.101.0.223", "8.8.8.8", "169.254.169.254", "10.0.0.1", "2a04:4e42::223"):
            for port in (80, 443, 3128, 8443):
                assert not allowed(objects, source, address, port), (who, address, port)


def test_only_this_templates_sessions_reach_the_proxy(tmp_path: Path) -> None:
    objects = _objects(tmp_path)
    pods = _pods(objects)
    assert allowed(objects, pods["session"], pods["proxy"], PROXY_PORT)
    for other in ("other-template", "other-pod", "elsewhere"):
        assert not allowed(objects, pods[other], pods["proxy"], PROXY_PORT), other


def test_the_proxy_reaches_the_allowed_ports_and_dns_and_nothing_inside(tmp_path: Path) -> None:
    objects = _objects(tmp_path)
    pods = _pods(objects)
    proxy = pods["proxy"]
    for port in (80, 443, 8443):
        assert allowed(objects, proxy, "151.101.0.223", port), port
        assert allowed(objects, proxy, "2a04:4e42::223", port), port
    for port in (22, 25, 3128, 8080):
        assert not allowed(objects, proxy, "151.101.0.223", port), port
    assert allowed(objects, proxy, pods["dns"], 53, "UDP") and allowed(objects, proxy, pods["dns"], 53)
    # The cluster's own addresses and the metadata service, even on an allowed port.
    for address in ("10.0.0.1", "172.16.5.5", "192.168.1.1", "169.254.169.254", "127.0.0.1", "100.64.0.1", "fd00::1"):
        assert not allowed(objects, proxy, address, 443), address
    assert not allowed(objects, proxy, pods["other-pod"], 80)
    assert not allowed(objects, proxy, pods["session"], 443)


def test_a_private_ip_the_policy_names_stays_open_to_the_proxy_only(tmp_path: Path) -> None:
    objects = _objects(tmp_path, "allow:10.1.2.3:8080,pypi.org")
    pods = _pods(objects)
    assert allowed(objects, pods["proxy"], "10.1.2.3", 8080)
    assert not allowed(objects, pods["proxy"], "192.168.1.1", 443)
    assert not allowed(objects, pods["session"], "10.1.2.3", 8080)


def test_the_sandbox_template_carries_the_same_session_rule(tmp_path: Path) -> None:
    objects = _objects(tmp_path)
    template = _named(objects, "SandboxTemplate")["spec"]
    session_policy = _named(objects, "NetworkPolicy", "terminai-sandbox-egress-session")
    assert template["networkPolicy"] == {"egress": session_policy["spec"]["egress"], "ingress": []}
    assert template["podTemplate"]["metadata"]["labels"][TEMPLATE_LABEL] == "terminai-sandbox"


def test_the_config_map_holds_the_policy_the_proxy_reads(tmp_path: Path) -> None:
    objects = _objects(tmp_path)
    data = _named(objects, "ConfigMap")["data"]["policy.json"]
    back = NetworkPolicy.from_json(json.loads(data), source="configmap")
    assert back == parse_network_policy(POLICY, source="test")
    assert back.decide("pypi.org", 443).allowed and not back.decide("evil.pypi.org", 443).allowed


def test_the_proxy_runs_the_verified_image_hardened_as_the_session(tmp_path: Path) -> None:
    objects = _objects(tmp_path)
    proxy = _named(objects, "Deployment")["spec"]["template"]["spec"]
    session = _named(objects, "Pod")["spec"]
    container, session_container = proxy["containers"][0], session["containers"][0]
    assert container["image"] == session_container["image"] and "@sha256:" in container["image"]
    assert container["securityContext"] == session_container["securityContext"]
    context = container["securityContext"]
    assert context["runAsNonRoot"] and context["readOnlyRootFilesystem"] and not context["allowPrivilegeEscalation"]
    assert context["capabilities"] == {"drop": ["ALL"]} and context["seccompProfile"] == {"type": "RuntimeDefault"}
    assert proxy["automountServiceAccountToken"] is False and proxy["enableServiceLinks"] is False
    assert proxy["securityContext"] == session["securityContext"]
    assert container["resources"]["limits"] == container["resources"]["requests"]
    assert set(container["resources"]["limits"]) == {"cpu", "memory"}
    assert proxy["runtimeClassName"] == session["runtimeClassName"] == "gvisor"
    assert container["args"][:5] == ["/usr/bin/python3", "-I", "-m", "terminai_apts.egress", "serve"]
    assert "--hosts-file" not in container["args"] and "--no-sni-check" not in container["args"]
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert mounts["/etc/terminai/egress"]["readOnly"] is True


def test_the_session_finds_the_proxy_by_injected_variables_not_dns(tmp_path: Path) -> None:
    objects = _objects(tmp_path, name="agent-a")
    service = _named(objects, "Service")
    assert service["metadata"]["name"] == "agent-a-egress" and service["spec"]["selector"] == {EGRESS_LABEL: "agent-a"}
    for kind in ("Pod", "Job", "SandboxTemplate"):
        obj = _named(objects, kind)
        spec = obj["spec"]
        spec = spec.get("podTemplate", spec.get("template", {"spec": spec}))["spec"]
        env = {e["name"]: e["value"] for e in spec["containers"][0]["env"]}
        url = "http://$(AGENT_A_EGRESS_SERVICE_HOST):$(AGENT_A_EGRESS_SERVICE_PORT)"
        assert env["HTTPS_PROXY"] == env["HTTP_PROXY"] == env["https_proxy"] == url, kind
        assert spec["enableServiceLinks"] is True, kind


def test_without_a_policy_nothing_changes(tmp_path: Path) -> None:
    policy, _ = key_policy(tmp_path)
    objects = emitted(policy, SessionShape())
    assert {o["kind"] for o in objects} >= {"Pod"} and not {"ConfigMap", "Service", "Deployment"} & {
        o["kind"] for o in objects
    }
    pod = _named(objects, "Pod")["spec"]
    assert pod["enableServiceLinks"] is False
    assert not [e for e in pod["containers"][0]["env"] if "PROXY" in e["name"].upper()]
    assert len(_policies(objects)) == 1
    pods = _pods_without_proxy(objects)
    assert not allowed(objects, pods, "151.101.0.223", 443)


def _pods_without_proxy(objects: list[dict[str, Any]]) -> Pod:
    return Pod(dict(_named(objects, "Pod")["metadata"]["labels"]))


@pytest.mark.parametrize("architectures", [("amd64", "arm64"), ("arm64",)])
def test_the_proxy_keeps_the_sessions_node_affinity(tmp_path: Path, architectures: tuple[str, ...]) -> None:
    policy, _ = key_policy(tmp_path)
    ref = ImageRef.parse(REFERENCE).with_digest(DIGEST)
    platforms = tuple(
        PlatformResult(platform=f"linux/{arch}", digest="sha256:" + f"{index:02x}" * 32, signatures=())
        for index, arch in enumerate(architectures)
    )
    result = VerificationResult(
        digest=DIGEST, repository=ref.name, signatures=(), policy_fingerprint=policy.fingerprint(), platforms=platforms
    )
    shape = SessionShape(network=parse_network_policy(POLICY, source="test"))
    objects = manifests(VerifiedSource(ref=ref, policy=policy, result=result), shape, NAMESPACE)
    proxy = _named(objects, "Deployment")["spec"]["template"]["spec"]
    session = _named(objects, "Pod")["spec"]
    assert proxy["affinity"] == session["affinity"]
    terms = proxy["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    expected = {"key": "kubernetes.io/arch", "operator": "In", "values": sorted(architectures)}
    assert expected in terms[0]["matchExpressions"]


def test_admission_covers_the_proxy_pods_too(tmp_path: Path) -> None:
    objects = _objects(tmp_path)
    deployment = _named(objects, "Deployment")
    kyverno = _named(objects, "ClusterPolicy")
    matched = [r["match"]["any"][0]["resources"] for r in kyverno["spec"]["rules"]]
    # Kyverno checks every Pod of the namespace, not only the sandbox-labelled ones.
    assert all(m == {"kinds": ["Pod"], "namespaces": [deployment["metadata"]["namespace"]]} for m in matched)
    policy = _named(objects, "ClusterImagePolicy")
    image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    globs = [glob["glob"] for glob in policy["spec"]["images"]]
    assert image.split("@")[0] + "@*" in globs, globs  # policy-controller's glob holds the proxy's image
