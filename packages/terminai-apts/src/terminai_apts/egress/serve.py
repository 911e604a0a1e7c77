"""The proxy process: read its inputs, bind, confine itself, serve until told to stop."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import os
import signal
import sys
from pathlib import Path

from terminai_apts.egress.errors import AuditError, ConfigError
from terminai_apts.egress.harden import close_inherited_descriptors, confine, resolve_user
from terminai_apts.egress.inputs import read_input
from terminai_apts.egress.ledger import LedgerFile, LedgerWriter
from terminai_apts.egress.policy import NetworkPolicy
from terminai_apts.egress.proxy import EgressProxy, EgressRecord
from terminai_apts.egress.resolve import HostsFileResolver, SystemResolver, read_hosts_file
from terminai_apts.records import frozen_record


@frozen_record
class ServeOptions:
    """What ``serve`` was asked for, as the command line gave it."""

    policy_json: str
    socket: str | None
    ledger: str
    # The cluster's proxy pod listens on this port of its own address instead of a socket.
    listen_port: int | None = None
    socket_mode: int = 0o600
    user: str | None = None
    hosts_file: str | None = None
    tcp_port: int | None = None
    sni_check: bool = True


def load_policy(path: Path) -> NetworkPolicy:
    text = read_input(path, what="the policy JSON")
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{path}: not JSON ({exc})", hint="write it with NetworkPolicy.to_json()") from None
    policy = NetworkPolicy.from_json(value, source=str(path))
    if policy.mode != "allow":
        raise ConfigError(f"{path}: the proxy serves mode 'allow', not {policy.mode!r}", hint="start it only for allow")
    return policy


# Modules the proxy would otherwise import on first use, after it dropped to a uid that may
# not read the Python installation (a virtual environment under /root, ~/.local): load
# them while it still can. A connection that needed one would fail where it should refuse.
_LATE_IMPORTS = (
    "encodings.idna",
    "encodings.punycode",
    "stringprep",
    "unicodedata",
    "concurrent.futures.thread",
    "logging",
    "traceback",
    "linecache",
    "tokenize",
)


def _preload() -> None:
    for name in _LATE_IMPORTS:
        importlib.import_module(name)


def serve(options: ServeOptions) -> int:
    """Run the proxy until SIGTERM or SIGINT; 0 on a clean stop."""
    close_inherited_descriptors()
    policy = load_policy(Path(options.policy_json))
    resolver: SystemResolver | HostsFileResolver = (
        read_hosts_file(Path(options.hosts_file)) if options.hosts_file else SystemResolver()
    )
    user = resolve_user(options.user) if options.user else None
    if (options.socket is None) == (options.listen_port is None):
        raise ConfigError(
            "pass exactly one of --socket and --listen-port",
            hint="--socket PATH beside a host session, --listen-port PORT in the cluster's proxy pod",
        )
    if options.listen_port is not None:
        if not 1 <= options.listen_port <= 65535:
            raise ConfigError(f"--listen-port {options.listen_port} is outside 1-65535", hint="e.g. --listen-port 3128")
        return _serve_pod(policy, resolver, options, user)
    assert options.socket is not None  # checked above
    socket_path = Path(options.socket)
    if os.path.lexists(socket_path):
        raise ConfigError(
            f"--socket {socket_path} exists", hint="pass a path that does not exist yet (the proxy creates it)"
        )
    if not 0 <= options.socket_mode <= 0o777:
        raise ConfigError(f"--socket-mode {options.socket_mode:o} is not a permission", hint="e.g. --socket-mode 660")
    if options.tcp_port is not None and not 0 <= options.tcp_port <= 65535:
        raise ConfigError(f"--tcp-port {options.tcp_port} is outside 0-65535", hint="0 picks a free port")
    try:
        # Held open so the socket can be removed after the drop to an unprivileged uid, which
        # may not traverse the path's ancestors (unlinkat needs write access to this directory only).
        directory = os.open(socket_path.parent, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise ConfigError(f"--socket {socket_path}: {exc.strerror}", hint="create its directory first") from None
    writer = LedgerWriter(LedgerFile(Path(options.ledger)))
    try:
        asyncio.run(_serve(policy, resolver, writer, socket_path, options, user))
    finally:
        with contextlib.suppress(FileNotFoundError, PermissionError):
            os.unlink(socket_path.name, dir_fd=directory)
        os.close(directory)
        writer.close()
    if writer.failure is not None:
        raise AuditError(f"the proxy stopped: writing {options.ledger} failed: {writer.failure}")
    return 0


def _serve_pod(
    policy: NetworkPolicy,
    resolver: SystemResolver | HostsFileResolver,
    options: ServeOptions,
    user: tuple[int, int] | None,
) -> int:
    writer = LedgerWriter(LedgerFile(Path(options.ledger)))
    try:
        asyncio.run(_serve(policy, resolver, writer, None, options, user))
    finally:
        writer.close()
    if writer.failure is not None:
        raise AuditError(f"the proxy stopped: writing {options.ledger} failed: {writer.failure}")
    return 0


async def _serve(
    policy: NetworkPolicy,
    resolver: SystemResolver | HostsFileResolver,
    writer: LedgerWriter,
    socket_path: Path | None,
    options: ServeOptions,
    user: tuple[int, int] | None,
) -> None:
    stop = asyncio.Event()

    def record(entry: EgressRecord) -> None:
        writer.put(entry.to_json())
        if writer.failure is not None:
            stop.set()  # fail closed: a connection the ledger cannot hold is not served

    proxy = EgressProxy(policy, record=record, resolver=resolver, sni_check=options.sni_check)
    lines = []
    if socket_path is None:
        try:
            lines.append(f"listening tcp 0.0.0.0:{await proxy.listen_pod(options.listen_port or 0)}")
        except OSError as exc:
            raise ConfigError(f"--listen-port {options.listen_port}: {exc.strerror}") from None
    else:
        try:
            await proxy.listen_unix(socket_path, mode=options.socket_mode)
        except OSError as exc:
            raise ConfigError(
                f"--socket {socket_path}: {exc.strerror}", hint="pass a path in a directory you may write"
            ) from None
        lines.append(f"listening {socket_path}")
    if options.tcp_port is not None:
        lines.append(f"listening tcp 127.0.0.1:{await proxy.listen_tcp(options.tcp_port)}")
    if os.geteuid() == 0 and user is not None and socket_path is not None:
        os.chown(socket_path, *user)  # the socket file is the dropped user's, like the process
    _preload()
    confine(max_connections=policy.limits.max_connections, user=user)
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()
    await stop.wait()
    await proxy.close()
