"""A cluster session's egress by policy: a per-template proxy and the NetworkPolicies around it.

``allow:…`` renders what ``run`` builds on a host, with the cluster's parts:

* the policy as data, a ``ConfigMap`` holding ``NetworkPolicy.to_json()`` (the file the
  host launcher hands its proxy);
* the proxy, a ``Deployment`` of the **verified image by digest** running
  ``python3 -I -m terminai_apts.egress serve --listen-port 3128`` (the same code the host
  runs), hardened as the session is, and a ``Service`` in front of it;
* two ``NetworkPolicies`` beside the default deny (policies add up, so the deny stays):
  the template's session pods may open TCP to the proxy pods' port and nothing else (no
  DNS), and the proxy pods take connections only from those session pods and may open
  only TCP to the ports the policy allows, plus DNS to the cluster's resolver.

Why a Deployment and not a sidecar: containers of one pod share its network namespace, and
a NetworkPolicy selects pods, so a sidecar's egress would be the session's too.

How the session finds the proxy without DNS: the kubelet gives every container started
after a Service exists ``<SERVICE>_SERVICE_HOST``/``_PORT``, and expands ``$(VAR)`` in the
container's ``env`` with them; ``HTTPS_PROXY`` and friends are written that way. That needs
``enableServiceLinks: true`` on the session (it is false without a policy), which also
shows the session the addresses of the namespace's other Services (none of which it can
reach); docs/KUBERNETES.md advises a namespace of its own. The Service must exist before a
session pod starts; the objects are emitted in that order.
"""

from __future__ import annotations

import ipaddress
import json
from typing import Any

from terminai_apts.egress.policy import DEFAULT_PORTS, NetworkPolicy

from terminai_sandbox.common.hardening import HARDENED_LIMITS, TMP_SIZE
from terminai_sandbox.kube.hardening import (
    SANDBOX_LABEL,
    SessionShape,
    container_security_context,
    platform_affinity,
    quantity,
)

PROXY_PORT = 3128
#: Labels: which template a session pod belongs to, and which template a proxy pod serves.
TEMPLATE_LABEL = "dev.terminai.sandbox/template"
EGRESS_LABEL = "dev.terminai.sandbox/egress-for"
POLICY_DIR = "/etc/terminai/egress"
LEDGER_DIR = "/var/lib/terminai-egress"
#: The longest suffix a template's name takes here (``--name`` has room for it).
LONGEST_SUFFIX = "-egress-session"
#: What a resolver on a cluster answers on (kube-dns and CoreDNS both carry this label).
DNS_SELECTOR = {
    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
    "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
}
#: Addresses the proxy pod may not open even on an allowed port (the proxy refuses them too,
#: after resolution; this is the cluster's second wall): private, loopback, link-local
#: (cloud metadata), CGNAT, unique-local. A range stays open only if the policy names an IP
#: literal inside it, as the proxy then allows it.
_INTERNAL = {
    "0.0.0.0/0": ("10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.168.0.0/16"),
    "::/0": ("::1/128", "fc00::/7", "fe80::/10"),
}


def names(shape: SessionShape) -> dict[str, str]:
    base = shape.name
    return {
        "config": f"{base}-egress-policy",
        "proxy": f"{base}-egress",
        "session_policy": f"{base}-egress-session",
        "proxy_policy": f"{base}-egress-proxy",
    }


def service_env_prefix(shape: SessionShape) -> str:
    """The prefix of the kubelet's variables for the proxy's Service (``NAME_EGRESS``)."""
    return names(shape)["proxy"].upper().replace("-", "_")


def session_env(shape: SessionShape) -> list[dict[str, str]]:
    """The session's proxy variables, pointing at the Service by its injected address (no DNS)."""
    prefix = service_env_prefix(shape)
    url = f"http://$({prefix}_SERVICE_HOST):$({prefix}_SERVICE_PORT)"
    proxies = [{"name": n, "value": url} for n in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy")]
    return [
        *proxies,
        {"name": "NO_PROXY", "value": "localhost,127.0.0.1"},
        {"name": "no_proxy", "value": "localhost,127.0.0.1"},
    ]


def allowed_ports(policy: NetworkPolicy) -> list[int]:
    """Every port an allow pattern can let through (a pattern without one: 80 and 443)."""
    return sorted({port for pattern in policy.allow for port in ((pattern.port,) if pattern.port else DEFAULT_PORTS)})


def _blocks(policy: NetworkPolicy) -> list[dict[str, Any]]:
    literals = [pattern.ip for pattern in policy.allow if pattern.ip is not None]
    blocks = []
    for cidr, internal in _INTERNAL.items():
        kept = [
            net
            for net in internal
            if not any(
                address in ipaddress.ip_network(net)
                for address in literals
                if address.version == ipaddress.ip_network(net).version
            )
        ]
        blocks.append({"ipBlock": {"cidr": cidr, "except": kept}})
    return blocks


def _meta(name: str, namespace: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"labels": dict(labels), "name": name, "namespace": namespace}


def config_map(policy: NetworkPolicy, shape: SessionShape, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "data": {"policy.json": json.dumps(policy.to_json(), sort_keys=True) + "\n"},
        "immutable": True,  # a changed policy is a new render, applied as a new object
        "kind": "ConfigMap",
        "metadata": _meta(names(shape)["config"], namespace, {EGRESS_LABEL: shape.name}),
    }


def proxy_command() -> list[str]:
    return [
        "/usr/bin/python3",
        "-I",
        "-m",
        "terminai_apts.egress",
        "serve",
        "--policy-json",
        f"{POLICY_DIR}/policy.json",
        "--listen-port",
        str(PROXY_PORT),
        "--ledger",
        f"{LEDGER_DIR}/egress.ledger",
    ]


def proxy_pod_spec(image: str, shape: SessionShape) -> dict[str, Any]:
    """The proxy's pod: the session's hardening, its own small limits, no token, no links."""
    limits = {"cpu": "500m", "memory": quantity(HARDENED_LIMITS.memory)}
    spec: dict[str, Any] = {
        "automountServiceAccountToken": False,
        "containers": [
            {
                "args": proxy_command(),  # through the image's entrypoint: root refused, toolset proven
                "image": image,
                "imagePullPolicy": "IfNotPresent",
                "name": "egress",
                "ports": [{"containerPort": PROXY_PORT, "name": "proxy", "protocol": "TCP"}],
                # No TCP probe: each would be a connection the proxy answers and records in its
                # ledger; it listens within a second of starting (the entrypoint's health check first).
                "resources": {"limits": dict(limits), "requests": dict(limits)},
                "securityContext": container_security_context(),
                "volumeMounts": [
                    {"mountPath": POLICY_DIR, "name": "terminai-egress-policy", "readOnly": True},
                    {"mountPath": LEDGER_DIR, "name": "terminai-egress-ledger"},
                    {"mountPath": "/tmp", "name": "terminai-tmp"},
                ],
            }
        ],
        "enableServiceLinks": False,
        "hostIPC": False,
        "hostNetwork": False,
        "hostPID": False,
        "restartPolicy": "Always",
        "securityContext": _pod_security_context(),
        "shareProcessNamespace": False,
        "volumes": [
            {"configMap": {"name": names(shape)["config"]}, "name": "terminai-egress-policy"},
            {"emptyDir": {"sizeLimit": "256Mi"}, "name": "terminai-egress-ledger"},
            {"emptyDir": {"medium": "Memory", "sizeLimit": quantity(TMP_SIZE)}, "name": "terminai-tmp"},
        ],
    }
    if shape.runtime_class:
        spec["runtimeClassName"] = shape.runtime_class
    if shape.architectures:
        spec["affinity"] = platform_affinity(shape.architectures)
    return spec


def _pod_security_context() -> dict[str, Any]:
    """The session pod's own security context (the same user, group, fsGroup and seccomp)."""
    context = container_security_context()
    return {key: context[key] for key in ("runAsGroup", "runAsNonRoot", "runAsUser", "seccompProfile")} | {
        "fsGroup": context["runAsGroup"]
    }


def deployment(image: str, shape: SessionShape, namespace: str) -> dict[str, Any]:
    selector = {EGRESS_LABEL: shape.name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(names(shape)["proxy"], namespace, selector),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": dict(selector)},
            "template": {"metadata": {"labels": dict(selector)}, "spec": proxy_pod_spec(image, shape)},
        },
    }


def service(shape: SessionShape, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(names(shape)["proxy"], namespace, {EGRESS_LABEL: shape.name}),
        "spec": {
            "ports": [{"name": "proxy", "port": PROXY_PORT, "protocol": "TCP", "targetPort": PROXY_PORT}],
            "selector": {EGRESS_LABEL: shape.name},
            "type": "ClusterIP",
        },
    }


def session_pods(shape: SessionShape) -> dict[str, Any]:
    return {"matchLabels": {SANDBOX_LABEL: "1", TEMPLATE_LABEL: shape.name}}


def proxy_pods(shape: SessionShape) -> dict[str, Any]:
    return {"matchLabels": {EGRESS_LABEL: shape.name}}


def session_egress_rule(shape: SessionShape) -> dict[str, Any]:
    """The session's one way out: TCP to the proxy pods' port (after the Service's DNAT)."""
    return {"ports": [{"port": PROXY_PORT, "protocol": "TCP"}], "to": [{"podSelector": proxy_pods(shape)}]}


def session_network_policy(shape: SessionShape, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta(names(shape)["session_policy"], namespace, {TEMPLATE_LABEL: shape.name}),
        "spec": {"egress": [session_egress_rule(shape)], "podSelector": session_pods(shape), "policyTypes": ["Egress"]},
    }


def proxy_network_policy(policy: NetworkPolicy, shape: SessionShape, namespace: str) -> dict[str, Any]:
    ports = [{"port": port, "protocol": "TCP"} for port in allowed_ports(policy)]
    dns = [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta(names(shape)["proxy_policy"], namespace, {EGRESS_LABEL: shape.name}),
        "spec": {
            "egress": [{"ports": ports, "to": _blocks(policy)}, {"ports": dns, "to": [dict(DNS_SELECTOR)]}],
            "ingress": [
                {"from": [{"podSelector": session_pods(shape)}], "ports": [{"port": PROXY_PORT, "protocol": "TCP"}]}
            ],
            "podSelector": proxy_pods(shape),
            "policyTypes": ["Ingress", "Egress"],
        },
    }


def egress_objects(policy: NetworkPolicy, image: str, shape: SessionShape, namespace: str) -> list[dict[str, Any]]:
    """ConfigMap, NetworkPolicies, Service, Deployment: everything a session's egress needs."""
    return [
        config_map(policy, shape, namespace),
        session_network_policy(shape, namespace),
        proxy_network_policy(policy, shape, namespace),
        service(shape, namespace),
        deployment(image, shape, namespace),
    ]
