"""Origin servers for the egress attack tests, run inside the test's network namespace.

``python origin.py CONFIG.json`` listens on every ``[address, port, tls]`` of the config and
answers each request with ``origin ADDRESS:PORT PATH`` (so a test sees which server it
reached); ``/redirect`` answers 302 to the config's ``redirect`` URL, and ``/simple/...``
and ``/files/...`` serve a PEP 503 index of the config's ``wheel``. Every request that arrives
is appended to the config's ``log``, so a test can prove what never reached an origin.
Prints ``ready``.
"""

from __future__ import annotations

import http.server
import json
import socketserver
import ssl
import sys
import threading
from pathlib import Path


def main() -> None:
    config = json.loads(Path(sys.argv[1]).read_text())
    servers = []
    for address, port, tls in config["listen"]:
        servers.append(_server(config, address, port, tls))
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    print("ready", flush=True)
    sys.stdin.read()  # until the test closes our stdin


def _server(config: dict[str, object], address: str, port: int, tls: bool) -> socketserver.TCPServer:
    wheel = Path(str(config["wheel"])) if config.get("wheel") else None

    log = Path(str(config["log"]))

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: a request the proxy forwarded second would be answered

        def do_GET(self) -> None:
            with log.open("a") as out:
                out.write(f"{address}:{port} {self.command} {self.path} host={self.headers.get('Host')}\n")
            if self.path == "/redirect":
                self.send_response(302)
                self.send_header("Location", str(config["redirect"]))
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if wheel is not None and self.path.startswith("/simple/"):
                body = f'<html><body><a href="/files/{wheel.name}">{wheel.name}</a></body></html>'.encode()
                self._send(body, "text/html")
                return
            if wheel is not None and self.path == f"/files/{wheel.name}":
                self._send(wheel.read_bytes(), "application/octet-stream")
                return
            self._send(f"origin {address}:{port} {self.path}".encode(), "text/plain")

        def _send(self, body: bytes, kind: str) -> None:
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True
        allow_reuse_address = True
        address_family = __import__("socket").AF_INET6 if ":" in address else __import__("socket").AF_INET

    server = Server((address, port), Handler)
    if tls:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(str(config["cert"]), str(config["key"]))
        server.socket = context.wrap_socket(server.socket, server_side=True)
    return server


if __name__ == "__main__":
    main()
