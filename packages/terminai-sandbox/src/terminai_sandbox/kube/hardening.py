"""The session's hardening as a Kubernetes pod spec, from the values ``run`` uses.

``run`` passes engine flags; a cluster takes the same facts as fields:

=============================  =============================================================
``run``                        pod spec
=============================  =============================================================
image's user (10001)           ``runAsUser``/``runAsGroup``/``fsGroup`` 10001, ``runAsNonRoot``
``--read-only``                ``readOnlyRootFilesystem: true``
``--cap-drop ALL``             ``capabilities: {drop: [ALL]}``
``no-new-privileges``          ``allowPrivilegeEscalation: false``
engine's default seccomp       ``seccompProfile: RuntimeDefault``
``--tmpfs /tmp``, home         ``emptyDir`` with ``medium: Memory`` and the same ``sizeLimit``
``--memory``, ``--cpus``       ``resources.limits`` (and equal requests)
``--network none``             default-deny ``NetworkPolicy`` (see :mod:`.workloads`)
working directory mount        the ``workspace`` volume at the image's ``/workspace``
=============================  =============================================================

A cluster adds what an engine flag cannot say: no service-account token, no service
links, gVisor through ``runtimeClassName``. ``--pids-limit`` has no pod field (the
kubelet's ``podPidsLimit`` is node configuration); the docs say so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from terminai_sandbox.common.hardening import (
    DROPPED_CAPABILITIES,
    HARDENED_LIMITS,
    HOME_IN_IMAGE,
    HOME_SIZE,
    IMAGE_UID,
    SECURITY_OPTIONS,
    TMP_SIZE,
)
from terminai_sandbox.errors import ConfigError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from terminai_apts.egress.policy import NetworkPolicy

WORKSPACE = "/workspace"  # the image's WorkingDir
CONTAINER = "sandbox"
SANDBOX_LABEL = "dev.terminai.sandbox"
# Podman's `kube play` turns each emptyDir into a named volume; distinct names keep a
# sandbox's volumes from being mistaken for anyone else's.
VOLUMES = {"tmp": "terminai-tmp", "home": "terminai-home", "workspace": "terminai-workspace"}

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_ENGINE_SIZE = re.compile(r"^([1-9][0-9]*)([kmg]?)$")
_UNITS = {"": "", "k": "Ki", "m": "Mi", "g": "Gi"}


def quantity(engine_size: str) -> str:
    """An engine size (``512m``: binary units, as docker reads them) as a Kubernetes quantity (``512Mi``)."""
    match = _ENGINE_SIZE.match(engine_size.lower())
    if match is None:
        raise ConfigError(f"size {engine_size!r} is not a whole number with an optional k, m or g suffix")
    return match[1] + _UNITS[match[2]]


def dns_label(value: str, what: str, *, room: int = 0) -> str:
    """``value`` if it is an RFC 1123 label short enough to take a ``room``-character suffix."""
    if not _DNS_LABEL.match(value) or len(value) > 63 - room:
        raise ConfigError(
            f"{what} {value!r} is not a Kubernetes name",
            hint=f"lowercase letters, digits and '-', at most {63 - room} characters, alphanumeric at both ends",
        )
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionShape:
    """What varies between sessions; the defaults are ``run``'s."""

    name: str = "terminai-sandbox"
    command: tuple[str, ...] = ("sleep", "infinity")
    runtime_class: str | None = "gvisor"
    memory: str = HARDENED_LIMITS.memory
    cpus: str = HARDENED_LIMITS.cpus
    workspace_size: str = "4g"
    # A multi-platform image: the architectures its verified index lists (empty: one image).
    architectures: tuple[str, ...] = ()
    # An ``allow`` policy: the session reaches the template's egress proxy (see .egress).
    network: NetworkPolicy | None = None


def container_security_context() -> dict[str, Any]:
    return {
        "allowPrivilegeEscalation": "no-new-privileges" not in SECURITY_OPTIONS,
        "capabilities": {"drop": list(DROPPED_CAPABILITIES)},
        "privileged": False,
        "readOnlyRootFilesystem": True,
        "runAsGroup": IMAGE_UID,
        "runAsNonRoot": True,
        "runAsUser": IMAGE_UID,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def pod_spec(
    image: str, digest: str, shape: SessionShape, *, restart: str, proxy_env: list[dict[str, str]] | None = None
) -> dict[str, Any]:
    """The hardened pod spec running ``image`` (``name@sha256:...``) as ``shape`` says.

    ``proxy_env``: a policy's proxy variables (see :mod:`.egress`); they name the proxy's
    Service by the variables the kubelet injects, so only then are service links on.
    """
    if not image.endswith(f"@{digest}"):
        raise ConfigError(f"{image} is not pinned to {digest}")  # defence in depth: callers pass a pinned ref
    limits = {"cpu": shape.cpus, "memory": quantity(shape.memory)}
    spec: dict[str, Any] = {
        "automountServiceAccountToken": False,
        "containers": [
            {
                "args": list(shape.command),
                "env": [
                    {"name": "HOME", "value": HOME_IN_IMAGE},
                    {"name": "SANDBOX", "value": shape.name},
                    *(proxy_env or []),
                ],
                "image": image,
                "imagePullPolicy": "IfNotPresent",
                "name": CONTAINER,
                "resources": {"limits": dict(limits), "requests": dict(limits)},
                "securityContext": container_security_context(),
                "volumeMounts": [
                    {"mountPath": "/tmp", "name": VOLUMES["tmp"]},
                    {"mountPath": HOME_IN_IMAGE, "name": VOLUMES["home"]},
                    {"mountPath": WORKSPACE, "name": VOLUMES["workspace"]},
                ],
                "workingDir": WORKSPACE,
            }
        ],
        "enableServiceLinks": bool(proxy_env),
        "hostIPC": False,
        "hostNetwork": False,
        "hostPID": False,
        "restartPolicy": restart,
        "securityContext": {
            "fsGroup": IMAGE_UID,
            "runAsGroup": IMAGE_UID,
            "runAsNonRoot": True,
            "runAsUser": IMAGE_UID,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "shareProcessNamespace": False,
        "volumes": [
            {"emptyDir": {"medium": "Memory", "sizeLimit": quantity(TMP_SIZE)}, "name": VOLUMES["tmp"]},
            {"emptyDir": {"medium": "Memory", "sizeLimit": quantity(HOME_SIZE)}, "name": VOLUMES["home"]},
            {"emptyDir": {"sizeLimit": quantity(shape.workspace_size)}, "name": VOLUMES["workspace"]},
        ],
    }
    if shape.runtime_class:
        spec["runtimeClassName"] = shape.runtime_class
    if shape.architectures:
        spec["affinity"] = platform_affinity(shape.architectures)
    return spec


def platform_affinity(architectures: tuple[str, ...]) -> dict[str, Any]:
    """Schedule only onto Linux nodes of an architecture the verified index lists.

    The pod names the index digest, and the kubelet (containerd, CRI-O) pulls the manifest
    for its own node's platform from it; every platform was verified before anything was
    rendered, so whichever it picks is signed. On a node of an architecture the index lacks
    the pull would fail late (ImagePullBackOff); the affinity makes that a scheduling
    decision instead, and leaves mixed pools free to place the pod on any node it can run on.
    """
    terms = [
        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
        {"key": "kubernetes.io/arch", "operator": "In", "values": sorted(set(architectures))},
    ]
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": terms}]}
        }
    }
