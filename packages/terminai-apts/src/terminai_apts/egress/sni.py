"""The server name a TLS ClientHello asks for, read without terminating TLS.

The proxy never decrypts: on a ``CONNECT`` tunnel that starts with TLS it reads the client's first TLS
handshake message (reassembled from up to :data:`MAX_HELLO` bytes of handshake records),
takes the ``server_name`` extension's ``host_name`` (RFC 6066 §3), and forwards those
bytes unchanged once the name agrees with the ``CONNECT`` target. With Encrypted Client
Hello the name read is the outer (public) one; that is what a TLS terminator sees too.
"""

from __future__ import annotations

MAX_HELLO = 65536  # a ClientHello with post-quantum key shares is ~2 KiB; this bounds a hostile one
MAX_HELLO_BYTES = MAX_HELLO + 4096  # the records carrying it, headers included
# A real client sends one to four records. This admits a 10 KiB hello (a padded one) cut
# into one-byte records, each read once, and refuses the finest cuts MAX_HELLO_BYTES allows.
MAX_HELLO_RECORDS = 11264
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


class HelloAssembler:
    """A ClientHello reassembled from handshake records as they arrive, each byte parsed once.

    :meth:`feed` takes the next bytes and answers how many more a whole ClientHello needs
    (None: it is whole). Re-parsing everything received after each read would cost time
    quadratic in the record count (a hello cut into one-byte records); here a record is
    looked at once, and both the bytes and the records a hello may span are bounded.
    """

    __slots__ = ("_at", "_buffer", "handshake", "records", "total")

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._at = 0  # the start of the first record not yet taken from _buffer
        self.handshake = bytearray()
        self.records = 0
        self.total: int | None = None  # the ClientHello's length once its header is in

    def feed(self, data: bytes) -> int | None:
        if self.total is not None and len(self.handshake) >= self.total:
            return None
        if len(self._buffer) + len(data) > MAX_HELLO_BYTES:
            raise HelloError(f"the ClientHello spans more than {MAX_HELLO_BYTES} bytes")
        self._buffer += data
        while True:
            header = self._buffer[self._at : self._at + 5]
            if len(header) < 5:
                return 5 - len(header)
            if header[0] != _HANDSHAKE or header[1] != 3:
                raise HelloError("the first bytes are not a TLS handshake record")
            length = int.from_bytes(header[3:5], "big")
            if length == 0 or length > 16384:
                raise HelloError("a TLS record has an impossible length")
            end = self._at + 5 + length
            if end > len(self._buffer):
                return end - len(self._buffer)
            self.records += 1
            if self.records > MAX_HELLO_RECORDS:
                raise HelloError(f"the ClientHello spans more than {MAX_HELLO_RECORDS} records")
            self.handshake += self._buffer[self._at + 5 : end]
            self._at = end
            if self.total is None and len(self.handshake) >= 4:
                if self.handshake[0] != _CLIENT_HELLO:
                    raise HelloError("the first handshake message is not a ClientHello")
                self.total = 4 + int.from_bytes(self.handshake[1:4], "big")
                if self.total > MAX_HELLO:
                    raise HelloError("the ClientHello is larger than the proxy reads")
            if self.total is not None and len(self.handshake) >= self.total:
                return None

    def hello(self) -> bytes:
        """The whole ClientHello message; :class:`HelloError` if it is not whole yet."""
        if self.total is None or len(self.handshake) < self.total:
            raise HelloError("the ClientHello is truncated")
        return bytes(self.handshake[: self.total])

    def names(self) -> tuple[str, ...]:
        return _names(self.hello())


def handshake_needed(records: bytes) -> int | None:
    """How many more bytes to read before the ClientHello in ``records`` is whole; None when it is.

    Raises :class:`HelloError` when the bytes so far cannot begin a ClientHello.
    """
    return HelloAssembler().feed(records)


def client_hello_names(records: bytes) -> tuple[str, ...]:
    """The ``host_name`` entries of the ClientHello that ``records`` begin with."""
    assembler = HelloAssembler()
    assembler.feed(records)
    return assembler.names()


def _names(handshake: bytes) -> tuple[str, ...]:
    message = _Reader(handshake)
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
