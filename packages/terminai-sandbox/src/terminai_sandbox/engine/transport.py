"""The engine API's wire: sockets, one HTTP/1.0 exchange, chunking, stream demultiplexing,
and the answers a session start asked for early.

:func:`api_request` is the one exchange every engine call makes (:mod:`.client` builds on
it). It imports only ``_socket`` and ``time`` (no ``json``, ``pathlib`` or ``socket``), so a
session start can send its first requests (:class:`EarlyAnswers`, filled by
:mod:`terminai_sandbox.launch.early`) before the rest of the kernel loads (~10 ms), and the
engine answers meanwhile.

Part of the launch kernel: standard library only.
"""

from __future__ import annotations

import _socket
import time

TYPE_CHECKING = False  # not `from typing import ...`: a launch never imports typing (~3 ms)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from pathlib import Path

_SAFE_PATH = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~/:@")

# No answer the launcher asks for comes near this (inspect documents are KB, a pull's progress
# stream a few MB); an engine or proxy sending more is broken, and reading on would only grow memory.
MAX_ANSWER = 64 << 20


class NotAnApiAnswer(ValueError):
    """The engine's socket answered, but not with the Docker API's HTTP and JSON."""


def connect_socket(host: str, timeout: float) -> _socket.socket:
    """A connected stream socket to ``host``.

    A unix socket is made with ``_socket``, the C module under :mod:`socket`: importing
    :mod:`socket` itself turns the C constants into enums, ~5 ms of every session start.
    """
    if host.startswith("unix://"):
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(host.removeprefix("unix://"))
        except OSError:
            sock.close()
            raise
        return sock
    if host.startswith(("tcp://", "http://")):
        import socket  # noqa: PLC0415  (name resolution: an engine on the network only)

        address = host.split("://", 1)[1].rstrip("/")
        name, _, port = address.rpartition(":")
        return socket.create_connection((name.strip("[]"), int(port)), timeout=timeout)
    raise ValueError(f"{host}: only unix://, tcp:// and http:// engine addresses are spoken here")


def request_head(method: str, path: str, extra: str = "") -> bytes:
    return f"{method} {path} HTTP/1.0\r\nHost: engine\r\nAccept: application/json\r\n{extra}\r\n".encode()


class EarlyAnswers:
    """Requests sent before they are needed, keyed by (engine address, path); each answer is read once.

    A session start sends ``GET /_ping`` and its image's inspect while the kernel imports
    (:func:`terminai_sandbox.launch.early.ask`); the launch's client, handed this cache,
    reads those answers in place of asking again (:func:`api_request`). Nothing is decided
    when asking: an answer is read, checked and used exactly as if asked at that moment, a
    request that could not be sent is simply asked again then, and only a client given the
    cache ever reads from it (the build, the contract suite and the release never do).
    """

    def __init__(self) -> None:
        self._sent: dict[tuple[str, str], _socket.socket] = {}

    def ask(self, host: str, paths: Sequence[str], *, timeout: float = 5) -> None:
        """Send ``GET`` for each of ``paths`` to the unix socket ``host`` now, and read nothing yet.

        Only unix sockets: an engine on the network is asked when needed. Connecting may
        take ``timeout`` seconds, the launch's bound for reaching the engine
        (:data:`~terminai_sandbox.common.deadlines.ENGINE_PROBE_SECONDS`); the answer is
        read under the request's own deadline. A path already asked is not asked twice.
        """
        if not host.startswith("unix://"):
            return
        for path in paths:
            if (host, path) in self._sent:
                continue
            try:
                sock = connect_socket(host, timeout)
            except OSError:
                return
            try:
                sock.sendall(request_head("GET", path))
            except OSError:
                sock.close()
                return
            self._sent[(host, path)] = sock

    def take(self, host: str, path: str) -> _socket.socket | None:
        """The socket of the request sent for ``host`` and ``path``, once; else None."""
        return self._sent.pop((host, path), None)

    def pending(self) -> tuple[tuple[str, str], ...]:
        """The (host, path) of each request sent and not yet read."""
        return tuple(self._sent)

    def forget(self) -> None:
        """Close the requests nobody read: an answer is never read by a later, different launch."""
        while self._sent:
            self._sent.popitem()[1].close()


#: The session start's cache: filled by :mod:`terminai_sandbox.launch.early`, read by the
#: launch's engine client (:meth:`terminai_sandbox.engine.docker.DockerEngine.connect`).
LAUNCH_ANSWERS = EarlyAnswers()


def quote_path(text: str) -> str:
    """Percent-encode ``text`` for a URL path (image references rarely need it; urllib.parse is not loaded)."""
    return "".join(c if c in _SAFE_PATH else "".join(f"%{b:02X}" for b in c.encode()) for c in text)


def image_path(reference: str) -> str:
    """The API path (without version) of the local image ``reference``'s inspect document."""
    return f"/images/{quote_path(reference)}/json"


def distribution_path(reference: str) -> str:
    """The API path (without version) of the digest the registry serves for ``reference`` now."""
    return f"/distribution/{quote_path(reference)}/json"


def _dechunk(body: bytes) -> bytes:
    out, rest = bytearray(), body
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out += rest[:size]
        rest = rest[size + 2 :]
    return bytes(out)


def api_request(
    host: str,
    path: str,
    *,
    method: str = "GET",
    body: bytes | Path | None = None,
    content_type: str = "application/json",
    timeout: float = 30,
    headers: Mapping[str, str] | None = None,
    on_line: Callable[[bytes], None] | None = None,
    deadline: float | None = None,
    answers: EarlyAnswers | None = None,
    early: str | None = None,
) -> tuple[int, dict[str, str], bytes]:
    """``METHOD path`` on a Docker API host, with an optional body: (status, headers, body).

    ``body`` is bytes, or a file streamed from disk (an image archive to load, a build
    context). Raises OSError when the socket cannot be reached or stops answering (a
    ``TimeoutError`` after ``timeout`` seconds without a byte, or past the deadline) and
    :class:`NotAnApiAnswer` (a ValueError) when the answer is not HTTP. HTTP/1.0 makes the
    server close the connection after one response, so the body is everything up to EOF.
    ``on_line`` hears each line of the body as it arrives (a progress stream); the whole
    body is still returned. ``deadline`` bounds the whole exchange in seconds, connecting
    and sending included (an answer trickling in a byte at a time never idles for
    ``timeout``); without one it is ``timeout``: no exchange is unbounded. An answer over
    :data:`MAX_ANSWER` bytes is :class:`NotAnApiAnswer` too. A plain ``GET`` that
    ``answers`` holds (sent early as ``early``, else as ``path``) is not sent again: its
    answer is read. Without ``answers`` every request is sent now.
    """
    if deadline is None:
        deadline = timeout
    give_up = time.monotonic() + deadline
    extra = "".join(f"{name}: {value}\r\n" for name, value in (headers or {}).items())
    if body is not None:
        size = body.stat().st_size if not isinstance(body, bytes) else len(body)
        extra += f"Content-Type: {content_type}\r\nContent-Length: {size}\r\n"
    plain_get = method == "GET" and body is None and not extra
    sock = answers.take(host, early or path) if answers is not None and plain_get else None
    if sock is None:
        sock = connect_socket(host, min(timeout, deadline))
        sent = False
    else:
        sent = True  # sent early: its answer is read below, as if asked now
    sock.settimeout(max(0.001, min(timeout, give_up - time.monotonic())))
    try:
        if not sent:
            sock.sendall(request_head(method, path, extra))
        if body is not None and not isinstance(body, bytes):  # a file, streamed
            with body.open("rb") as handle:
                while block := handle.read(1 << 20):
                    if time.monotonic() > give_up:  # an engine reading slowly holds no one past it
                        raise TimeoutError(f"{host} did not take the whole request within {deadline:g} s")
                    sock.sendall(block)
        elif body:
            sock.sendall(body)
        chunks, received = [], 0
        lines = _LineFeed(on_line) if on_line is not None else None
        while True:
            left = give_up - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no whole answer from {host} within {deadline:g} s")
            sock.settimeout(min(timeout, left))  # no read may outlast the deadline either
            try:
                data = sock.recv(65536)
            except TimeoutError:
                if left > timeout:  # idle for the request's timeout, well before its deadline
                    raise TimeoutError(f"no answer from {host} for {timeout:g} s") from None
                raise TimeoutError(f"no whole answer from {host} within {deadline:g} s") from None
            if not data:
                break
            chunks.append(data)
            received += len(data)
            if received > MAX_ANSWER:
                raise NotAnApiAnswer(f"the answer is larger than {MAX_ANSWER >> 20} MiB")
            if lines is not None:
                lines.feed(data)
    finally:
        sock.close()
    head, sep, answer = b"".join(chunks).partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parts = status_line.split()
    if not sep or len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise NotAnApiAnswer(f"not an HTTP answer to {method} {path}: {status_line[:80]!r}")
    answered = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in header_lines)}
    if answered.get("transfer-encoding", "").lower() == "chunked":
        try:
            answer = _dechunk(answer)
        except ValueError:
            raise NotAnApiAnswer(f"{method} {path}: the chunked answer is malformed") from None
        if on_line is not None:  # an HTTP/1.1 proxy re-chunked it: heard at the end, not live
            for line in answer.splitlines():
                on_line(line)
    elif lines is not None:
        lines.end()
    return int(parts[1]), answered, answer


class _LineFeed:
    """Splits an HTTP/1.0 answer's body into lines while it arrives (the head is skipped)."""

    def __init__(self, on_line: Callable[[bytes], None]) -> None:
        self.on_line, self.head, self.pending = on_line, b"", b""
        self.in_body = self.chunked = False

    def feed(self, data: bytes) -> None:
        if not self.in_body:
            self.head += data
            end = self.head.find(b"\r\n\r\n")
            if end < 0:
                return
            self.in_body = True
            fields = (line.partition(b":") for line in self.head[:end].split(b"\r\n")[1:])
            self.chunked = any(
                k.strip().lower() == b"transfer-encoding" and v.strip().lower() == b"chunked" for k, _, v in fields
            )
            data = self.head[end + 4 :]
        if self.chunked:
            return  # framed: api_request hears it whole once it is decoded
        *whole, self.pending = (self.pending + data).split(b"\n")
        for line in whole:
            self.on_line(line)

    def end(self) -> None:
        if self.pending and not self.chunked:
            self.on_line(self.pending)


def demultiplex(body: bytes) -> tuple[bytes, bytes]:
    """Split a container's log stream (8-byte frame headers: stream, 0, 0, 0, size) into stdout, stderr."""
    out, err, at = bytearray(), bytearray(), 0
    while at + 8 <= len(body):
        kind, size = body[at], int.from_bytes(body[at + 4 : at + 8], "big")
        payload = body[at + 8 : at + 8 + size]
        (err if kind == 2 else out).extend(payload)
        at += 8 + size
    return bytes(out), bytes(err)
