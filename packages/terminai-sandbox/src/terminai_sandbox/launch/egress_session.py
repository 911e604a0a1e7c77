"""The host side of a session's network policy: the proxy it may reach, started and stopped with it.

A session with a policy keeps ``--network none``; what it gets is a directory holding one
Unix socket, mounted at :data:`~terminai_sandbox.launch.network.SOCKET_DIR`:

``allow``
    the project's allowlisting proxy (``python -m terminai_apts.egress serve``) as a host
    process (:class:`~terminai_sandbox.launch.helper_process.HelperProcess`), given the
    policy as JSON, the socket's path and the audit ledger, to which it appends every
    connection it allows or refuses.
``proxy-command``
    the launcher we replace's knob: the command runs in a container of its own, from the
    same verified image by digest, hardened as the session is (read-only root, every
    capability dropped, no-new-privileges, an unprivileged user, limits), on the host's
    network (the engine has no bridge) and listening on :data:`LEGACY_PORT`; a host relay
    carries the socket to it.

Layout on the host (a fresh directory of mode 0700 under ``$TMPDIR`` or ``/tmp``, so no
other host user reaches the socket)::

    /tmp/terminai-egress-XXXX/      0700  the launcher's
        policy.json, proxy.log            never mounted
        sock/                       0711  mounted read-only at /run/terminai/egress
            proxy.sock              0666  (connect needs write permission on the socket)

:meth:`Egress.close` stops the helper (SIGTERM, then SIGKILL), removes the proxy
container and the directory: nothing is left behind, on every path. (``shutil``,
``socket`` and ``subprocess`` load inside the functions: the kernel's seal imports every
module of it, and only a session with a policy needs them.)
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from terminai_sandbox.common.hardening import (
    DROPPED_CAPABILITIES,
    HARDENED_LIMITS,
    HOME_IN_IMAGE,
    HOME_SIZE,
    IMAGE_UID,
    SECURITY_OPTIONS,
    TMP_SIZE,
)
from terminai_sandbox.errors import EgressError
from terminai_sandbox.launch.helper_process import HelperProcess
from terminai_sandbox.launch.network import SOCKET_NAME, NetworkChoice, test_hosts_file

#: Where the legacy proxy command must listen (the launcher we replace documents ``:::8877``).
LEGACY_PORT = 8877
#: The proxy command's container runs the entrypoint's health check first: allow for it.
LEGACY_READY_SECONDS = 30.0
#: A Unix socket's path must fit ``sun_path``.
SUN_PATH = 107


class Egress:
    """A started proxy and the socket directory the session mounts."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.socket_dir = root / "sock"
        self.socket = self.socket_dir / SOCKET_NAME
        self.helper: HelperProcess | None = None
        self.container: tuple[str, str] | None = None  # (engine binary, name)
        self.engine_env: dict[str, str] | None = None  # the environment the container was started with
        self.closed = False

    def record(self) -> dict[str, object]:
        """What the ledger keeps: where the socket was and what served it."""
        served = "proxy-command container " + self.container[1] if self.container else "egress proxy"
        return {"socket_dir": str(self.socket_dir), "served_by": served}

    def ready(self) -> None:
        """Wait until the proxy listens (bounded); :class:`EgressError` (the proxy stopped) if it does not."""
        if self.helper is not None:
            self.helper.ready()

    def close(self) -> None:
        import shutil  # noqa: PLC0415  (only with a network policy)
        import subprocess  # noqa: PLC0415

        if self.closed:
            return
        self.closed = True
        try:
            if self.helper is not None:
                self.helper.stop()
        finally:
            try:
                if self.container is not None:
                    binary, name = self.container
                    subprocess.run(
                        [binary, "rm", "-f", name], capture_output=True, timeout=60, check=False, env=self.engine_env
                    )
            finally:
                shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Egress:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _make_root(env: Mapping[str, str]) -> Egress:
    # mkdtemp's guarantees (a fresh name, mode 0700, no link followed) without importing
    # tempfile and shutil on a session start: os.mkdir fails if the name exists.
    base = env.get("TMPDIR") or "/tmp"
    root = Path(base) / f"terminai-egress-{os.urandom(8).hex()}"
    os.mkdir(root, 0o700)
    egress = Egress(root)
    if len(os.fsencode(egress.socket)) > SUN_PATH:
        os.rmdir(root)
        raise EgressError(
            f"the proxy's socket path {egress.socket} is longer than a Unix socket allows",
            hint="set TMPDIR to a short directory (such as /tmp)",
        )
    egress.socket_dir.mkdir(mode=0o700)
    # The session's user is whatever uid the engine gives it; the 0700 root guards the host side.
    os.chmod(egress.socket_dir, 0o711)  # noqa: S103  (inside the 0700 root: traversal for the session only)
    return egress


def start(
    choice: NetworkChoice,
    *,
    ledger: Path,
    env: Mapping[str, str],
    cwd: str,
    name: str,
    engine_binary: str,
    image_ref: str,
) -> Egress:
    """The proxy for ``choice`` (``allow`` or ``proxy-command``), listening; :class:`EgressError` if not."""
    policy = choice.policy
    if policy is None:
        raise ValueError("an off policy has no proxy")
    egress = _make_root(env)
    try:
        if choice.mode == "allow":
            policy_file = egress.root / "policy.json"
            import json  # noqa: PLC0415  (only with a network policy)

            policy_file.write_text(json.dumps(policy.to_json()), encoding="utf-8")
            argv = [
                sys.executable,
                "-I",
                "-m",
                "terminai_apts.egress",
                "serve",
                "--policy-json",
                str(policy_file),
                "--socket",
                str(egress.socket),
                "--ledger",
                str(ledger),
                # The session's user is whatever uid the engine gives it; the 0700 directory
                # above the socket keeps every other host user out.
                "--socket-mode",
                "666",
            ]
            hosts = test_hosts_file(env, cwd=cwd)
            if hosts is not None:
                argv += ["--hosts-file", hosts]
            # Not waited for here: the proxy starts while the engine starts the session, whose
            # bridge waits for the socket; run.execute waits for `listening` (or stops the session).
            egress.helper = HelperProcess.start(
                "egress proxy", argv, log=egress.root / "proxy.log", env=env, wait=False
            )
        elif choice.mode == "proxy-command":
            egress.container, egress.engine_env = (engine_binary, f"{name}-proxy"), dict(env)
            _start_proxy_command(egress, policy.proxy_command, engine_binary, image_ref, env=env)
            relay = [
                sys.executable,
                "-I",
                "-m",
                "terminai_apts.egress_bridge",
                "--listen",
                f"unix:{egress.socket}",
                "--connect",
                f"tcp:127.0.0.1:{LEGACY_PORT}",
            ]
            egress.helper = HelperProcess.start("proxy command's relay", relay, log=egress.root / "relay.log", env=env)
            os.chmod(egress.socket, 0o666)  # noqa: S103  (inside the 0700 root: only the session's mount reaches it)
        else:
            raise ValueError(f"no proxy for the network mode {choice.mode!r}")
    except BaseException:
        egress.close()
        raise
    return egress


def proxy_command_argv(binary: str, name: str, image_ref: str, command: Sequence[str]) -> list[str]:
    """The legacy proxy command's container: the session's hardening, the host's network, the image by digest."""
    limits = HARDENED_LIMITS
    return [
        binary,
        "run",
        "--detach",
        "--init",
        "--name",
        name,
        "--label",
        "dev.terminai.sandbox=1",
        "--label",
        "dev.terminai.role=proxy-command",
        "--read-only",
        "--tmpfs",
        f"/tmp:rw,nosuid,nodev,size={TMP_SIZE}",
        "--tmpfs",
        f"{HOME_IN_IMAGE}:rw,nosuid,nodev,size={HOME_SIZE},mode=0700,uid={IMAGE_UID},gid={IMAGE_UID}",
        *[word for cap in DROPPED_CAPABILITIES for word in ("--cap-drop", cap)],
        *[word for option in SECURITY_OPTIONS for word in ("--security-opt", option)],
        "--user",
        f"{IMAGE_UID}:{IMAGE_UID}",
        "--env",
        f"HOME={HOME_IN_IMAGE}",
        # The engine runs with --bridge=none: the host's network is the only one a proxy can use.
        "--network",
        "host",
        "--pids-limit",
        str(limits.pids),
        "--memory",
        limits.memory,
        "--cpus",
        limits.cpus,
        image_ref,
        *command,
    ]


def _port_open(port: int) -> bool:
    import socket  # noqa: PLC0415  (only with a network policy)

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.25)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _start_proxy_command(
    egress: Egress, command: Sequence[str], binary: str, image_ref: str, *, env: Mapping[str, str]
) -> None:
    import subprocess  # noqa: PLC0415  (only with a network policy)

    assert egress.container is not None
    name = egress.container[1]
    if _port_open(LEGACY_PORT):
        egress.container = None  # not ours: never removed
        raise EgressError(
            f"port {LEGACY_PORT} on this host already answers, so the proxy command's own listener could not be told "
            "apart",
            hint=f"stop what listens on 127.0.0.1:{LEGACY_PORT}, or use SANDBOX_NETWORK=allow:HOSTS instead",
        )
    argv = proxy_command_argv(binary, name, image_ref, command)
    started = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False, env=dict(env))
    if started.returncode != 0:
        raise EgressError(
            f"the proxy command's container did not start: {started.stderr.strip()[-500:]}",
            hint="check TERMINAI_SANDBOX_PROXY_COMMAND: it runs as argv (no shell) inside the verified image",
        )
    deadline = time.monotonic() + LEGACY_READY_SECONDS
    while not _port_open(LEGACY_PORT):
        state = subprocess.run(
            [binary, "inspect", "--format", "{{.State.Running}} {{.State.ExitCode}}", name],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
            env=dict(env),
        )
        running = state.stdout.split()[:1] == ["true"]
        if not running or time.monotonic() > deadline:
            logs = subprocess.run(
                [binary, "logs", "--tail", "5", name],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
                env=dict(env),
            )
            said = (logs.stdout + logs.stderr).strip().replace("\n", " | ")[-500:]
            why = (
                f"exited (code {state.stdout.split()[1] if len(state.stdout.split()) > 1 else '?'})"
                if not running
                else f"did not listen on port {LEGACY_PORT} within {LEGACY_READY_SECONDS:g} s"
            )
            raise EgressError(
                f"the proxy command {' '.join(command)!r} {why}" + (f": {said}" if said else ""),
                hint=f"the proxy command must start a proxy listening on port {LEGACY_PORT} (as the launcher it "
                "replaces documents); fix TERMINAI_SANDBOX_PROXY_COMMAND or unset it",
            )
        time.sleep(0.25)
