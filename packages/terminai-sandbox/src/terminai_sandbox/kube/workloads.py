"""The workload objects: agent-sandbox ``SandboxTemplate``, ``Pod``, ``Job``, ``NetworkPolicy``, ``RuntimeClass``.

All share one pod spec (:func:`~terminai_sandbox.kube.hardening.pod_spec`). The
``SandboxTemplate`` is kubernetes-sigs/agent-sandbox's ``extensions.agents.x-k8s.io/v1beta1``
(a ``SandboxClaim`` naming it starts a session); its ``networkPolicy`` with no rules makes
the controller apply a policy that denies all ingress and egress, the cluster's
``--network none``. The ``Pod`` and ``Job`` are for clusters without the controller; the
separate ``NetworkPolicy`` does the same for them, selecting the sandbox label.
"""

from __future__ import annotations

from typing import Any

from terminai_sandbox.kube.egress import TEMPLATE_LABEL, session_egress_rule, session_env
from terminai_sandbox.kube.hardening import SANDBOX_LABEL, SessionShape
from terminai_sandbox.kube.hardening import pod_spec as hardened_pod_spec

SANDBOX_TEMPLATE_API = "extensions.agents.x-k8s.io/v1beta1"
GVISOR_HANDLER = "runsc"


# The verified digest is in each container's image reference and nowhere else: podman's
# `kube play` (4.3) refuses annotation values longer than 63 characters, as a digest is.


def _metadata(name: str, namespace: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"labels": {SANDBOX_LABEL: "1"}, "name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


def _pod_metadata(shape: SessionShape, namespace: str) -> dict[str, Any]:
    meta = _metadata(shape.name, namespace)
    meta["labels"][TEMPLATE_LABEL] = shape.name
    return meta


def _template_meta(shape: SessionShape) -> dict[str, Any]:
    # The template label lets this template's egress proxy admit its sessions and no one else's.
    return {"labels": {SANDBOX_LABEL: "1", TEMPLATE_LABEL: shape.name}}


def pod_spec(image: str, digest: str, shape: SessionShape, *, restart: str) -> dict[str, Any]:
    proxy_env = session_env(shape) if shape.network is not None else None
    return hardened_pod_spec(image, digest, shape, restart=restart, proxy_env=proxy_env)


def sandbox_template(image: str, digest: str, shape: SessionShape, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": SANDBOX_TEMPLATE_API,
        "kind": "SandboxTemplate",
        "metadata": _metadata(shape.name, namespace),
        "spec": {
            "envVarsInjectionPolicy": "Disallowed",
            # No rule: the controller's policy denies all; a policy's one rule: the proxy's port.
            "networkPolicy": {
                "egress": [session_egress_rule(shape)] if shape.network is not None else [],
                "ingress": [],
            },
            "networkPolicyManagement": "Managed",
            "podTemplate": {
                "metadata": _template_meta(shape),
                "spec": pod_spec(image, digest, shape, restart="Never"),
            },
            "volumeClaimTemplatesPolicy": "Disallowed",
        },
    }


def pod(image: str, digest: str, shape: SessionShape, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _pod_metadata(shape, namespace),
        "spec": pod_spec(image, digest, shape, restart="Never"),
    }


def job(image: str, digest: str, shape: SessionShape, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _metadata(shape.name, namespace),
        "spec": {
            "backoffLimit": 0,  # a session that failed is not run again behind the user's back
            "template": {"metadata": _template_meta(shape), "spec": pod_spec(image, digest, shape, restart="Never")},
        },
    }


def network_policy(shape: SessionShape, namespace: str) -> dict[str, Any]:
    """Default deny: both policy types listed, no rule, so nothing goes in or out."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _metadata(f"{shape.name}-deny-all", namespace),
        "spec": {"podSelector": {"matchLabels": {SANDBOX_LABEL: "1"}}, "policyTypes": ["Ingress", "Egress"]},
    }


def runtime_class(name: str) -> dict[str, Any]:
    """gVisor's RuntimeClass: ``handler`` is the name containerd/CRI-O know runsc by."""
    return {
        "apiVersion": "node.k8s.io/v1",
        "handler": GVISOR_HANDLER,
        "kind": "RuntimeClass",
        "metadata": _metadata(name, None),
    }
