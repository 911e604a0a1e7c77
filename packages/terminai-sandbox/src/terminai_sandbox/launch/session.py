"""A launch from its options to the session's exit code: configuration, preflight, run, ledger.

Both ways into a launch call this module: the click commands in
:mod:`terminai_sandbox.cli.launch_cmd`, and the console script's path for ``run``
(:mod:`terminai_sandbox.launch.entry`). It imports neither click nor the registry and crypto
stacks; preflight loads those only when a step needs them. Output goes through the
``say`` callback (one line to stderr), so the library itself never prints.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from terminai_apts.records import frozen_record

from terminai_sandbox.common.hardening import Limits
from terminai_sandbox.common.trust_options import choose_trust, no_trust
from terminai_sandbox.common.which import which
from terminai_sandbox.engine.flags import run_binary
from terminai_sandbox.engine.runtime import runsc_binary
from terminai_sandbox.launch import audit, held_mounts, host_folders, trust
from terminai_sandbox.launch.config import LaunchConfig, load_launch_config
from terminai_sandbox.launch.default_image import builtin_default
from terminai_sandbox.launch.preflight import PreflightOptions, StepResult, VerifiedImage, configure, preflight
from terminai_sandbox.launch.run import build_argv, execute, host_identity, refuse_workdir
from terminai_sandbox.launch.settings import SettingsFile
from terminai_sandbox.launch.trust import TrustSource


@frozen_record
class LaunchRequest:
    """What the user asked for on the command line (``preflight`` and ``run`` share these)."""

    image: str | None = None
    engine: str | None = None
    runtime: str | None = None
    network_policy: str | None = None
    key_path: Path | None = None
    certificate_identity: str | None = None
    certificate_oidc_issuer: str | None = None
    policy_path: Path | None = None
    unsafe_skip_verify: bool = False
    unsafe_allow_flag: tuple[str, ...] = ()
    unsafe_allow_env: tuple[str, ...] = ()
    allow_floating_tag: bool = False
    insecure_registry: bool = False
    as_json: bool = False


def trust_source(request: LaunchRequest, env: Mapping[str, str]) -> TrustSource | None:
    """The one verification policy the request names, else the user's policy file.

    The options are read by :func:`~terminai_sandbox.common.trust_options.choose_trust`, as
    ``verify`` and ``kube`` read them.
    """
    choice = choose_trust(
        key=request.key_path,
        identity=request.certificate_identity,
        issuer=request.certificate_oidc_issuer,
        policy=request.policy_path,
    )
    if choice is not None and choice.key is not None:
        return trust.key_file(choice.key)
    if choice is not None and choice.policy is not None:
        return trust.policy_file(choice.policy)
    if choice is not None:
        return trust.keyless_identity(choice.identity, choice.issuer)
    default = Path(host_folders.config_folder(env)) / "policy.json"
    if default.exists():
        return trust.policy_file(default)
    if request.unsafe_skip_verify:
        return None
    raise no_trust(also=f"create {default}")


def prepare(
    request: LaunchRequest,
    *,
    env: Mapping[str, str],
    say: Callable[[str], None],
    deep: bool = False,
    project: Path | None = None,
    ledger: audit.Ledger | None = None,
) -> tuple[LaunchConfig, VerifiedImage, audit.Ledger, list[StepResult]]:
    """Resolve the configuration and run preflight; every step is reported and audited."""
    settings = SettingsFile(env)
    ledger = ledger or audit.Ledger(audit.default_path(env))

    def report(result: StepResult) -> None:
        if not request.as_json:
            mark = "ok " if result.ok else "FAIL"
            say(f"  [{mark}] {result.number}. {result.name}: {result.detail} ({result.seconds * 1000:.0f} ms)")

    config = configure(
        lambda: load_launch_config(
            env,
            image_flag=request.image,
            engine_flag=request.engine,
            default_image=builtin_default,
            available=[name for name in ("docker", "podman") if which(name)],
            allowed_flags=request.unsafe_allow_flag,
            allowed_env=request.unsafe_allow_env,
            settings_engine=settings.engine,
            runtime_flag=request.runtime,
            settings_runtime=settings.runtime,
            network_flag=request.network_policy,
            settings_network=settings.network,
        ),
        ledger=ledger,
        report=report,
    )
    if request.unsafe_skip_verify:
        say("WARNING: --unsafe-skip-verify: the image's signature is NOT checked; this is audited.")
        ledger.append("unsafe-skip-verify", image=str(config.image))
    if request.unsafe_allow_flag:
        ledger.append("unsafe-allow-flag", flags=list(request.unsafe_allow_flag), sandbox_flags=list(config.flags))
    if request.unsafe_allow_env:
        names = ", ".join(request.unsafe_allow_env)
        say(f"WARNING: --unsafe-allow-env {names}: these may change which code the toolset runs; this is audited.")
        ledger.append("unsafe-allow-env", names=list(request.unsafe_allow_env), sandbox_flags=list(config.flags))
    options = PreflightOptions(
        trust=trust_source(request, env),
        unsafe_skip_verify=request.unsafe_skip_verify,
        allow_floating_tag=request.allow_floating_tag,
        insecure_registry=request.insecure_registry,
        deep=deep,
        project=project,
        cache_path=ledger.path.parent / "verified.json",
        env=env,
    )

    verified, results = preflight(config, options, ledger=ledger, report=report)
    return config, verified, ledger, results


def run(
    request: LaunchRequest,
    command: Sequence[str],
    *,
    limits: Limits,
    env: Mapping[str, str],
    say: Callable[[str], None],
) -> int:
    """Preflight, then COMMAND (default ``bash``) in a hardened session; the session's exit code."""
    cwd = os.getcwd()
    refuse_workdir(cwd, env)  # a configuration refusal: before any engine or registry request
    # Preflight's records wait for the run record: one lock and one fsync before the engine
    # starts. Whatever ends the launch before that (a refusal, an interrupt) writes them.
    ledger = audit.Ledger(audit.default_path(env), hold=True)
    try:
        config, verified, ledger, _ = prepare(request, env=env, say=say, project=Path(cwd), ledger=ledger)
        assert config.engine is not None  # preflight step 0 refuses a switched-off sandbox
        uid, gid = host_identity()
        name = f"terminai-{os.urandom(6).hex()}"
        # Rootless podman: sources are pinned inside podman's own namespaces, where this user may mount.
        rootless = config.engine == "podman" and os.geteuid() != 0
        staging = held_mounts.Staging(name, cwd=cwd, namespace=held_mounts.podman_namespace(env) if rootless else None)
        egress = None
        try:
            if config.network.policy is not None:
                from terminai_sandbox.launch import egress_session  # noqa: PLC0415  (only with a policy)

                egress = egress_session.start(
                    config.network,
                    ledger=ledger.path,
                    # the proxy command's container runs on the engine preflight checked, as the session does
                    env=env if verified.engine_host is None else {**env, "DOCKER_HOST": verified.engine_host},
                    cwd=cwd,
                    name=name,
                    engine_binary=run_binary(config.engine, env),
                    image_ref=verified.run_ref,
                )
            mounts, bashrc = held_mounts.stage_session(staging, config.mounts, cwd)
            argv = build_argv(
                config.engine,
                verified,
                config,
                command or ("bash",),
                cwd=cwd,
                tty=sys.stdin.isatty() and sys.stdout.isatty(),
                uid=uid,
                gid=gid,
                limits=limits,
                name=name,
                bashrc=bashrc,
                binary=run_binary(config.engine, env),
                runsc=runsc_binary(env) if config.runtime == "runsc" else None,  # PATH is searched only for gVisor
                env=env,
                mounts=mounts,
                egress=None if egress is None else str(egress.socket_dir),
            )
        except BaseException:
            staging.close()
            if egress is not None:
                egress.close()
            raise
        run_record = {
            "image": verified.pinned,
            "runs": verified.run_ref,
            "verified_by": list(verified.verified_by),
            "runtime": config.runtime,
            "argv": argv,
            "mounts": [mount.record() for mount in mounts],
            "network": config.network.record() | ({} if egress is None else egress.record()),
        }
        ledger.release([("run", run_record)])
    finally:
        ledger.release()  # a no-op once the run record is written
    # The docker CLI would otherwise follow DOCKER_CONTEXT or its current context, which the
    # engine client does not read: the session must run on the engine preflight checked. It
    # reads the configuration folder step 0 checked, not one a changed $HOME would name.
    cli_env = dict(env)
    if verified.engine_host is not None:
        cli_env["DOCKER_HOST"] = verified.engine_host
    if config.engine == "docker" and config.docker_config:
        cli_env["DOCKER_CONFIG"] = config.docker_config
    try:
        with staging:
            staging.confirm()
            code = execute(argv, cli_env, ready=None if egress is None else egress.ready)
    finally:
        if egress is not None:
            egress.close()
    ledger.append("exit", image=verified.pinned, code=code)
    return code
