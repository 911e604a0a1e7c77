"""Run a verified image: the hardened engine command line, then the session itself.

Only a :class:`~terminai_sandbox.launcher.preflight.VerifiedImage` is accepted, and the
image is always addressed by digest. Defaults: ``--rm --init``, read-only root with tmpfs
``/tmp`` and home, ``--cap-drop ALL``, ``no-new-privileges``, ``--network none``, pids,
memory and CPU limits, a random name and labels, the host uid:gid (podman:
``--userns=keep-id``), the working directory mounted at the same path, ``-t`` only with a
TTY, ``SANDBOX`` set inside, stdin passed through, signals forwarded, the exit code
returned unchanged. Inherited environment values are passed by name (``-e NAME``), so they
never appear in the command line or the ledger.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from terminai_sandbox.config import LaunchConfig
from terminai_sandbox.errors import LaunchError
from terminai_sandbox.launcher.preflight import VerifiedImage

HOME_IN_IMAGE = "/home/sandbox"
IMAGE_UID = 10001


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    memory: str = "2g"
    cpus: str = "2"
    pids: int = 512
    network: str = "none"


def build_argv(
    engine: str,
    image: VerifiedImage,
    config: LaunchConfig,
    command: Sequence[str],
    *,
    cwd: str,
    tty: bool,
    uid: int,
    gid: int,
    limits: Limits = Limits(),
    name: str | None = None,
    bashrc: str | None = None,
) -> list[str]:
    if not isinstance(image, VerifiedImage):
        raise TypeError("build_argv needs a VerifiedImage from preflight()")
    binary = shutil.which(engine) or engine
    name = name or f"terminai-{secrets.token_hex(6)}"
    argv = [binary, "run", "--rm", "--init", "-i"]
    if tty:
        argv.append("-t")
    argv += [
        "--name",
        name,
        "--label",
        "dev.terminai.sandbox=1",
        "--label",
        f"dev.terminai.verified={image.digest}",
        "--read-only",
        "--tmpfs",
        "/tmp:rw,nosuid,nodev,size=512m",
        "--tmpfs",
        f"{HOME_IN_IMAGE}:rw,nosuid,nodev,size=256m,uid={uid},gid={gid},mode=0700",
        "--cap-drop",
        "ALL",
        "--security-opt",
        "no-new-privileges",
        "--network",
        limits.network,
        "--pids-limit",
        str(limits.pids),
        "--memory",
        limits.memory,
        "--cpus",
        limits.cpus,
        "--env",
        f"SANDBOX={name}",
        "--env",
        f"HOME={HOME_IN_IMAGE}",
        "--volume",
        f"{cwd}:{cwd}:rw",
        "--workdir",
        cwd,
    ]
    if engine == "podman":
        argv += ["--userns=keep-id"]
    # The host identity keeps files in mounted folders owned by the user; root on the host
    # is never carried into the container (the image's unprivileged user is used instead).
    if config.set_uid_gid is not False and uid != 0:
        argv += ["--user", f"{uid}:{gid}"]
    if bashrc:
        argv += [
            "--volume",
            f"{bashrc}:/etc/terminai/sandbox.bashrc:ro",
            "--env",
            "TERMINAI_BASHRC=/etc/terminai/sandbox.bashrc",
        ]
    for mount in config.mounts:
        argv += ["--volume", f"{mount.source}:{mount.target}:{'ro' if mount.read_only else 'rw'}"]
    for port in config.ports:
        argv += ["--publish", f"127.0.0.1:{port.host}:{port.container}"]
    for item in config.env:
        argv += ["--env", item.name if item.value is None else f"{item.name}={item.value}"]
    argv += list(config.flags)
    argv.append(image.run_ref)
    argv += list(command)
    return argv


def execute(argv: Sequence[str], env: Mapping[str, str]) -> int:
    """Run the engine CLI with stdin/stdout/stderr passed through; forward signals; return its code."""
    try:
        proc = subprocess.Popen(list(argv), env=dict(env))
    except OSError as exc:
        raise LaunchError(f"cannot start {argv[0]}: {exc.strerror}") from None

    def forward(signum: int, _frame: object) -> None:
        proc.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        return proc.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def host_identity() -> tuple[int, int]:
    return os.getuid(), os.getgid()
