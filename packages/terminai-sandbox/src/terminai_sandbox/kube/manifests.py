"""Steps 2 and 3 together: every object for one verified image, in the order they apply."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from terminai_sandbox.errors import ConfigError
from terminai_sandbox.kube.admission import cluster_image_policy, kyverno_cluster_policy
from terminai_sandbox.kube.egress import LONGEST_SUFFIX, egress_objects
from terminai_sandbox.kube.hardening import SessionShape, dns_label
from terminai_sandbox.kube.render import check_text
from terminai_sandbox.kube.source import VerifiedSource
from terminai_sandbox.kube.workloads import job, network_policy, pod, runtime_class, sandbox_template


def check_names(shape: SessionShape, namespace: str) -> None:
    """Refuse names Kubernetes would refuse (the CLI calls this before verifying anything)."""
    if shape.network is not None:
        # the proxy's Service is named after the template, and a Service's name starts with a letter
        dns_label(shape.name, "--name", room=len(LONGEST_SUFFIX))
        if not shape.name[0].isalpha():
            raise ConfigError(
                f"--name {shape.name!r} must start with a letter with a network policy",
                hint="the egress proxy's Service is named after it, and a Service name starts with a letter",
            )
    dns_label(shape.name, "--name", room=len("-deny-all"))
    dns_label(namespace, "--namespace")
    if shape.runtime_class:
        dns_label(shape.runtime_class, "--runtime-class")
    for index, arg in enumerate(shape.command):  # refused before verifying, not after
        check_text(arg, f"COMMAND argument {index + 1}")


def manifests(source: VerifiedSource, shape: SessionShape, namespace: str) -> list[dict[str, Any]]:
    """RuntimeClass, admission (policy-controller, Kyverno), NetworkPolicy, SandboxTemplate, Pod, Job.

    With an ``allow`` policy (``shape.network``), the egress objects come between the
    default deny and the sessions: the kubelet injects the proxy Service's address only
    into pods started after the Service exists.
    """
    if not isinstance(source, VerifiedSource):
        raise TypeError("manifests needs a VerifiedSource from verified_source()")
    check_names(shape, namespace)
    digest = source.ref.digest
    assert digest is not None  # a VerifiedSource is pinned
    image = source.image
    linux = [p.platform.split("/") for p in source.result.platforms if p.platform.startswith("linux/")]
    if source.result.platforms:
        shape = replace(shape, architectures=tuple(sorted({parts[1] for parts in linux})))
    objects: list[dict[str, Any]] = []
    if shape.runtime_class:
        objects.append(runtime_class(shape.runtime_class))
    objects += [
        cluster_image_policy(source.policy, source.ref, shape.name),
        kyverno_cluster_policy(source.policy, shape.name, namespace, source.ref),
        network_policy(shape, namespace),
        *(egress_objects(shape.network, image, shape, namespace) if shape.network is not None else []),
        sandbox_template(image, digest, shape, namespace),
        pod(image, digest, shape, namespace),
        job(image, digest, shape, namespace),
    ]
    return objects
