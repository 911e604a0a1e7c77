"""The ClientHello check holds on every CONNECT whose client speaks TLS first, whatever the
port; a tunnel whose first bytes are not a TLS handshake record is relayed unchanged."""

from __future__ import annotations

import contextlib
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from terminai_apts.egress.sni import MAX_HELLO_RECORDS
from terminai_apts.egress.wire import WireLimits

from tests.unit.egress.test_attacks_on_egress_proxy import Lab, read_all


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    made = Lab(tmp_path)
    try:
        yield made
    finally:
        made.close()


ESTABLISHED = b"HTTP/1.1 200 Connection Established\r\n\r\n"


def _vector(width: int, body: bytes) -> bytes:
    return len(body).to_bytes(width, "big") + body


def _hello(name: bytes) -> bytes:
    sni = struct.pack(">H", 0) + _vector(2, _vector(2, b"\x00" + _vector(2, name)))
    body = b"\x03\x03" + bytes(32) + _vector(1, b"") + _vector(2, b"\x00\x2f") + _vector(1, b"\x00") + _vector(2, sni)
    return b"\x16\x03\x01" + _vector(2, b"\x01" + _vector(3, body))


def _tunnel(lab: Lab) -> socket.socket:
    client = lab.connect()
    client.sendall(f"CONNECT 127.0.0.1:{lab.echo.port} HTTP/1.1\r\n\r\n".encode())
    assert client.recv(4096) == ESTABLISHED
    return client


def test_a_plain_tunnel_on_another_port_is_relayed(lab: Lab) -> None:
    with _tunnel(lab) as client:
        client.sendall(b"SSH-2.0-client\r\n")
        assert client.recv(4096) == b"SSH-2.0-client\r\n"  # the echo origin got it unchanged
    (record,) = lab.settled(1)
    assert record.allowed


def test_tls_on_another_port_is_held_to_the_connect_target(lab: Lab) -> None:
    with _tunnel(lab) as client:
        client.sendall(_hello(b"denied.test"))
        assert read_all(client) == b""
    (record,) = lab.settled(1)
    assert not record.allowed and record.bytes_up == 0
    assert record.reason == "TLS ClientHello names denied.test, not the CONNECT target 127.0.0.1"
    assert lab.echo.connections == [bytearray()]  # connected, and not one byte went through


def test_tls_split_after_its_first_byte_is_still_recognised(lab: Lab) -> None:
    hello = _hello(b"denied.test")
    with _tunnel(lab) as client:
        client.sendall(hello[:1])
        time.sleep(0.2)  # the proxy has read the lone first byte
        client.sendall(hello[1:])
        assert read_all(client) == b""
    (record,) = lab.settled(1)
    assert record.reason == "TLS ClientHello names denied.test, not the CONNECT target 127.0.0.1"


def test_a_lone_first_byte_of_tls_is_not_forwarded_unchecked(tmp_path: Path) -> None:
    made = Lab(tmp_path, wire=WireLimits(head_seconds=2.0, hello_seconds=0.5))
    try:
        with _tunnel(made) as client:
            client.sendall(b"\x16")
            time.sleep(1.0)  # past the ClientHello deadline: the proxy must not give up and relay
            with contextlib.suppress(OSError):
                client.sendall(_hello(b"denied.test")[1:])
            assert read_all(client) == b""
        (record,) = made.settled(1)
        assert record.reason == f"TLS check on port {made.echo.port}: no ClientHello within 0.5 s"
        assert made.echo.connections == [bytearray()]
    finally:
        made.close()


def test_the_record_bound_of_a_hello_is_refused_with_its_reason(tmp_path: Path) -> None:
    made = Lab(tmp_path)
    try:
        records = b"".join(b"\x16\x03\x01\x00\x01" + bytes([b]) for b in (b"\x01\x00\xff\x00" + bytes(11300)))
        with _tunnel(made) as client:
            client.sendall(records)
            assert read_all(client) == b""
        (record,) = made.settled(1)
        port = made.echo.port
        assert record.reason == f"TLS check on port {port}: the ClientHello spans more than {MAX_HELLO_RECORDS} records"
    finally:
        made.close()
