"""A byte pump between a listening socket and one fixed destination: the session's only way out.

A session with a network policy has no network but loopback. Its entrypoint starts this
bridge when the launcher mounted the proxy's Unix socket (``/run/terminai/egress/proxy.sock``):
it listens on ``127.0.0.1:3128`` (the session's ``HTTP(S)_PROXY``) and copies each
connection's bytes, both ways, to that socket; the proxy on the other side decides what
may pass. The launcher runs the same module on the host the other way round (a Unix socket
to ``127.0.0.1:8877``) for the legacy proxy command's container.

The bridge never reads what it carries: no parsing, so nothing in it for a request to
attack. It is written here (standard library, ~150 lines) rather than taken from Debian's
socat because the image already carries this interpreter and the toolset: one more package
would be one more thing to pin, scan and keep in the SBOM for a loop of ``recv``/``sendall``.

``python -m terminai_apts.egress_bridge --listen tcp:127.0.0.1:3128 --connect unix:PATH
[--background] [--max-connections N]``: prints ``listening ADDRESS`` on stdout once bound
(with the port the kernel chose for ``:0``; with ``--background``, a detached child then
serves and the command exits 0); stops on SIGTERM.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Sequence

Address = str | tuple[str, int]

CHUNK = 64 * 1024
#: Connections open at once; more wait in the listen backlog (the proxy has its own limits).
MAX_CONNECTIONS = 256
#: How long a connection waits for the proxy's socket to appear (the launcher's own bound is 10 s).
WAIT_SECONDS = 15.0
BACKLOG = 64


class AddressError(ValueError):
    """An address that is neither ``tcp:HOST:PORT`` nor ``unix:PATH``."""


def parse_address(text: str) -> tuple[int, Address]:
    """``(family, address)`` for ``tcp:HOST:PORT`` (IPv4 literal) or ``unix:/ABSOLUTE/PATH``."""
    kind, _, rest = text.partition(":")
    if kind == "unix" and rest.startswith("/"):
        return socket.AF_UNIX, rest
    if kind == "tcp":
        host, _, port = rest.rpartition(":")
        if host and port.isascii() and port.isdigit() and int(port) < 65536:
            return socket.AF_INET, (host, int(port))
    raise AddressError(f"{text!r} is not tcp:HOST:PORT or unix:/PATH")


def listen(family: int, address: Address) -> socket.socket:
    server = socket.socket(family, socket.SOCK_STREAM)
    if family == socket.AF_INET:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(address)
    server.listen(BACKLOG)
    return server


def _pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy ``source`` to ``sink`` until end of stream, then pass the half-close on."""
    try:
        while True:
            data = source.recv(CHUNK)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


def _connect(upstream: socket.socket, address: Address, wait: float) -> bool:
    """Connect, waiting up to ``wait`` seconds for a Unix socket that is not there yet.

    The launcher starts the proxy beside the session, so the session's first request may
    come before the proxy listens; it waits for it instead of failing.
    """
    deadline = time.monotonic() + wait
    while True:
        try:
            upstream.connect(address)
            return True
        except (FileNotFoundError, ConnectionRefusedError):
            if not isinstance(address, str) or time.monotonic() >= deadline:
                return False
            time.sleep(0.02)
        except OSError:
            return False


def _carry(
    client: socket.socket, family: int, address: Address, slots: threading.BoundedSemaphore, wait: float
) -> None:
    try:
        with client, socket.socket(family, socket.SOCK_STREAM) as upstream:
            if not _connect(upstream, address, wait):
                return  # the client sees its connection closed: there is no way out
            back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
            back.start()
            _pump(client, upstream)
            back.join()
    finally:
        slots.release()


def serve(
    server: socket.socket,
    family: int,
    address: Address,
    *,
    max_connections: int = MAX_CONNECTIONS,
    wait: float = WAIT_SECONDS,
) -> None:
    """Accept forever; each connection is carried to ``address`` on a thread of its own."""
    slots = threading.BoundedSemaphore(max_connections)
    while True:
        slots.acquire()
        try:
            client, _ = server.accept()
        except OSError:
            slots.release()
            continue
        threading.Thread(target=_carry, args=(client, family, address, slots, wait), daemon=True).start()


def _stop(_signum: int, _frame: object) -> None:
    raise SystemExit(0)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m terminai_apts.egress_bridge", description=__doc__.split("\n")[0])
    parser.add_argument("--listen", required=True, help="tcp:HOST:PORT or unix:/PATH")
    parser.add_argument("--connect", required=True, help="tcp:HOST:PORT or unix:/PATH")
    parser.add_argument("--background", action="store_true", help="serve from a detached child once bound")
    parser.add_argument("--max-connections", type=int, default=MAX_CONNECTIONS)
    parser.add_argument("--wait-seconds", type=float, default=WAIT_SECONDS, help="for a Unix socket to appear")
    args = parser.parse_args(argv)
    try:
        listen_family, listen_address = parse_address(args.listen)
        family, address = parse_address(args.connect)
    except AddressError as exc:
        sys.stderr.write(f"egress bridge: {exc}\n")
        return 2
    try:
        server = listen(listen_family, listen_address)
    except OSError as exc:
        sys.stderr.write(f"egress bridge: cannot listen on {args.listen}: {exc.strerror or exc}\n")
        return 1
    bound = server.getsockname()
    shown = f"tcp:{bound[0]}:{bound[1]}" if listen_family == socket.AF_INET else args.listen
    if args.background and os.fork() != 0:
        sys.stdout.write(f"listening {shown}\n")
        sys.stdout.flush()
        return 0
    # Before the line that says we listen: a SIGTERM right after it must still remove the socket.
    signal.signal(signal.SIGTERM, _stop)
    try:
        if args.background:
            os.setsid()
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
        else:
            sys.stdout.write(f"listening {shown}\n")
            sys.stdout.flush()
        serve(server, family, address, max_connections=args.max_connections, wait=args.wait_seconds)
    finally:
        server.close()
        if listen_family == socket.AF_UNIX:
            with contextlib.suppress(OSError):
                os.unlink(str(listen_address))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
