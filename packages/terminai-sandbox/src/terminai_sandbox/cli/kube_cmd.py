"""``terminai-sandbox kube``: Kubernetes objects for a verified image (logic in :mod:`terminai_sandbox.kube`)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from terminai_sandbox.cli import params
from terminai_sandbox.cli.trust_options import trust_options

# The verifier and the manifest builders load when the command runs ('--help' answers at once).

_OUT = params.OutputDir()


@click.command("kube")
@click.argument("reference", type=params.Reference())
@click.argument("command", nargs=-1)
@trust_options
@click.option("--namespace", default="terminai-sandbox", show_default=True, help="namespace of the session objects")
@click.option("--name", default="terminai-sandbox", show_default=True, help="name of the session objects")
@click.option(
    "--runtime-class",
    default="gvisor",
    show_default=True,
    help="RuntimeClass (handler runsc) the pods run under; '' for the cluster's default runtime",
)
@click.option("--out", "out_dir", type=_OUT, default=None, help="write one file per object into this directory")
@click.option("--json", "as_json", is_flag=True, help="JSON instead of YAML")
@click.option("--insecure-registry", is_flag=True, help="allow plain HTTP to a non-loopback registry")
@click.option(
    "--network-policy",
    default=None,
    help="off (default-deny NetworkPolicy) or allow:HOST[:PORT],... (a proxy for the template); SANDBOX_NETWORK too",
)
def kube_cmd(
    reference: str,
    command: tuple[str, ...],
    key_path: Path | None,
    certificate_identity: str | None,
    certificate_oidc_issuer: str | None,
    policy_path: Path | None,
    namespace: str,
    name: str,
    runtime_class: str,
    out_dir: Path | None,
    as_json: bool,
    offline_dir: Path | None,
    trusted_root: Path | None,
    insecure_registry: bool,
    network_policy: str | None,
) -> None:
    """Verify REFERENCE like 'verify', then print its session as Kubernetes objects.

    The image is named by the digest that verified. Emitted: the gVisor RuntimeClass,
    admission refusing images the same trust policy would not verify (sigstore
    policy-controller ClusterImagePolicy, Kyverno ClusterPolicy), a default-deny
    NetworkPolicy, an agent-sandbox SandboxTemplate, and a Pod and a Job with the
    hardening of 'run'. With --network-policy allow:... (or SANDBOX_NETWORK), also the
    template's egress proxy (ConfigMap, Deployment of the verified image, Service) and
    NetworkPolicies whose only session egress is the proxy's port. COMMAND (after --)
    is the session's command (default: sleep infinity, for 'kubectl exec').

    Each registry request must be whole within 30 s (TERMINAI_REGISTRY_TIMEOUT=SECONDS), all
    of them within 120 s (TERMINAI_COMMAND_TIMEOUT=SECONDS).
    """
    from terminai_sandbox.common import deadlines  # noqa: PLC0415
    from terminai_sandbox.kube.hardening import SessionShape  # noqa: PLC0415
    from terminai_sandbox.kube.journal import refuse_host_journal  # noqa: PLC0415
    from terminai_sandbox.kube.manifests import check_names, manifests  # noqa: PLC0415
    from terminai_sandbox.kube.network import cluster_policy  # noqa: PLC0415
    from terminai_sandbox.kube.render import to_json, to_yaml, write_dir  # noqa: PLC0415
    from terminai_sandbox.kube.source import verified_source  # noqa: PLC0415
    from terminai_sandbox.signing.verify.trust import policy_from_options  # noqa: PLC0415

    # before the registry: nothing is verified for a refusal
    egress = cluster_policy(os.environ, network_policy)
    refuse_host_journal(os.environ)
    shape = SessionShape(name=name, runtime_class=runtime_class or None, network=egress)
    if command:
        shape = SessionShape(name=name, runtime_class=runtime_class or None, command=command, network=egress)
    check_names(shape, namespace)
    policy = policy_from_options(
        key=key_path, identity=certificate_identity, issuer=certificate_oidc_issuer, policy_file=policy_path
    )
    source = verified_source(
        reference,
        policy,
        offline_dir=offline_dir,
        trusted_root=trusted_root,
        insecure=insecure_registry,
        # a person waits for the objects: the lower registry deadline
        registry_timeout=deadlines.registry_seconds(os.environ, deadlines.REGISTRY_INTERACTIVE_SECONDS),
    )
    objects = manifests(source, shape, namespace)
    if out_dir is not None:
        for path in write_dir(objects, out_dir, as_json=as_json):
            click.echo(str(path))
        return
    click.echo(to_json(objects) if as_json else to_yaml(objects), nl=False)


def register(group: click.Group) -> None:
    group.add_command(kube_cmd)
