"""The proxy's limits and upstream failures through its Python API, on loopback only.

Origins here are on 127.0.0.1, which the proxy refuses for names: the policies name the
address literally (``allow:127.0.0.1:PORT``), the one way a pattern reaches such an address.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable

from terminai_apts.egress.policy import EgressLimits, NetworkPolicy, parse_network_policy
from terminai_apts.egress.proxy import EgressProxy, EgressRecord
from terminai_apts.egress.resolve import HostsFileResolver
from terminai_apts.egress.wire import WireLimits


async def _origin(
    handler: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]],
) -> tuple[asyncio.Server, int]:
    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    return server, int(server.sockets[0].getsockname()[1])


async def _talk(port: int, raw: bytes, *, then: bytes = b"", wait: float = 0.0) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(raw)
    await writer.drain()
    if then:
        await asyncio.sleep(wait)
        writer.write(then)
        await writer.drain()
    try:
        return await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()


def _policy(spec: str, **limits: float) -> NetworkPolicy:
    base = parse_network_policy(spec, source="test")
    return NetworkPolicy(mode="allow", allow=base.allow, deny=base.deny, limits=EgressLimits(**limits))  # type: ignore[arg-type]


def _run(scenario: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(scenario(), 30))


def test_the_byte_budget_stops_a_download_and_refuses_the_next_with_503() -> None:
    async def scenario() -> None:
        async def big(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n" + b"x" * 1_000_000)
            await writer.drain()
            writer.close()

        origin, port = await _origin(big)
        records: list[EgressRecord] = []
        proxy = EgressProxy(_policy(f"allow:127.0.0.1:{port}", max_bytes=100_000), record=records.append)
        listen = await proxy.listen_tcp()
        request = f"GET http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
        first = await _talk(listen, request)
        assert 99_000 < len(first) <= 100_000  # relayed up to the budget (less the request's bytes), then stopped
        assert (await _talk(listen, request)).startswith(b"HTTP/1.1 503 ")
        await proxy.close()
        origin.close()
        assert proxy.bytes_used == 100_000
        assert "egress bytes are spent" in records[0].reason
        assert records[1].status == 503

    _run(scenario)


def test_an_idle_tunnel_is_closed_and_a_long_one_is_cut_at_its_lifetime() -> None:
    async def scenario() -> None:
        async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while data := await reader.read(1024):
                writer.write(data)
                await writer.drain()

        origin, port = await _origin(echo)
        records: list[EgressRecord] = []
        proxy = EgressProxy(
            _policy(f"allow:127.0.0.1:{port}", idle_seconds=0.5, max_seconds=2.0), record=records.append
        )
        listen = await proxy.listen_tcp()
        connect = f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode()
        idle = await _talk(listen, connect)  # sends nothing after the 200: idle
        assert idle == b"HTTP/1.1 200 Connection Established\r\n\r\n"
        reader, writer = await asyncio.open_connection("127.0.0.1", listen)
        writer.write(connect)
        loop = asyncio.get_running_loop()
        started = loop.time()
        echoed = b""
        while loop.time() - started < 5:
            try:
                writer.write(b"ping")  # busy, never idle: only the lifetime ends it
                await writer.drain()
                piece = await reader.read(4096)
            except ConnectionError:
                break
            if not piece:
                break
            echoed += piece
            await asyncio.sleep(0.1)
        writer.close()
        await proxy.close()
        origin.close()
        assert b"ping" in echoed
        assert 1.9 <= loop.time() - started < 4.5
        assert "closed idle after 0.5 s" in records[0].reason
        assert "closed after 2 s" in records[1].reason

    _run(scenario)


def test_slowloris_gets_408_at_the_head_deadline_while_others_are_served() -> None:
    async def scenario() -> None:
        async def ok(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
            writer.close()

        origin, port = await _origin(ok)
        proxy = EgressProxy(_policy(f"allow:127.0.0.1:{port}"), wire=WireLimits(head_seconds=1.0))
        listen = await proxy.listen_tcp()
        slow = asyncio.create_task(_talk(listen, b"GET http://127.0.0.1/ HTTP/1.1\r\nX: ", then=b"a", wait=0.5))
        request = f"GET http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
        assert (await _talk(listen, request)).startswith(b"HTTP/1.1 204")
        assert (await slow).startswith(b"HTTP/1.1 408 ")
        await proxy.close()
        origin.close()

    _run(scenario)


def test_upstream_failures_are_502_and_a_slow_resolver_504() -> None:
    async def scenario() -> None:
        closed = socket.socket()
        closed.bind(("127.0.0.1", 0))
        dead = closed.getsockname()[1]
        closed.close()  # nothing listens there now: the connection is refused

        class Stalls(HostsFileResolver):
            async def resolve(self, name: str) -> tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, ...]:
                await asyncio.sleep(5)
                return ()

        records: list[EgressRecord] = []
        proxy = EgressProxy(
            _policy(f"allow:127.0.0.1:{dead},slow.test,nowhere.test"),
            record=records.append,
            resolver=Stalls({}),
            wire=WireLimits(resolve_seconds=0.3),
        )
        listen = await proxy.listen_tcp()
        assert (await _talk(listen, f"CONNECT 127.0.0.1:{dead} HTTP/1.1\r\n\r\n".encode())).startswith(b"HTTP/1.1 502 ")
        assert (await _talk(listen, b"CONNECT slow.test:443 HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 504 ")
        proxy.resolver = HostsFileResolver({})
        assert (await _talk(listen, b"CONNECT nowhere.test:443 HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 502 ")
        await proxy.close()
        assert [r.status for r in records] == [502, 504, 502]
        assert "not in the hosts file" in records[2].reason

    _run(scenario)


def test_the_tcp_listener_is_loopback_only() -> None:
    async def scenario() -> None:
        proxy = EgressProxy(_policy("allow:a.test"))
        try:
            await proxy.listen_tcp(host="0.0.0.0")
        except ValueError as exc:
            assert "loopback" in str(exc)
        else:
            raise AssertionError("listened beyond loopback")

    _run(scenario)
