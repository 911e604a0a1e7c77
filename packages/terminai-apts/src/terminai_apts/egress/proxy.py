"""The allowlisting egress proxy: HTTP CONNECT tunnels and plain HTTP, to allowed names only.

Why our own, and not tinyproxy, proxy.py or pproxy: what makes an allowlist hold is that
the proxy judges the address it connects to, after resolving the name itself, and then
connects to exactly that address. tinyproxy filters names by regular expression and
resolves and connects on its own (it has no check of the resolved address, so an allowed
name pointing at 127.0.0.1 or 169.254.169.254 goes through); pproxy has no allowlist of
destinations at all; proxy.py can be taught the address check through a plugin, but it is
a large third-party dependency (TLS interception, a plugin framework, a dashboard) for a
launcher that is standard-library only, and it keeps no per-session budget of connections
and bytes and writes no records to our ledger. What we need is a few hundred lines of
asyncio over a strict parser (:mod:`.wire`), so we keep it small and read every line.

Per connection: read one request head within a deadline (:class:`WireLimits`); judge the
name and port with :meth:`NetworkPolicy.decide` (403); resolve once (:mod:`.resolve`);
drop every address :func:`.addresses.refusal` names unless the allow pattern is that very
IP literal (403 when none is left); connect to a checked address (502, 504); then either
answer ``200`` to CONNECT, check the TLS ClientHello's server name (:mod:`.sni`: always
on port 443, and on any port when the client's first bytes are a TLS handshake record)
and relay bytes both ways, or forward the one plain-HTTP request
(hop-by-hop headers dropped, ``Connection: close``, exactly Content-Length body bytes) and
relay the response. The session's limits (:class:`EgressLimits`) bound connections at
once (429), bytes in all (503 once spent; a relay stops at the budget), a connection's
lifetime and its idle time. Every attempt ends as one :class:`EgressRecord`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from pathlib import Path

from terminai_apts.egress.addresses import refusal
from terminai_apts.egress.policy import NetworkPolicy, Verdict, parse_ip
from terminai_apts.egress.resolve import ResolveError, SystemResolver
from terminai_apts.egress.sni import HelloAssembler, HelloError
from terminai_apts.egress.wire import Request, WireError, WireLimits, parse_head
from terminai_apts.records import frozen_record

TYPE_CHECKING = False
if TYPE_CHECKING:
    import ipaddress
    from collections.abc import Callable

    from terminai_apts.egress.resolve import HostsFileResolver

    _IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_REASONS = {
    200: "Connection Established",
    400: "Bad Request",
    403: "Forbidden",
    408: "Request Timeout",
    411: "Length Required",
    414: "URI Too Long",
    429: "Too Many Requests",
    500: "Internal Server Error",
    431: "Request Header Fields Too Large",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
    505: "HTTP Version Not Supported",
}
_CHUNK = 262144
_LINGER_SECONDS = 0.5
_TLS_RECORD = b"\x16\x03"  # a handshake record, any TLS version


@frozen_record
class EgressRecord:
    """One connection attempt, as the ledger keeps it. The path and headers are never kept."""

    method: str  # CONNECT, GET, ...; "" when no request head was read
    host: str  # canonical; "" when no request head was read
    port: int  # 0 when no request head was read
    addresses: tuple[str, ...]  # what the name resolved to
    address: str  # what the proxy connected to; "" when it did not
    allowed: bool
    status: int  # the HTTP status the proxy answered with (0: none, the client left first)
    reason: str
    bytes_up: int
    bytes_down: int
    seconds: float
    count: int = 1  # attempts this record stands for: more than 1 in a summary of refusals

    def to_json(self) -> dict[str, object]:
        extra: dict[str, object] = {"count": self.count} if self.count != 1 else {}
        return {
            "method": self.method,
            "host": self.host,
            "port": self.port,
            "addresses": list(self.addresses),
            "address": self.address,
            "verdict": "allowed" if self.allowed else "refused",
            "status": self.status,
            "reason": self.reason,
            "bytes_up": self.bytes_up,
            "bytes_down": self.bytes_down,
            "seconds": round(self.seconds, 3),
            **extra,
        }


class _Attempt:
    """The record being filled in while a connection is served."""

    __slots__ = (
        "address",
        "addresses",
        "allowed",
        "bytes_down",
        "bytes_up",
        "host",
        "last",
        "method",
        "port",
        "reason",
        "start",
        "status",
    )

    def __init__(self) -> None:
        self.method, self.host, self.port = "", "", 0
        self.addresses: tuple[str, ...] = ()
        self.address = ""
        self.allowed = False
        self.status = 0
        self.reason = "the client closed the connection before a request"
        self.bytes_up = self.bytes_down = 0
        self.start = self.last = time.monotonic()

    def refuse(self, status: int, reason: str) -> None:
        self.allowed, self.status, self.reason = False, status, reason

    def sealed(self) -> EgressRecord:
        return EgressRecord(
            method=self.method,
            host=self.host,
            port=self.port,
            addresses=self.addresses,
            address=self.address,
            allowed=self.allowed,
            status=self.status,
            reason=self.reason,
            bytes_up=self.bytes_up,
            bytes_down=self.bytes_down,
            seconds=time.monotonic() - self.start,
        )


class _Stop(Exception):
    """End the connection now, without a response (the attempt already says why)."""


class _Refused(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


def _response(status: int, reason: str) -> bytes:
    body = (reason + "\n").encode("ascii", "backslashreplace")
    return (
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode("ascii") + body


class EgressProxy:
    """The proxy for one session's policy. ``record`` gets every attempt, in the event loop."""

    def __init__(
        self,
        policy: NetworkPolicy,
        *,
        record: Callable[[EgressRecord], None] | None = None,
        resolver: SystemResolver | HostsFileResolver | None = None,
        wire: WireLimits | None = None,
        sni_check: bool = True,
    ) -> None:
        self.policy = policy
        self.record = record or (lambda _record: None)
        self.resolver = resolver or SystemResolver()
        self.wire = wire or WireLimits()
        self.sni_check = sni_check
        self.active = 0
        self.bytes_used = 0
        self.spent = False  # a relay hit the byte budget: nothing more goes out this session
        self._servers: list[asyncio.AbstractServer] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self.refusals = 0  # refused attempts this session, recorded or counted
        self._held: dict[int, int] = {}  # refusals counted since the last summary, by status
        self._held_since = 0.0

    # -- serving ----------------------------------------------------------------------------

    async def listen_unix(self, path: Path, *, mode: int = 0o600) -> None:
        """Listen on a Unix socket at ``path`` (which must not exist), readable by ``mode``."""
        server = await asyncio.start_unix_server(self._accept, path=os.fspath(path), limit=self.wire.max_head_bytes)
        os.chmod(path, mode)
        self._servers.append(server)

    async def listen_tcp(self, port: int = 0, *, host: str = "127.0.0.1") -> int:
        """Listen on a loopback TCP port (for tests and benchmarks); returns the port."""
        address = parse_ip(host)
        if address is None or not address.is_loopback:
            raise ValueError("the TCP listener is for loopback only")
        server = await asyncio.start_server(self._accept, host=host, port=port, limit=self.wire.max_head_bytes)
        self._servers.append(server)
        return int(server.sockets[0].getsockname()[1])

    async def listen_pod(self, port: int) -> int:
        """Listen on every address of this network namespace, for the cluster's proxy pod.

        Only where the namespace is the proxy's own pod, whose ingress NetworkPolicy admits
        the template's session pods and nothing else (``terminai-sandbox kube``); a host
        process listens on its Unix socket instead, never on a network address.
        """
        server = await asyncio.start_server(
            self._accept,
            host="0.0.0.0",  # noqa: S104  (the pod's own namespace, fenced by its NetworkPolicy: see above)
            port=port,
            limit=self.wire.max_head_bytes,
        )
        self._servers.append(server)
        return int(server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        """Stop accepting, end the open connections, and wait until each one is recorded."""
        for server in self._servers:
            server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        for server in self._servers:
            await server.wait_closed()
        self._servers.clear()
        self._summarise()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # asyncio runs a coroutine callback as a task of its own; keep it, so close() can end it
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        await self._serve(reader, writer)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        attempt = _Attempt()
        over = self.active >= self.policy.limits.max_connections
        self.active += 1
        try:
            if over:
                raise _Refused(429, f"more than {self.policy.limits.max_connections} connections at once")
            await self._handle(reader, writer, attempt)
        except _Refused as refused:
            attempt.refuse(refused.status, refused.reason)
            with contextlib.suppress(OSError, TimeoutError):
                writer.write(_response(refused.status, refused.reason))
                await asyncio.wait_for(writer.drain(), 5)
                await self._linger(reader, writer)
        except asyncio.CancelledError:
            attempt.reason = attempt.reason if attempt.status else "the proxy stopped"
        except _Stop:
            pass
        except (OSError, TimeoutError, asyncio.IncompleteReadError) as exc:
            if attempt.allowed:
                attempt.reason = f"{attempt.reason}; ended: {type(exc).__name__}"
        except Exception as exc:  # one connection's bug must not end the proxy; it is recorded
            attempt.allowed, attempt.reason = False, f"internal error: {type(exc).__name__}: {exc}"
            if attempt.status == 0:
                attempt.status = 500
                with contextlib.suppress(OSError):
                    writer.write(_response(500, "internal error"))
        finally:
            self.active -= 1
            writer.close()
            self._note(attempt.sealed())

    def _note(self, record: EgressRecord) -> None:
        """Record ``record``, or, past the session's ``max_refusals``, count it for a summary."""
        bound = self.policy.limits.max_refusals
        if record.allowed:
            self.record(record)
            return
        self.refusals += 1
        if self.refusals <= bound:
            self.record(record)
            return
        if not self._held:
            self._held_since = time.monotonic()
        self._held[record.status] = self._held.get(record.status, 0) + 1
        if sum(self._held.values()) >= bound:
            self._summarise()

    def _summarise(self) -> None:
        """One record for the refusals counted since the last one, if any."""
        count = sum(self._held.values())
        if not count:
            return
        statuses = ", ".join(f"{status}: {n}" for status, n in sorted(self._held.items()))
        self._held = {}
        self.record(
            EgressRecord(
                method="",
                host="",
                port=0,
                addresses=(),
                address="",
                allowed=False,
                status=0,
                reason=(
                    f"{count} more refused attempts, counted, not recorded one by one "
                    f"(beyond {self.policy.limits.max_refusals} this session; by status {statuses})"
                ),
                bytes_up=0,
                bytes_down=0,
                seconds=time.monotonic() - self._held_since,
                count=count,
            )
        )

    async def _linger(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Half-close, then read what the client still sends, briefly and boundedly.

        Closing a TCP socket with unread bytes sends a reset, and a reset can make the
        client drop the answer it already received (a 429 sent before reading the request).
        """
        if writer.can_write_eof():
            writer.write_eof()
        deadline = time.monotonic() + _LINGER_SECONDS
        budget = 2 * self.wire.max_head_bytes
        while budget > 0 and (left := deadline - time.monotonic()) > 0:
            try:
                data = await asyncio.wait_for(reader.read(budget), left)
            except (TimeoutError, asyncio.LimitOverrunError):
                return
            if not data:
                return
            budget -= len(data)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, attempt: _Attempt) -> None:
        request = await self._read_request(reader, attempt)
        attempt.method, attempt.host, attempt.port = request.method, request.host, request.port
        verdict = self.policy.decide(request.host, request.port)
        if not verdict.allowed:
            raise _Refused(403, verdict.reason)
        if self.spent or self.bytes_used >= self.policy.limits.max_bytes:
            raise _Refused(503, f"the session's {self.policy.limits.max_bytes} bytes of egress are spent")
        addresses = await self._addresses(request, verdict, attempt)
        upstream_reader, upstream = await self._connect(addresses, request.port, attempt)
        try:
            attempt.allowed, attempt.reason = True, verdict.reason
            await self._exchange(request, reader, writer, upstream_reader, upstream, attempt)
        finally:
            upstream.close()  # on every path: a refused ClientHello or a spent budget included

    async def _exchange(
        self,
        request: Request,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        upstream_reader: asyncio.StreamReader,
        upstream: asyncio.StreamWriter,
        attempt: _Attempt,
    ) -> None:
        if request.is_connect:
            writer.write(_response_established())
            await writer.drain()
            attempt.status = 200
            if self.sni_check and request.port == 443:
                # on 443 a tunnel must be TLS: nothing is relayed before the ClientHello passes
                await self._send(upstream, await self._client_hello(reader, request, attempt), attempt, up=True)
            sniff = self.sni_check and request.port != 443
            await self._relay(
                reader, writer, upstream_reader, upstream, attempt, body=None, sniff=request if sniff else None
            )
        else:
            await self._send(upstream, request.forward_head(), attempt, up=True)
            await self._relay(reader, writer, upstream_reader, upstream, attempt, body=request.content_length)

    async def _read_request(self, reader: asyncio.StreamReader, attempt: _Attempt) -> Request:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self.wire.head_seconds)
        except TimeoutError:
            raise _Refused(408, f"no complete request head within {self.wire.head_seconds:g} s") from None
        except asyncio.LimitOverrunError:
            raise _Refused(431, "the request head is too large") from None
        except asyncio.IncompleteReadError as exc:
            if exc.partial:
                raise _Refused(400, "the connection ended inside the request head") from None
            raise
        try:
            return parse_head(head, self.wire)
        except WireError as exc:
            raise _Refused(exc.status, exc.reason) from None

    async def _addresses(self, request: Request, verdict: Verdict, attempt: _Attempt) -> tuple[_IPAddress, ...]:
        literal = parse_ip(request.host)
        if literal is not None:
            found: tuple[_IPAddress, ...] = (literal,)
        else:
            try:
                found = await asyncio.wait_for(self.resolver.resolve(request.host), self.wire.resolve_seconds)
            except TimeoutError:
                raise _Refused(504, f"{request.host} did not resolve within {self.wire.resolve_seconds:g} s") from None
            except ResolveError as exc:
                raise _Refused(502, str(exc)) from None
        attempt.addresses = tuple(str(a) for a in found)
        named = verdict.pattern.ip if verdict.pattern is not None else None
        usable = tuple(a for a in found if a == named or refusal(a) is None)
        if not usable:
            why = "; ".join(f"{a} is {refusal(a)}" for a in found)
            raise _Refused(403, f"{request.host} resolves only to refused addresses: {why}")
        return usable

    async def _connect(
        self, addresses: tuple[_IPAddress, ...], port: int, attempt: _Attempt
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        timed_out = False
        failures: list[str] = []
        for address in addresses:
            try:
                # the address as a numeric string: asyncio passes it to getaddrinfo with no lookup
                connected = await asyncio.wait_for(
                    asyncio.open_connection(str(address), port, limit=_CHUNK), self.wire.connect_seconds
                )
            except TimeoutError:
                timed_out = True
                failures.append(f"{address}: timed out")
                continue
            except OSError as exc:
                failures.append(f"{address}: {exc.strerror or type(exc).__name__}")
                continue
            attempt.address = str(address)
            return connected
        status = 504 if timed_out and len(failures) == 1 else 502
        raise _Refused(status, "cannot connect: " + "; ".join(failures))

    async def _client_hello(
        self, reader: asyncio.StreamReader, request: Request, attempt: _Attempt, *, first: bytes = b""
    ) -> bytes:
        """The client's first TLS bytes, once their server name agrees with the CONNECT target."""
        assembler = HelloAssembler()
        data = bytearray(first)
        deadline = time.monotonic() + self.wire.hello_seconds
        try:
            needed = assembler.feed(first)
            while needed is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise HelloError(f"no ClientHello within {self.wire.hello_seconds:g} s")
                try:
                    piece = await asyncio.wait_for(reader.read(needed), left)
                except TimeoutError:
                    raise HelloError(f"no ClientHello within {self.wire.hello_seconds:g} s") from None
                if not piece:
                    raise HelloError("the client closed the tunnel before a ClientHello")
                data += piece
                needed = assembler.feed(piece)
            names = assembler.names()
        except HelloError as exc:
            attempt.allowed, attempt.reason = False, f"TLS check on port {request.port}: {exc}"
            raise _Stop from None
        literal = parse_ip(request.host) is not None
        wanted: tuple[str, ...] = () if literal else (request.host,)
        if tuple(name.lower() for name in names) != wanted:
            shown = ", ".join(names) or "no server name"
            attempt.allowed = False
            attempt.reason = f"TLS ClientHello names {shown[:120]}, not the CONNECT target {request.host}"
            raise _Stop
        return bytes(data)

    async def _first_bytes(self, reader: asyncio.StreamReader, request: Request, attempt: _Attempt) -> bytes:
        """What the client sends first on a tunnel to a port other than 443, held to the
        tunnel's name when it begins a TLS handshake record (0x16 0x03), whatever the port."""
        data = await reader.read(_CHUNK)
        # a lone 0x16 is judged as TLS: forwarding it and relaying the rest unchecked would
        # let a client that pauses after its first byte front any name
        if data.startswith(_TLS_RECORD) or data == _TLS_RECORD[:1]:
            return await self._client_hello(reader, request, attempt, first=data)
        return data

    async def _send(self, stream: asyncio.StreamWriter, data: bytes, attempt: _Attempt, *, up: bool) -> None:
        """Relay ``data``, or as much of it as the session's byte budget still allows, then stop."""
        room = self.policy.limits.max_bytes - self.bytes_used
        over = len(data) > room
        if over:
            self.spent = True
            data = data[: max(room, 0)]
        self.bytes_used += len(data)
        attempt.last = time.monotonic()
        if up:
            attempt.bytes_up += len(data)
        else:
            attempt.bytes_down += len(data)
        if data:
            stream.write(data)
            await stream.drain()
        if over:
            attempt.reason = f"{attempt.reason}; stopped: the session's egress bytes are spent"
            raise _Stop

    async def _pipe(
        self,
        src: asyncio.StreamReader,
        dst: asyncio.StreamWriter,
        attempt: _Attempt,
        *,
        up: bool,
        limit: int | None,
        sniff: Request | None = None,
    ) -> None:
        left = limit
        if sniff is not None:
            # the origin may speak first (SSH, SMTP): only the client's direction waits
            first = await self._first_bytes(src, sniff, attempt)
            if not first:
                return
            await self._send(dst, first, attempt, up=up)
        while left is None or left > 0:
            data = await src.read(_CHUNK if left is None else min(_CHUNK, left))
            if not data:
                break
            if left is not None:
                left -= len(data)
            if not up and attempt.status == 0:
                attempt.status = _origin_status(data)
            await self._send(dst, data, attempt, up=up)
        if limit is None and dst.can_write_eof():
            with contextlib.suppress(OSError):
                dst.write_eof()

    async def _relay(
        self,
        client_reader: asyncio.StreamReader,
        client: asyncio.StreamWriter,
        upstream_reader: asyncio.StreamReader,
        upstream: asyncio.StreamWriter,
        attempt: _Attempt,
        *,
        body: int | None,
        sniff: Request | None = None,
    ) -> None:
        """Bytes both ways until both ends finish, the connection's time is up, or it idles."""
        limits = self.policy.limits
        up = asyncio.create_task(self._pipe(client_reader, upstream, attempt, up=True, limit=body, sniff=sniff))
        down = asyncio.create_task(self._pipe(upstream_reader, client, attempt, up=False, limit=None))
        pending: set[asyncio.Task[None]] = {up, down}
        try:
            while pending:
                now = time.monotonic()
                wait = min(attempt.start + limits.max_seconds - now, attempt.last + limits.idle_seconds - now)
                if wait <= 0:
                    over = now >= attempt.start + limits.max_seconds
                    attempt.reason += (
                        f"; closed after {limits.max_seconds:g} s"
                        if over
                        else f"; closed idle after {limits.idle_seconds:g} s"
                    )
                    return
                done, pending = await asyncio.wait(pending, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    task.result()  # a failed direction ends the connection
                if down in done:
                    return  # the origin is finished; what the client still sends goes nowhere
        finally:
            for task in (up, down):
                task.cancel()
            await asyncio.gather(up, down, return_exceptions=True)


def _origin_status(first: bytes) -> int:
    """The status code an origin's response starts with (plain HTTP), or 0 when it does not."""
    parts = first[:32].split(b" ", 2)
    if len(parts) >= 2 and parts[0].startswith(b"HTTP/") and parts[1].isdigit() and len(parts[1]) == 3:
        return int(parts[1])
    return 0


def _response_established() -> bytes:
    return b"HTTP/1.1 200 Connection Established\r\n\r\n"
