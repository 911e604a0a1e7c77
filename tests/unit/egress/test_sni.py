"""The ClientHello reader against ClientHellos that CPython's OpenSSL writes."""

from __future__ import annotations

import ssl

import pytest
from terminai_apts.egress.sni import (
    MAX_HELLO_BYTES,
    HelloAssembler,
    HelloError,
    client_hello_names,
    handshake_needed,
)


def _hello(server_hostname: str | None) -> bytes:
    """The first flight of a real TLS client (OpenSSL through the ssl module), never sent anywhere."""
    context = ssl.create_default_context()
    if server_hostname is None:
        context.check_hostname = False
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    client = context.wrap_bio(incoming, outgoing, server_hostname=server_hostname)
    with pytest.raises(ssl.SSLWantReadError):
        client.do_handshake()
    return outgoing.read()


@pytest.mark.parametrize("name", ["allowed.test", "a.b.example.org", "xn--bcher-kva.example"])
def test_the_name_openssl_sends_is_the_name_read(name: str) -> None:
    hello = _hello(name)
    assert handshake_needed(hello) is None
    assert client_hello_names(hello) == (name,)


def test_no_server_name_for_an_address() -> None:
    assert client_hello_names(_hello(None)) == ()
    assert client_hello_names(_hello("10.0.0.1")) == ()  # OpenSSL sends no SNI for an IP (RFC 6066)


def test_a_hello_split_byte_by_byte_asks_for_the_rest() -> None:
    hello = _hello("allowed.test")
    for cut in range(len(hello)):
        needed = handshake_needed(hello[:cut])
        assert needed is not None and 0 < needed <= len(hello) - cut
    assert handshake_needed(hello) is None


def test_a_hello_across_two_records_is_reassembled() -> None:
    hello = _hello("allowed.test")
    body = hello[5:]
    half = len(body) // 2
    split = (
        hello[:3]
        + half.to_bytes(2, "big")
        + body[:half]
        + hello[:3]
        + (len(body) - half).to_bytes(2, "big")
        + body[half:]
    )
    assert handshake_needed(split[: 5 + half]) is not None
    assert client_hello_names(split) == ("allowed.test",)


@pytest.mark.parametrize(
    "data",
    [
        b"GET / HTTP/1.1\r\n\r\n",
        b"\x17\x03\x03\x00\x10" + b"\x00" * 16,  # application data first
        b"\x16\x02\x00\x00\x10" + b"\x00" * 16,  # SSL 2 style version byte
        b"\x16\x03\x01\x00\x00",  # an empty record
        b"\x16\x03\x01\x00\x05\x02\x00\x00\x01\x00",  # a ServerHello
        b"\x16\x03\x01\x00\x05\x01\xff\xff\xff\x00",  # a ClientHello claiming 16 MiB
    ],
)
def test_what_is_not_a_client_hello_is_refused(data: bytes) -> None:
    with pytest.raises(HelloError):
        handshake_needed(data)


def test_a_truncated_or_doubled_extension_is_refused() -> None:
    hello = bytearray(_hello("allowed.test"))
    with pytest.raises(HelloError):
        client_hello_names(bytes(hello[:-3]))
    # claim the extension block is longer than the message: truncated inside
    record_len = int.from_bytes(hello[3:5], "big")
    assert record_len == len(hello) - 5
    with pytest.raises(HelloError):
        client_hello_names(bytes(hello[:5] + b"\x01" + (len(hello) - 9 + 50).to_bytes(3, "big") + hello[9:]))


def test_the_assembler_fed_a_byte_at_a_time_reads_the_name_openssl_sent() -> None:
    hello = _hello("allowed.test")
    assembler = HelloAssembler()
    results = [assembler.feed(hello[at : at + 1]) for at in range(len(hello))]
    assert results[-1] is None and all(needed is not None for needed in results[:-1])
    assert assembler.names() == ("allowed.test",)


def test_records_beyond_the_byte_bound_are_refused() -> None:
    assembler = HelloAssembler()
    with pytest.raises(HelloError, match=f"more than {MAX_HELLO_BYTES} bytes"):
        assembler.feed(b"\x16\x03\x01\x40\x00" + bytes(MAX_HELLO_BYTES))
