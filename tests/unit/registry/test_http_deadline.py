"""The deadline watchdog under TLS, the transport every non-loopback registry uses.

The console script speaks plain HTTP to a loopback registry (``tests/integration/cli/
test_deadlines.py`` drives it there), so the TLS path is proven here, on the transport
itself: a server on 127.0.0.1 with a certificate made for the test completes the handshake
and then trickles its answer, or says nothing at all.
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from terminai_sandbox.http_deadline import DeadlineExceeded, deadline_session, fetch


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("tls")
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    (root / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (root / "key.pem").write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return root / "cert.pem", root / "key.pem"


@contextlib.contextmanager
def tls_server(certificate: tuple[Path, Path], answer: bytes | None, pace: float = 0.2) -> Iterator[int]:
    """A TLS server answering a request with ``answer``, one byte every ``pace`` s (None: silence)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    stop = threading.Event()

    def serve() -> None:
        with contextlib.suppress(OSError):
            raw, _ = listener.accept()
            with context.wrap_socket(raw, server_side=True) as conn:
                conn.recv(65536)  # the request
                if not pace:
                    conn.sendall(answer or b"")
                for byte in (answer or b"") if pace else b"":
                    if stop.wait(pace):
                        return
                    conn.sendall(bytes([byte]))
                stop.wait()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        stop.set()
        listener.close()
        thread.join(timeout=5)


ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\n" + b"{" + b" " * 18 + b"}"


@pytest.mark.parametrize("answer", [ANSWER, None], ids=["trickled", "silent"])
def test_a_tls_answer_is_cut_at_the_deadline(certificate: tuple[Path, Path], answer: bytes | None) -> None:
    with tls_server(certificate, answer) as port:
        started = time.monotonic()
        with pytest.raises(DeadlineExceeded, match=r"within 1\.5 s"):
            fetch(
                deadline_session(),
                "GET",
                f"https://127.0.0.1:{port}/v2/",
                seconds=1.5,
                connect_seconds=10,
                max_body=1 << 20,
                verify=str(certificate[0]),
            )
        assert 1.4 <= time.monotonic() - started < 3  # the trickle alone would take 12 s


def test_a_tls_answer_within_the_deadline_is_read_whole(certificate: tuple[Path, Path]) -> None:
    quick = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"
    with tls_server(certificate, quick, pace=0) as port:
        response = fetch(
            deadline_session(),
            "GET",
            f"https://127.0.0.1:{port}/v2/",
            seconds=30,
            connect_seconds=10,
            max_body=1 << 20,
            verify=str(certificate[0]),
        )
    assert response.status_code == 200 and response.content == b"{}"
