"""The server name a TLS ClientHello asks for, read without terminating TLS.

The proxy never decrypts: on ``CONNECT`` to port 443 it reads the client's first TLS
handshake message (reassembled from up to :data:`MAX_HELLO` bytes of handshake records),
takes the ``server_name`` extension's ``host_name`` (RFC 6066 §3), and forwards those
bytes unchanged once the name agrees with the ``CONNECT`` target. With Encrypted Client
Hello the name read is the outer (public) one; that is what a TLS terminator sees too.
"""

from __future__ import annotations

MAX_HELLO = 65536  # a ClientHello with post-quantum key shares is ~2 KiB; this bounds a hostile one
_HANDSHAKE, _CLIENT_HELLO, _SERVER_NAME, _HOST_NAME = 22, 1, 0, 0


class HelloError(ValueError):
    """The bytes are not a well-formed TLS ClientHello."""


class _Reader:
    __slots__ = ("at", "data")

    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def take(self, count: int) -> bytes:
        if self.at + count > len(self.data):
            raise HelloError("the ClientHello is truncated")
        piece = self.data[self.at : self.at + count]
        self.at += count
        return piece

    def number(self, width: int) -> int:
        return int.from_bytes(self.take(width), "big")

    def vector(self, width: int) -> _Reader:
        return _Reader(self.take(self.number(width)))

    def done(self) -> bool:
        return self.at == len(self.data)


def _handshake(records: bytes) -> tuple[bytes, int | None]:
    """The handshake bytes the records carry, and how many more record bytes a whole
    ClientHello needs (None: it is whole)."""
    handshake, at = b"", 0
    while True:
        if len(records) - at < 5:
            return handshake, 5 - (len(records) - at)
        if records[at] != _HANDSHAKE or records[at + 1] != 3:
            raise HelloError("the first bytes are not a TLS handshake record")
        length = int.from_bytes(records[at + 3 : at + 5], "big")
        if length == 0 or length > 16384:
            raise HelloError("a TLS record has an impossible length")
        if at + 5 + length > len(records):
            return handshake, at + 5 + length - len(records)
        handshake += records[at + 5 : at + 5 + length]
        at += 5 + length
        if len(handshake) >= 4:
            if handshake[0] != _CLIENT_HELLO:
                raise HelloError("the first handshake message is not a ClientHello")
            total = 4 + int.from_bytes(handshake[1:4], "big")
            if total > MAX_HELLO:
                raise HelloError("the ClientHello is larger than the proxy reads")
            if len(handshake) >= total:
                return handshake[:total], None


def handshake_needed(records: bytes) -> int | None:
    """How many more bytes to read before the ClientHello in ``records`` is whole; None when it is.

    Raises :class:`HelloError` when the bytes so far cannot begin a ClientHello.
    """
    return _handshake(records)[1]


def client_hello_names(records: bytes) -> tuple[str, ...]:
    """The ``host_name`` entries of the ClientHello that ``records`` begin with."""
    handshake, missing = _handshake(records)
    if missing is not None:
        raise HelloError("the ClientHello is truncated")
    message = _Reader(bytes(handshake))
    if message.number(1) != _CLIENT_HELLO:
        raise HelloError("not a ClientHello")
    hello = message.vector(3)
    hello.take(2 + 32)  # legacy_version, random
    hello.vector(1)  # legacy_session_id
    hello.vector(2)  # cipher_suites
    hello.vector(1)  # legacy_compression_methods
    if hello.done():
        return ()  # no extensions at all: no SNI
    extensions = hello.vector(2)
    if not hello.done():
        raise HelloError("bytes after the ClientHello's extensions")
    names: list[str] = []
    seen: set[int] = set()
    while not extensions.done():
        kind = extensions.number(2)
        body = extensions.vector(2)
        if kind in seen:
            raise HelloError(f"extension {kind} appears twice")
        seen.add(kind)
        if kind != _SERVER_NAME:
            continue
        entries = body.vector(2)
        if not body.done():
            raise HelloError("bytes after the server_name list")
        while not entries.done():
            name_type = entries.number(1)
            name = entries.vector(2).data
            if name_type == _HOST_NAME:
                try:
                    names.append(name.decode("ascii"))
                except UnicodeDecodeError:
                    raise HelloError("the server name is not ASCII") from None
    return tuple(names)
