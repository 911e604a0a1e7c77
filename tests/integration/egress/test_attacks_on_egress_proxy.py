"""A hostile session against the proxy's TLS ClientHello check, in the namespace lab
(conftest.py): the check runs only where a real origin serves TLS, on the ports the lab
listens on. The ClientHellos are built byte by byte here (no TLS library would send
most of them); the one that should pass is CPython's own ``ssl``.

The request-level attacks (names, literals, smuggling, address classes, resources and
the ledger) are in ``tests/unit/egress/test_attacks_on_egress_proxy.py``.
"""

from __future__ import annotations

import json
import shutil
import socket
import ssl
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from terminai_apts.egress.policy import parse_network_policy
from terminai_sandbox.launch import audit

from tests.integration.egress.conftest import Lab, _wait_line
from tests.integration.egress.test_attacks import _ask, _last, _settled

ESTABLISHED = b"HTTP/1.1 200 Connection Established\r\n\r\n"


def _vector(width: int, body: bytes) -> bytes:
    return len(body).to_bytes(width, "big") + body


def server_name_extension(*entries: tuple[int, bytes]) -> bytes:
    names = b"".join(bytes([kind]) + _vector(2, name) for kind, name in entries)
    return struct.pack(">H", 0) + _vector(2, _vector(2, names))


def client_hello(*extensions: bytes, record_size: int = 16384) -> bytes:
    """A TLS 1.2 ClientHello carrying ``extensions``, cut into records of ``record_size``."""
    body = b"\x03\x03" + bytes(32) + _vector(1, b"") + _vector(2, b"\x00\x2f\xc0\x2f") + _vector(1, b"\x00")
    body += _vector(2, b"".join(extensions))
    handshake = b"\x01" + _vector(3, body)
    records = b""
    for at in range(0, len(handshake), record_size):
        records += b"\x16\x03\x01" + _vector(2, handshake[at : at + record_size])
    return records


def through_tunnel(lab: Lab, target: str, hello: bytes) -> bytes:
    """CONNECT to ``target``, send ``hello`` in the tunnel, and read what comes back."""
    return _ask(lab, f"CONNECT {target} HTTP/1.1\r\n\r\n".encode() + hello)


def cut_off(lab: Lab, host: str, port: int, hello: bytes, reason: str) -> dict[str, object]:
    """The tunnel is established and then closed without a byte from the origin, and the
    record says exactly why."""
    assert through_tunnel(lab, f"{host}:{port}", hello) == ESTABLISHED
    record = _last(lab, host, port)
    assert (record["verdict"], record["status"], record["reason"]) == ("refused", 200, reason)
    assert record["bytes_up"] == 0 and record["bytes_down"] == 0
    return record


def test_the_hand_made_client_hello_is_read_as_the_proxy_reads_real_ones(lab: Lab) -> None:
    # control: the same bytes naming the CONNECT target pass the check and reach the
    # origin, which answers the (cipher-less) hello with a TLS alert: the bytes went through
    answer = through_tunnel(lab, "allowed.test:443", client_hello(server_name_extension((0, b"allowed.test"))))
    assert answer.startswith(ESTABLISHED) and answer[len(ESTABLISHED) :][:1] in (b"\x15", b"\x16")
    record = _last(lab, "allowed.test", 443)
    assert record["verdict"] == "allowed" and int(record["bytes_up"]) > 0  # type: ignore[call-overload]


def test_a_trailing_dot_in_the_server_name_is_another_name(lab: Lab) -> None:
    cut_off(
        lab, "allowed.test", 443, client_hello(server_name_extension((0, b"allowed.test."))),
        "TLS ClientHello names allowed.test., not the CONNECT target allowed.test",
    )  # fmt: skip


def test_a_second_host_name_in_the_list_is_cut_off(lab: Lab) -> None:
    cut_off(
        lab, "allowed.test", 443, client_hello(server_name_extension((0, b"allowed.test"), (0, b"denied.test"))),
        "TLS ClientHello names allowed.test, denied.test, not the CONNECT target allowed.test",
    )  # fmt: skip


def test_a_second_server_name_extension_is_cut_off(lab: Lab) -> None:
    hello = client_hello(server_name_extension((0, b"allowed.test")), server_name_extension((0, b"denied.test")))
    cut_off(lab, "allowed.test", 443, hello, "TLS check on port 443: extension 0 appears twice")


def test_no_server_name_on_a_tunnel_to_a_name_is_cut_off(lab: Lab) -> None:
    cut_off(
        lab, "allowed.test", 443, client_hello(),
        "TLS ClientHello names no server name, not the CONNECT target allowed.test",
    )  # fmt: skip


def test_a_server_name_of_another_type_does_not_hide_the_target(lab: Lab) -> None:
    # name_type 1 is no defined type: the proxy reads no host_name, the origin might
    cut_off(
        lab, "allowed.test", 443, client_hello(server_name_extension((1, b"denied.test"))),
        "TLS ClientHello names no server name, not the CONNECT target allowed.test",
    )  # fmt: skip


def test_a_client_hello_cut_into_one_byte_records_is_still_read_whole(lab: Lab) -> None:
    hello = client_hello(server_name_extension((0, b"denied.test")), record_size=1)
    cut_off(lab, "allowed.test", 443, hello, "TLS ClientHello names denied.test, not the CONNECT target allowed.test")


def test_a_server_name_that_forges_ledger_lines_lands_as_one_escaped_record(lab: Lab) -> None:
    before = _settled(lab)
    forged = b'allowed.test\n{"verdict":"allowed","host":"denied.test"}\r\n\x1b[2J'
    cut_off(
        lab, "allowed.test", 443, client_hello(server_name_extension((0, forged))),
        f"TLS ClientHello names {forged.decode()}, not the CONNECT target allowed.test",
    )  # fmt: skip
    assert _settled(lab) == before + 1
    data = lab.ledger.read_bytes()
    assert data.isascii() and all(byte >= 0x20 for line in data.split(b"\n") for byte in line)
    assert audit.verify(lab.ledger) == before + 1


def test_a_server_name_that_is_not_ascii_is_cut_off(lab: Lab) -> None:
    cut_off(
        lab, "allowed.test", 443, client_hello(server_name_extension((0, "allowéd.test".encode()))),
        "TLS check on port 443: the server name is not ASCII",
    )  # fmt: skip


# --- the proxy's CPU ------------------------------------------------------------------------------


def test_a_whole_hello_in_one_byte_records_is_read_before_the_deadline(lab: Lab) -> None:
    pad = struct.pack(">H", 21) + _vector(2, bytes(10900))  # the padding extension
    # control: the same hello in ordinary records is read and let through at once
    _ask(
        lab,
        b"CONNECT allowed.test:443 HTTP/1.1\r\n\r\n" + client_hello(server_name_extension((0, b"allowed.test")), pad),
    )
    assert _last(lab, "allowed.test", 443)["verdict"] == "allowed"
    hello = client_hello(server_name_extension((0, b"allowed.test")), pad, record_size=1)
    assert len(hello) < 65536 + 4096  # within what the proxy reads of a hello
    before = _settled(lab)
    _ask(lab, b"CONNECT allowed.test:443 HTTP/1.1\r\n\r\n" + hello)
    assert _settled(lab) == before + 1
    record = _last(lab, "allowed.test", 443)
    assert record["reason"] != "TLS check on port 443: no ClientHello within 10 s"
    assert record["verdict"] == "allowed"  # it names the CONNECT target


# --- a policy that allows TLS on another port ------------------------------------------------


@pytest.fixture(scope="module")
def other_port_proxy(lab: Lab) -> Iterator[Path]:
    """A second proxy in the lab whose policy allows allowed.test on 8443 (a TLS port there)."""
    root = lab.root / "other-port"
    (root / "sock").mkdir(parents=True)
    shutil.chown(root / "sock", "nobody")
    policy = root / "policy.json"
    policy.write_text(json.dumps(parse_network_policy("allow:allowed.test:8443", source="test").to_json()))
    sock = root / "sock" / "proxy.sock"
    argv = [
        "ip", "netns", "exec", lab.netns, sys.executable, "-m", "terminai_apts.egress", "serve",
        "--policy-json", str(policy), "--socket", str(sock), "--ledger", str(root / "ledger.jsonl"),
        "--hosts-file", str(lab.hosts), "--socket-mode", "666",
    ]  # fmt: skip
    process = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        _wait_line(process, "listening ")
        yield sock
    finally:
        process.terminate()
        process.communicate(timeout=15)


def test_a_tls_tunnel_on_another_allowed_port_is_held_to_its_name(lab: Lab, other_port_proxy: Path) -> None:
    context = ssl.create_default_context(cafile=str(lab.ca))
    with socket.socket(socket.AF_UNIX) as raw:
        raw.settimeout(20)
        raw.connect(str(other_port_proxy))
        raw.sendall(b"CONNECT allowed.test:8443 HTTP/1.1\r\n\r\n")
        assert raw.recv(4096) == ESTABLISHED
        # a TLS client that asks the origin behind allowed.test for denied.test instead
        answer = b""
        try:
            with context.wrap_socket(raw, server_hostname="denied.test") as tls:
                tls.sendall(b"GET /fronted HTTP/1.1\r\nHost: denied.test\r\nConnection: close\r\n\r\n")
                while chunk := tls.recv(65536):
                    answer += chunk
        except (ssl.SSLError, OSError):
            pass
    # what should happen: the tunnel is cut before the handshake, and the record says why
    assert answer == b"", answer
    ledger = other_port_proxy.parent.parent / "ledger.jsonl"
    deadline = time.monotonic() + 10  # the record lands when the proxy has closed the tunnel
    while not ledger.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    (record,) = [json.loads(line) for line in ledger.read_text().splitlines()]
    assert record["verdict"] == "refused"
    assert record["reason"] == "TLS ClientHello names denied.test, not the CONNECT target allowed.test"
