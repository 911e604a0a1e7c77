"""The in-image bridge from the session's loopback port to the proxy's Unix socket.

Checked with clients and servers it did not write: curl sends a request through the bridge
to CPython's http.server behind a Unix socket, and the bytes arrive unchanged both ways.
"""

from __future__ import annotations

import contextlib
import http.server
import os
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from terminai_apts.egress_bridge import AddressError, parse_address


class _UnixHTTP(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


class _Echo(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = f"seen {self.command} {self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: object) -> None:
        pass

    def address_string(self) -> str:  # a Unix peer has no host
        return "unix"


@pytest.fixture
def upstream(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "proxy.sock"
    server = _UnixHTTP(str(path), _Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield path
    server.shutdown()
    server.server_close()


def _bridge(listen: str, connect: str, *extra: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-I", "-m", "terminai_apts.egress_bridge", "--listen", listen, "--connect", connect, *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    assert line.startswith("listening "), (line, process.stderr.read() if process.poll() is not None else "")
    return process, line.removeprefix("listening ")


def test_curl_reaches_the_unix_socket_through_the_loopback_port(upstream: Path) -> None:
    process, address = _bridge("tcp:127.0.0.1:0", f"unix:{upstream}")
    try:
        port = address.rsplit(":", 1)[1]
        done = subprocess.run(
            ["curl", "-sS", "--max-time", "10", "--proxy", f"http://127.0.0.1:{port}", "http://allowed.test/x?y=1"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        # A proxy request: the absolute URL arrives as the request target, byte for byte.
        assert done.stdout == "seen GET http://allowed.test/x?y=1"
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0


def test_bytes_pass_unchanged_both_ways_and_half_close_is_passed_on(tmp_path: Path) -> None:
    path = tmp_path / "echo.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)

    def echo() -> None:
        conn, _ = server.accept()
        with conn:
            data = b""
            while chunk := conn.recv(65536):
                data += chunk
            conn.sendall(data[::-1])

    threading.Thread(target=echo, daemon=True).start()
    process, address = _bridge("tcp:127.0.0.1:0", f"unix:{path}")
    try:
        payload = os.urandom(1 << 20)
        with socket.create_connection(("127.0.0.1", int(address.rsplit(":", 1)[1])), timeout=10) as client:
            client.sendall(payload)
            client.shutdown(socket.SHUT_WR)
            back = b""
            while chunk := client.recv(65536):
                back += chunk
        assert back == payload[::-1]
    finally:
        process.terminate()
        process.wait(timeout=10)
        server.close()


def test_an_unreachable_destination_closes_the_client_and_the_bridge_keeps_serving(tmp_path: Path) -> None:
    process, address = _bridge("tcp:127.0.0.1:0", f"unix:{tmp_path / 'nobody.sock'}", "--wait-seconds", "0.2")
    try:
        for _ in range(3):
            with socket.create_connection(("127.0.0.1", int(address.rsplit(":", 1)[1])), timeout=10) as client:
                client.sendall(b"CONNECT denied.test:443 HTTP/1.1\r\n\r\n")
                # Closed with the request unread: an end of stream or a reset, never an answer.
                with contextlib.suppress(ConnectionResetError):
                    assert client.recv(1) == b""
        assert process.poll() is None
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_a_request_made_before_the_proxy_listens_waits_for_its_socket(tmp_path: Path) -> None:
    path = tmp_path / "late.sock"
    process, address = _bridge("tcp:127.0.0.1:0", f"unix:{path}")
    try:
        with socket.create_connection(("127.0.0.1", int(address.rsplit(":", 1)[1])), timeout=10) as client:
            client.sendall(b"GET http://allowed.test/late HTTP/1.0\r\n\r\n")
            time.sleep(0.5)  # the proxy starts late, beside the session
            server = _UnixHTTP(str(path), _Echo)
            threading.Thread(target=server.serve_forever, daemon=True).start()
            answer = b""
            while chunk := client.recv(65536):
                answer += chunk
        assert answer.endswith(b"seen GET http://allowed.test/late")
        server.shutdown()
        server.server_close()
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_the_unix_listener_removes_its_socket_on_sigterm(tmp_path: Path) -> None:
    path = tmp_path / "relay.sock"
    process, _ = _bridge(f"unix:{path}", "tcp:127.0.0.1:9")
    assert path.is_socket()
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=10) == 0
    assert not path.exists()


def test_background_mode_is_bound_before_the_parent_returns(upstream: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-I",
            "-m",
            "terminai_apts.egress_bridge",
            "--background",
            "--listen",
            "tcp:127.0.0.1:0",
            "--connect",
            f"unix:{upstream}",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    port = int(done.stdout.split(":")[-1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        client.sendall(b"GET http://a.test/ HTTP/1.0\r\n\r\n")
        assert client.recv(100).startswith(b"HTTP/1.0 200")
    # The detached child is found by its port and stopped (this test's own process).
    pids = subprocess.run(["fuser", f"{port}/tcp"], capture_output=True, text=True, check=False).stdout.split()
    for pid in pids:
        os.kill(int(pid), signal.SIGTERM)
    assert pids


@pytest.mark.parametrize("text", ["tcp:127.0.0.1", "unix:relative.sock", "udp:1.2.3.4:5", "tcp::80", "tcp:h:99999"])
def test_addresses_outside_the_grammar_are_refused(text: str) -> None:
    with pytest.raises(AddressError):
        parse_address(text)
