"""Run a verified image: the hardened engine command line, then the session itself.

Only a :class:`~terminai_sandbox.launch.preflight.VerifiedImage` is accepted, and the
image is always addressed by digest. Defaults: ``--rm --init``, read-only root with tmpfs
``/tmp`` and home, ``--cap-drop ALL``, ``no-new-privileges``, ``--network none``, pids,
memory and CPU limits, a random name and labels, the host uid:gid (rootless podman:
``--userns=keep-id``; see :mod:`~terminai_sandbox.engine.protocol` for every engine
difference), the working directory mounted at the same path, ``-t`` only with a
TTY, ``SANDBOX`` set inside, stdin passed through, signals forwarded, the exit code
returned unchanged. With ``runsc`` the session runs under gVisor (``--runtime``; see
:mod:`terminai_sandbox.engine.runtime`). Inherited environment values are passed by name (``-e NAME``), so they
never appear in the command line or the ledger.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence

from terminai_sandbox.common.hardening import (
    DROPPED_CAPABILITIES,
    HARDENED_LIMITS,
    HOME_IN_IMAGE,
    HOME_SIZE,
    IMAGE_UID,
    SECURITY_OPTIONS,
    TMP_SIZE,
    Limits,
)
from terminai_sandbox.common.which import which
from terminai_sandbox.engine.flags import session_flags
from terminai_sandbox.engine.runtime import engine_flags
from terminai_sandbox.errors import ConfigError, LaunchError
from terminai_sandbox.launch.config import LaunchConfig, workdir_problem
from terminai_sandbox.launch.held_mounts import Placed
from terminai_sandbox.launch.network import SESSION_NETWORK, SOCKET_DIR, session_env
from terminai_sandbox.launch.preflight import VerifiedImage

TYPE_CHECKING = False  # not `from typing import ...`: a launch never imports typing (~3 ms)
if TYPE_CHECKING:
    import signal as _signal  # the same functions and numbers; typeshed describes only `signal`
else:
    import _signal


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
    limits: Limits = HARDENED_LIMITS,
    name: str | None = None,
    bashrc: str | None = None,
    binary: str | None = None,
    rlimits: Mapping[str, tuple[int, int]] | None = None,
    runsc: str | None = None,
    env: Mapping[str, str] | None = None,
    mounts: Sequence[Placed] | None = None,
    egress: str | None = None,
) -> list[str]:
    """The engine command line; ``mounts``: what :mod:`~terminai_sandbox.launch.held_mounts` placed
    (default: the configured mounts as written, for a command line that is only shown);
    ``egress``: the host directory holding the proxy's socket (a network policy other than off)."""
    if not isinstance(image, VerifiedImage):
        raise TypeError("build_argv needs a VerifiedImage from preflight()")
    if config.network.policy is not None and limits.network != SESSION_NETWORK:
        # The policy's proxy is the only way out; an engine network beside it would be a second one.
        raise ConfigError(
            f"--network {limits.network} cannot be combined with the network policy {config.network.describe()}",
            hint="drop --network: a session with a policy stays on --network none and reaches out only "
            "through the policy's proxy",
        )
    if (config.network.policy is not None) != (egress is not None):
        raise TypeError("build_argv needs the proxy's socket directory exactly when a network policy is set")
    refuse_workdir(cwd, env if env is not None else {})
    name = name or f"terminai-{os.urandom(6).hex()}"
    specific = session_flags(
        engine,
        home=HOME_IN_IMAGE,
        home_size=HOME_SIZE,
        uid=uid,
        gid=gid,
        image_uid=IMAGE_UID,
        set_uid_gid=config.set_uid_gid,
        rlimits=rlimits,
    )
    argv = [binary or which(engine) or engine, "run", "--rm", "--init", "-i"]
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
        f"/tmp:rw,nosuid,nodev,size={TMP_SIZE}",
        "--tmpfs",
        specific.home_tmpfs,
        *[word for cap in DROPPED_CAPABILITIES for word in ("--cap-drop", cap)],
        *[word for option in SECURITY_OPTIONS for word in ("--security-opt", option)],
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
        *specific.identity,
        *specific.extra,
        *engine_flags(engine, config.runtime, runsc=runsc, egress=egress is not None),
    ]
    if bashrc:
        argv += [
            "--mount",
            bind_spec(bashrc, "/etc/terminai/sandbox.bashrc", read_only=True),
            "--env",
            "TERMINAI_BASHRC=/etc/terminai/sandbox.bashrc",
        ]
    placed = (
        mounts
        if mounts is not None
        else [Placed(source=m.source, target=m.target, read_only=m.read_only) for m in config.mounts]
    )
    for mount in placed:
        # --mount, not --volume: a source that is gone is an error, never an empty folder the engine creates.
        argv += ["--mount", bind_spec(mount.source, mount.target, read_only=mount.read_only)]
    if egress is not None:
        # The directory, not the socket: the proxy creates the socket inside it, and the read-only
        # mount still lets the session connect (connect() needs no write access to the mount).
        argv += ["--mount", bind_spec(egress, SOCKET_DIR, read_only=True)]
        for value in session_env():
            argv += ["--env", value]
    for source, target, read_only in config.journal.mounts():
        argv += ["--mount", bind_spec(source, target, read_only=read_only)]
    for value in config.journal.session_env():
        argv += ["--env", value]  # set here, from checked settings: SANDBOX_ENV refuses TERMINAI_* names
    for port in config.ports:
        argv += ["--publish", f"127.0.0.1:{port.host}:{port.container}"]
    for item in config.env:
        argv += ["--env", item.name if item.value is None else f"{item.name}={item.value}"]
    argv += list(config.flags)
    argv.append(image.run_ref)
    argv += list(command)
    return argv


def refuse_workdir(cwd: str, env: Mapping[str, str]) -> None:
    """Raise :class:`ConfigError` if the working directory may not be the session's.

    It is mounted read-write, so it passes the checks ``SANDBOX_MOUNTS`` does. A launch
    calls this before preflight (a refused folder costs no engine or registry request);
    :func:`build_argv` calls it again for callers that build a command line directly.
    """
    problem = workdir_problem(cwd, env)
    if problem is not None:
        raise ConfigError(
            f"the working directory {cwd} is refused: it {problem} (every session mounts it read-write)",
            hint="start the session from the project folder it should work in",
        )


def bind_spec(source: str, target: str, *, read_only: bool) -> str:
    """A ``--mount`` value; the engines read it as one CSV record, so a field with ``,`` or ``"`` is quoted."""

    def quoted(item: str) -> str:
        return '"' + item.replace('"', '""') + '"' if "," in item or '"' in item else item

    spec = ["type=bind", quoted(f"src={source}"), quoted(f"dst={target}")]
    return ",".join([*spec, "readonly"] if read_only else spec)


def execute(argv: Sequence[str], env: Mapping[str, str], *, ready: Callable[[], object] | None = None) -> int:
    """Run the engine CLI with stdin/stdout/stderr passed through; forward signals; return its code.

    ``posix_spawn`` and ``waitpid`` do what ``subprocess.Popen`` would here, without its import
    cost. The code is the child's exit status, or ``-SIGNAL`` when a signal ended it. Handlers
    are set through ``_signal``, the C module under :mod:`signal` (which wraps the same calls
    in enums, ~0.5 ms of every session start).
    """
    try:
        pid = os.posix_spawnp(argv[0], list(argv), dict(env))
    except OSError as exc:
        raise LaunchError(f"cannot start {argv[0]}: {exc.strerror}") from None

    def forward(signum: int, _frame: object) -> None:
        os.kill(pid, signum)

    previous = {sig: _signal.signal(sig, forward) for sig in (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP)}
    try:
        if ready is not None:
            # What the session needs that starts beside it (the policy's proxy): if it fails, the
            # session is stopped (it could reach nothing anyway) and the launch fails with it.
            try:
                ready()
            except BaseException:
                os.kill(pid, _signal.SIGTERM)
                os.waitpid(pid, 0)
                _remove_container(argv, env)
                raise
        _, status = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(status)
    finally:
        for sig, handler in previous.items():
            _signal.signal(sig, handler)


def _remove_container(argv: Sequence[str], env: Mapping[str, str], *, seconds: float = 30.0) -> None:
    """``ENGINE rm -f NAME`` for the session ``argv`` named: an engine CLI stopped while it was
    creating or starting the container leaves it behind (``--rm`` is the daemon's, after a start)."""
    if "--name" not in argv:
        return
    name = argv[list(argv).index("--name") + 1]
    try:
        quiet = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_WRONLY, 0) for fd in (1, 2)]  # the user sees our error
        pid = os.posix_spawnp(argv[0], [argv[0], "rm", "-f", name], dict(env), file_actions=quiet)
    except OSError:
        return
    deadline = time.monotonic() + seconds
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        if time.monotonic() > deadline:
            os.kill(pid, _signal.SIGKILL)
            os.waitpid(pid, 0)
            return
        time.sleep(0.05)


def host_identity() -> tuple[int, int]:
    return os.getuid(), os.getgid()
