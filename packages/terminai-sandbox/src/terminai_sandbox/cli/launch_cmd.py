"""``terminai-sandbox preflight | run | audit verify``: launch verified, hardened sessions."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import click
import terminai_apts

from terminai_sandbox.config import LaunchConfig, load_launch_config
from terminai_sandbox.errors import ConfigError
from terminai_sandbox.launcher import audit, trust
from terminai_sandbox.launcher.engines import run_binary
from terminai_sandbox.launcher.preflight import PreflightOptions, StepResult, VerifiedImage, preflight
from terminai_sandbox.launcher.run import Limits, build_argv, execute, host_identity
from terminai_sandbox.launcher.trust import TrustSource

#: Set by the release process to REGISTRY/terminai/sandbox:X.Y.Z@sha256:...; None in development.
DEFAULT_IMAGE: str | None = None


def _supported_contract() -> str:
    # The manifest shipped with terminai_apts (package data); read directly because importing
    # terminai_apts.health (inspect, argparse, ...) costs more than a launch should.
    manifest = Path(terminai_apts.__file__).with_name("contract.json")
    return str(json.loads(manifest.read_text(encoding="utf-8"))["contract_version"])


def _launch_options(func: click.decorators.FC) -> click.decorators.FC:
    options = [
        click.option("--image", default=None, help="image reference (env TERMINAI_SANDBOX_IMAGE wins)"),
        click.option("--engine", default=None, help="docker or podman (env TERMINAI_SANDBOX wins)"),
        click.option("--key", "key_path", type=click.Path(path_type=Path), default=None, help="trusted cosign.pub"),
        click.option("--certificate-identity", default=None, help="keyless: expected certificate identity"),
        click.option("--certificate-oidc-issuer", default=None, help="keyless: expected OIDC issuer"),
        click.option(
            "--policy", "policy_path", type=click.Path(path_type=Path), default=None, help="verification policy file"
        ),
        click.option("--unsafe-skip-verify", is_flag=True, help="run without verifying (warned and audited)"),
        click.option("--unsafe-allow-flag", multiple=True, help="allow this dangerous SANDBOX_FLAGS flag"),
        click.option("--allow-floating-tag", is_flag=True, help="accept tags such as 'latest' (resolved once)"),
        click.option("--insecure-registry", is_flag=True, help="plain HTTP to a non-loopback registry"),
        click.option("--json", "as_json", is_flag=True, help="report preflight steps as JSON"),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _policy(
    key_path: Path | None, identity: str | None, issuer: str | None, policy_path: Path | None, skip: bool
) -> TrustSource | None:
    chosen = [x for x in (key_path, identity or issuer, policy_path) if x]
    if len(chosen) > 1:
        raise ConfigError("pass only one of --key, --certificate-identity/--certificate-oidc-issuer, --policy")
    if bool(identity) != bool(issuer):
        raise ConfigError("--certificate-identity and --certificate-oidc-issuer go together")
    if key_path:
        return trust.key_file(key_path)
    if identity and issuer:
        return trust.keyless_identity(identity, issuer)
    if policy_path:
        return trust.policy_file(policy_path)
    default = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "terminai-sandbox" / "policy.json"
    if default.exists():
        return trust.policy_file(default)
    if skip:
        return None
    raise ConfigError(
        "no verification policy: nothing can be verified",
        hint=f"pass --key cosign.pub, a keyless identity, --policy FILE, or create {default}",
    )


def _prepare(
    image: str | None,
    engine: str | None,
    key_path: Path | None,
    certificate_identity: str | None,
    certificate_oidc_issuer: str | None,
    policy_path: Path | None,
    unsafe_skip_verify: bool,
    unsafe_allow_flag: tuple[str, ...],
    allow_floating_tag: bool,
    insecure_registry: bool,
    deep: bool,
    as_json: bool,
    project: Path | None = None,
) -> tuple[LaunchConfig, VerifiedImage, audit.Ledger, list[StepResult]]:
    env = dict(os.environ)
    available = [name for name in ("docker", "podman") if shutil.which(name)]
    config = load_launch_config(
        env,
        image_flag=image,
        engine_flag=engine,
        default_image=DEFAULT_IMAGE,
        available=available,
        platform=sys.platform,
        allowed_flags=unsafe_allow_flag,
    )
    ledger = audit.Ledger(audit.default_path(env))
    if unsafe_skip_verify:
        click.echo("WARNING: --unsafe-skip-verify: the image's signature is NOT checked; this is audited.", err=True)
        ledger.append("unsafe-skip-verify", image=str(config.image))
    policy = _policy(key_path, certificate_identity, certificate_oidc_issuer, policy_path, unsafe_skip_verify)
    state = audit.default_path(env).parent
    options = PreflightOptions(
        trust=policy,
        unsafe_skip_verify=unsafe_skip_verify,
        allow_floating_tag=allow_floating_tag,
        insecure_registry=insecure_registry,
        supported_contract=_supported_contract(),
        deep=deep,
        project=project,
        cache_path=state / "verified.json",
        env=env,
    )

    def report(result: StepResult) -> None:
        if not as_json:
            mark = "ok " if result.ok else "FAIL"
            click.echo(
                f"  [{mark}] {result.number}. {result.name}: {result.detail} ({result.seconds * 1000:.0f} ms)", err=True
            )

    verified, results = preflight(config, options, ledger=ledger, report=report)
    return config, verified, ledger, results


@click.command("preflight")
@_launch_options
@click.option("--deep", is_flag=True, help="also run the contract suite inside the image")
def preflight_cmd(as_json: bool, deep: bool, **kwargs: Any) -> None:
    """Run preflight steps 0-6 and report each one."""
    _, verified, _, results = _prepare(deep=deep, as_json=as_json, **kwargs)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "image": verified.pinned,
                    "steps": [
                        {
                            "step": r.number,
                            "name": r.name,
                            "ok": r.ok,
                            "detail": r.detail,
                            "seconds": round(r.seconds, 4),
                        }
                        for r in results
                    ],
                },
                indent=2,
            )
        )
    else:
        click.echo(f"verified: {verified.pinned}")


@click.command("run", context_settings={"ignore_unknown_options": True})
@_launch_options
@click.option("--network", default="none", show_default=True, help="container network (none unless you need one)")
@click.option("--memory", default="2g", show_default=True)
@click.option("--cpus", default="2", show_default=True)
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def run_cmd(as_json: bool, network: str, memory: str, cpus: str, command: tuple[str, ...], **kwargs: Any) -> None:
    """Preflight, then run COMMAND in a hardened container of the verified image (by digest)."""
    cwd = os.getcwd()
    config, verified, ledger, _ = _prepare(deep=False, as_json=as_json, project=Path(cwd), **kwargs)
    assert config.engine is not None  # preflight step 0 refuses a switched-off sandbox
    uid, gid = host_identity()
    bashrc = Path(cwd) / ".terminai" / "sandbox.bashrc"
    argv = build_argv(
        config.engine,
        verified,
        config,
        command or ("bash",),
        cwd=cwd,
        tty=sys.stdin.isatty() and sys.stdout.isatty(),
        uid=uid,
        gid=gid,
        limits=Limits(memory=memory, cpus=cpus, network=network),
        bashrc=str(bashrc) if bashrc.is_file() else None,
        binary=run_binary(config.engine, os.environ),
    )
    ledger.append(
        "run",
        image=verified.pinned,
        runs=verified.run_ref,
        verified_by=list(verified.verified_by),
        argv=argv,
    )
    code = execute(argv, os.environ)
    ledger.append("exit", image=verified.pinned, code=code)
    sys.exit(code)


@click.group("audit")
def audit_group() -> None:
    """Inspect the launcher's hash-chained audit ledger."""


@audit_group.command("verify")
@click.option("--ledger", type=click.Path(path_type=Path), default=None, help="ledger file (default: state dir)")
def audit_verify(ledger: Path | None) -> None:
    """Check every record's hash chain; fails naming the first edited, removed or reordered line."""
    path = ledger or audit.default_path(os.environ)
    count = audit.verify(path)
    click.echo(f"audit ledger {path}: {count} records, chain intact")


def register(group: click.Group) -> None:
    for command in (preflight_cmd, run_cmd, audit_group):
        group.add_command(command)
