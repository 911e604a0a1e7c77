"""A hostile session against the egress proxy: it controls everything inside its container
and speaks to the proxy's socket byte by byte.

The proxy runs in this process (its event loop in a thread), with a hosts-file resolver,
in front of origin servers on loopback that count every connection and keep every byte
they get, so a refusal that is not the proxy's, or a byte that reached an origin it
should not, shows. The origins are reachable only through IP-literal allow patterns
(``127.0.0.1:PORT``: a literal is the one way a pattern reaches a loopback address); the
names under attack point at those same origins, so a name that got through would be
seen arriving. Each attack asserts the exact answer (status and reason) and the ledger
record, written by the proxy's own ledger writer to a real file and verified as a chain.

Attacks that need port 443 served (the TLS ClientHello check) live with the namespace
lab in ``tests/integration/egress/test_attacks_on_egress_proxy.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import socket
import threading
import time
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from terminai_apts.egress.ledger import LedgerFile, LedgerWriter
from terminai_apts.egress.policy import EgressLimits, NetworkPolicy, parse_network_policy
from terminai_apts.egress.proxy import EgressProxy, EgressRecord
from terminai_apts.egress.resolve import HostsFileResolver
from terminai_apts.egress.wire import WireLimits
from terminai_sandbox.launch import audit

T = TypeVar("T")
PUBLIC = "45.0.2.1"  # global, routed nowhere from here: what an allowed name "should" reach

# name -> the addresses the attacker's DNS answers with (all of them point at this host
# or at what an attacker wants to reach through the proxy)
HOSTS = {
    "allowed.test": (PUBLIC,),
    "denied.test": ("127.0.0.1",),
    "mixed.test": (PUBLIC, "127.0.0.1"),
    "zero.test": ("0.0.0.0",),
    "mapped.test": ("::ffff:127.0.0.1",),
    "compat.test": ("::127.0.0.1",),
    "nat64.test": ("64:ff9b::7f00:1",),
    "sixtofour.test": ("2002:7f00:1::",),
    "teredo.test": ("2001::1",),
    "loop6.test": ("::1",),
    "cgnat.test": ("100.64.0.1",),
    "metadata.test": ("169.254.169.254",),
    "ecs.test": ("169.254.170.2",),
    "metadata6.test": ("fd00:ec2::254",),
    "alibaba.test": ("100.100.100.200",),
    "private.test": ("10.0.0.1",),
}


class Origin:
    """A loopback server that keeps what each connection sent. ``http``: answer every request
    head with a small response and keep the connection open (a keep-alive origin that would
    happily serve a second request); otherwise echo every byte back."""

    def __init__(self, *, http: bool) -> None:
        self.http = http
        self.connections: list[bytearray] = []
        self.port = 0

    async def start(self) -> asyncio.AbstractServer:
        server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = int(server.sockets[0].getsockname()[1])
        return server

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        got = bytearray()
        self.connections.append(got)
        answered = 0
        try:
            while data := await reader.read(65536):
                got += data
                if not self.http:
                    writer.write(data)
                    await writer.drain()
                    continue
                while got.count(b"\r\n\r\n") > answered:
                    answered += 1
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\norigin")
                    await writer.drain()
                if b"\r\nConnection: close\r\n" in got:
                    # as asked, but only after keeping whatever else arrives for a while:
                    # a second request would have been served
                    with contextlib.suppress(TimeoutError):
                        while more := await asyncio.wait_for(reader.read(65536), 0.5):
                            got += more
                    break
        except ConnectionError:
            pass
        finally:
            writer.close()


class Lab:
    """The proxy (in a thread's event loop), two origins, the ledger file."""

    def __init__(
        self, tmp_path: Path, *, deny: str = "", limits: EgressLimits | None = None, wire: WireLimits | None = None
    ) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.http, self.echo = Origin(http=True), Origin(http=False)
        self._servers = [self.call(self.http.start()), self.call(self.echo.start())]
        names = ",".join(f"{name}:{self.http.port}" for name in HOSTS if name != "allowed.test")
        literals = f"127.0.0.1:{self.http.port},127.0.0.1:{self.echo.port}"
        spec = f"allow:allowed.test,*.wild.test,!deny.wild.test,{literals},{names}"
        parsed = parse_network_policy(spec + deny, source="the attack lab")
        self.policy = NetworkPolicy(mode="allow", allow=parsed.allow, deny=parsed.deny, limits=limits or EgressLimits())
        self.ledger = tmp_path / "ledger.jsonl"
        self.writer = LedgerWriter(LedgerFile(self.ledger))
        self.records: list[EgressRecord] = []
        resolver = HostsFileResolver({n: tuple(ipaddress.ip_address(a) for a in v) for n, v in HOSTS.items()})
        self.proxy = EgressProxy(
            self.policy,
            record=self._record,
            resolver=resolver,
            wire=wire or WireLimits(head_seconds=2.0, connect_seconds=1.0, resolve_seconds=1.0),
        )
        self.port = self.call(self.proxy.listen_tcp(0))

    def _record(self, record: EgressRecord) -> None:
        self.records.append(record)
        self.writer.put(record.to_json())

    def call(self, coroutine: Coroutine[object, object, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(30)

    def close(self) -> None:
        self.call(self._shutdown())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()
        self.writer.close()

    async def _shutdown(self) -> None:
        await self.proxy.close()
        for server in self._servers:
            server.close()
        origins = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in origins:
            task.cancel()
        await asyncio.gather(*origins, return_exceptions=True)
        for server in self._servers:
            await server.wait_closed()

    # -- the attacker's side ---------------------------------------------------------------

    def connect(self) -> socket.socket:
        client = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        return client

    def ask(self, raw: bytes) -> bytes:
        """Send ``raw`` and read until the proxy closes."""
        with self.connect() as client:
            client.sendall(raw)
            return read_all(client)

    def settled(self, count: int) -> list[EgressRecord]:
        deadline = time.monotonic() + 10
        while len(self.records) < count and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.05)  # and no more than that
        assert len(self.records) == count, self.records
        return list(self.records)

    def ledger_lines(self) -> list[dict[str, object]]:
        self.writer.close()
        self.writer = LedgerWriter(LedgerFile(self.ledger))
        return [json.loads(line) for line in self.ledger.read_bytes().split(b"\n") if line]


def read_all(client: socket.socket) -> bytes:
    chunks = []
    while True:
        try:
            chunk = client.recv(65536)
        except (ConnectionResetError, TimeoutError):
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def refusal(status: int, reason: str) -> bytes:
    body = (reason + "\n").encode("ascii", "backslashreplace")
    titles = {400: "Bad Request", 403: "Forbidden", 408: "Request Timeout", 411: "Length Required",
              414: "URI Too Long", 429: "Too Many Requests", 431: "Request Header Fields Too Large",
              502: "Bad Gateway", 503: "Service Unavailable"}  # fmt: skip
    return (
        f"HTTP/1.1 {status} {titles[status]}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    made = Lab(tmp_path)
    try:
        yield made
    finally:
        made.close()


def _only_record(lab: Lab) -> EgressRecord:
    (record,) = lab.settled(1)
    return record


def assert_refused(lab: Lab, raw: bytes, status: int, reason: str, *, host: str = "", port: int = 0) -> EgressRecord:
    """``raw`` is answered with exactly ``status`` and ``reason``, nothing reached an origin,
    and the one ledger record says so."""
    assert lab.ask(raw) == refusal(status, reason)
    record = _only_record(lab)
    assert (record.allowed, record.status, record.reason) == (False, status, reason)
    assert (record.host, record.port, record.address) == (host, port, "")
    assert lab.http.connections == [] and lab.echo.connections == []
    return record


# --- policy bypasses: names -------------------------------------------------------------------


def test_an_upper_case_spelling_of_a_denied_name_is_still_denied(lab: Lab) -> None:
    assert_refused(
        lab, b"CONNECT DENY.Wild.TEST:443 HTTP/1.1\r\n\r\n", 403, "denied by !deny.wild.test",
        host="deny.wild.test", port=443,
    )  # fmt: skip


def test_a_trailing_dot_is_not_a_second_spelling_of_a_denied_name(lab: Lab) -> None:
    assert_refused(
        lab, b"CONNECT deny.wild.test.:443 HTTP/1.1\r\n\r\n", 400,
        "malformed host 'deny.wild.test.': it has an empty label (two dots in a row, or a leading or trailing dot)",
    )  # fmt: skip


def test_an_allowed_name_as_a_prefix_of_another_is_not_allowed(lab: Lab) -> None:
    assert_refused(
        lab, b"CONNECT allowed.test.evil:443 HTTP/1.1\r\n\r\n", 403,
        "allowed.test.evil:443 is not in the allowlist", host="allowed.test.evil", port=443,
    )  # fmt: skip


def test_the_bare_suffix_of_a_wildcard_is_not_under_it(lab: Lab) -> None:
    assert_refused(
        lab, b"CONNECT wild.test:443 HTTP/1.1\r\n\r\n", 403, "wild.test:443 is not in the allowlist",
        host="wild.test", port=443,
    )  # fmt: skip


def test_a_unicode_name_in_the_request_is_refused_not_guessed(lab: Lab) -> None:
    assert_refused(
        lab, "CONNECT dény.wild.test:443 HTTP/1.1\r\n\r\n".encode(), 400,
        "the request line has a control or non-ASCII character",
    )  # fmt: skip


def test_punycode_that_does_not_decode_is_refused(lab: Lab) -> None:
    assert_refused(
        lab, b"CONNECT xn--99999999999.wild.test:443 HTTP/1.1\r\n\r\n", 400,
        "malformed host 'xn--99999999999.wild.test': label 'xn--99999999999' is not valid punycode",
    )  # fmt: skip


def test_an_a_label_of_control_characters_is_refused(lab: Lab) -> None:
    assert_refused(
        lab, b"CONNECT xn--ascii.wild.test:443 HTTP/1.1\r\n\r\n", 400,
        "malformed host 'xn--ascii.wild.test': label 'xn--ascii' is not a valid IDNA A-label",
    )  # fmt: skip


def test_a_deny_pattern_with_a_deviation_character_denies_its_idna2008_name(tmp_path: Path) -> None:
    lab = Lab(tmp_path, deny=",*.deviation.test,!straße.deviation.test")
    try:
        assert lab.ask(b"CONNECT xn--strae-oqa.deviation.test:443 HTTP/1.1\r\n\r\n") == refusal(
            403, "denied by !xn--strae-oqa.deviation.test"
        )
    finally:
        lab.close()


def test_userinfo_in_a_connect_target_is_refused(lab: Lab) -> None:
    assert_refused(
        lab, b"CONNECT allowed.test@denied.test:443 HTTP/1.1\r\n\r\n", 400, "userinfo in the request target is refused"
    )


@pytest.mark.parametrize(
    "target",
    [
        b"http://allowed.test@denied.test/",
        b"http://allowed.test:80@denied.test/",
        b"http://denied.test\\@allowed.test/",
    ],
)
def test_userinfo_in_an_absolute_target_is_refused(lab: Lab, target: bytes) -> None:
    raw = b"GET " + target + b" HTTP/1.1\r\nHost: allowed.test\r\n\r\n"
    assert_refused(lab, raw, 400, "userinfo in the request target is refused")


def test_a_host_header_naming_another_host_than_the_target_is_refused(lab: Lab) -> None:
    port = lab.http.port
    raw = f"GET http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: denied.test\r\n\r\n".encode()
    assert_refused(lab, raw, 400, "the Host header 'denied.test' disagrees with the request target")


def test_a_host_header_naming_an_allowed_host_does_not_carry_a_denied_target(lab: Lab) -> None:
    raw = b"GET http://denied.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n"
    assert_refused(lab, raw, 400, "the Host header 'allowed.test' disagrees with the request target")


def test_a_connect_with_a_disagreeing_host_header_is_refused(lab: Lab) -> None:
    raw = f"CONNECT 127.0.0.1:{lab.echo.port} HTTP/1.1\r\nHost: denied.test:443\r\n\r\n".encode()
    assert_refused(lab, raw, 400, "the Host header 'denied.test:443' disagrees with the request target")


def test_an_origin_form_request_is_not_a_proxy_request(lab: Lab) -> None:
    assert_refused(
        lab, b"GET / HTTP/1.1\r\nHost: denied.test\r\n\r\n", 400,
        "not a proxy request: plain HTTP needs an absolute http:// target",
    )  # fmt: skip


def test_two_host_headers_are_refused(lab: Lab) -> None:
    port = lab.http.port
    raw = f"GET http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nHost: denied.test\r\n\r\n".encode()
    assert_refused(lab, raw, 400, "more than one Host header")


def test_a_fragment_cannot_hide_another_authority(lab: Lab) -> None:
    port = lab.http.port
    raw = f"GET http://127.0.0.1:{port}#@denied.test/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
    assert_refused(lab, raw, 400, "a fragment in the request target")


# --- policy bypasses: addresses spelled another way --------------------------------------------


@pytest.mark.parametrize(
    ("spelled", "why"),
    [
        ("2130706433", "its last label is a number, which resolvers read as an IPv4 address"),  # decimal
        ("0177.0.0.1", "its last label is a number, which resolvers read as an IPv4 address"),  # octal
        ("0x7f000001", "its last label is a number, which resolvers read as an IPv4 address"),  # hex
        ("0x7f.0.0.1", "its last label is a number, which resolvers read as an IPv4 address"),
        ("127.1", "its last label is a number, which resolvers read as an IPv4 address"),  # short form
        ("127.0.0.01", "its last label is a number, which resolvers read as an IPv4 address"),
        ("127.0.0.1.", "it has an empty label (two dots in a row, or a leading or trailing dot)"),
    ],
)
def test_another_spelling_of_an_allowed_ipv4_literal_is_refused(lab: Lab, spelled: str, why: str) -> None:
    # 127.0.0.1 on the echo origin's port is allowed; none of these spellings is that literal
    raw = f"CONNECT {spelled}:{lab.echo.port} HTTP/1.1\r\n\r\n".encode()
    assert_refused(lab, raw, 400, f"malformed host {spelled!r}: {why}")


@pytest.mark.parametrize(
    ("spelled", "canonical"),
    [
        ("[::ffff:127.0.0.1]", "::ffff:7f00:1"),  # IPv4-mapped
        ("[::ffff:7f00:1]", "::ffff:7f00:1"),
        ("[::127.0.0.1]", "::7f00:1"),  # IPv4-compatible
        ("[64:ff9b::127.0.0.1]", "64:ff9b::7f00:1"),  # NAT64
        ("[::1]", "::1"),
        ("0.0.0.0", "0.0.0.0"),
    ],
)
def test_an_ipv6_or_unspecified_form_of_an_allowed_literal_is_not_that_literal(
    lab: Lab, spelled: str, canonical: str
) -> None:
    port = lab.echo.port
    host = f"[{canonical}]" if ":" in canonical else canonical
    assert_refused(
        lab, f"CONNECT {spelled}:{port} HTTP/1.1\r\n\r\n".encode(), 403, f"{host}:{port} is not in the allowlist",
        host=canonical, port=port,
    )  # fmt: skip


def test_an_ipv6_zone_index_is_refused(lab: Lab) -> None:
    assert_refused(
        lab, f"CONNECT [fe80::1%25lo]:{lab.echo.port} HTTP/1.1\r\n\r\n".encode(), 400,
        "malformed host '[fe80::1%25lo]': it is neither a name nor an IP address",
    )  # fmt: skip


def test_an_ipv4_literal_in_brackets_is_refused(lab: Lab) -> None:
    assert_refused(
        lab, f"CONNECT [127.0.0.1]:{lab.echo.port} HTTP/1.1\r\n\r\n".encode(), 400,
        "malformed host '[127.0.0.1]': only an IPv6 address goes in brackets",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("port", "reason"),
    [
        ("443abc", "malformed port '443abc'"),
        ("0443", "malformed port '0443'"),
        ("+443", "malformed port '+443'"),
        ("443.0", "malformed port '443.0'"),
        ("65536", "port 65536 is outside 1-65535"),
        ("0", "port 0 is outside 1-65535"),
        ("", "malformed port ''"),
        ("80:443", "malformed port '80:443'"),
    ],
)
def test_a_malformed_port_is_refused(lab: Lab, port: str, reason: str) -> None:
    assert_refused(lab, f"CONNECT allowed.test:{port} HTTP/1.1\r\n\r\n".encode(), 400, reason)


def test_a_port_in_non_ascii_digits_is_refused(lab: Lab) -> None:
    assert_refused(
        lab, "CONNECT allowed.test:٤٤٣ HTTP/1.1\r\n\r\n".encode(), 400,
        "the request line has a control or non-ASCII character",
    )  # fmt: skip


def test_an_allowed_name_on_a_port_its_pattern_does_not_name_is_refused(lab: Lab) -> None:
    assert_refused(
        lab, b"CONNECT allowed.test:22 HTTP/1.1\r\n\r\n", 403, "allowed.test:22 is not in the allowlist",
        host="allowed.test", port=22,
    )  # fmt: skip


# --- request smuggling ---------------------------------------------------------------------------


def test_a_second_request_on_a_kept_alive_connection_is_never_forwarded(lab: Lab) -> None:
    port = lab.http.port
    first = f"GET http://127.0.0.1:{port}/first HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: keep-alive\r\n\r\n"
    second = "GET http://denied.test/second HTTP/1.1\r\nHost: denied.test\r\n\r\n"
    answer = lab.ask((first + second).encode())
    # the origin answers the one request it was sent; the proxy sends nothing of its own
    assert answer == b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\norigin"
    record = _only_record(lab)
    assert (record.host, record.port, record.allowed, record.status) == ("127.0.0.1", port, True, 200)
    assert [bytes(c) for c in lab.http.connections] == [
        f"GET /first HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode()
    ]
    assert record.bytes_up == len(lab.http.connections[0])


def test_an_upgrade_cannot_turn_a_plain_request_into_a_raw_tunnel(lab: Lab) -> None:
    # h2c smuggling: ask the origin to switch protocols, then speak HTTP/2 (or anything) to it
    # past the proxy's checks; and credentials meant for the proxy must not reach the origin
    port = lab.http.port
    head = (
        f"GET http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\nConnection: Upgrade, HTTP2-Settings, X-Secret\r\n"
        "X-Secret: from-the-session\r\nProxy-Authorization: Basic c2Vzc2lvbjpzZWNyZXQ=\r\n\r\n"
    )
    preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\nGET http://denied.test/ HTTP/1.1\r\nHost: denied.test\r\n\r\n"
    lab.ask((head + preface).encode())
    (got,) = lab.http.connections
    assert bytes(got) == f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode()
    assert _only_record(lab).allowed


def test_a_body_shorter_than_the_bytes_sent_carries_nothing_more(lab: Lab) -> None:
    port = lab.http.port
    head = f"POST http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 4\r\n\r\n"
    smuggled = "GET http://denied.test/ HTTP/1.1\r\nHost: denied.test\r\n\r\n"
    lab.ask((head + "body" + smuggled).encode())
    (got,) = lab.http.connections
    assert bytes(got).endswith(b"\r\n\r\nbody") and b"denied.test" not in got
    assert _only_record(lab).bytes_up == len(got)


def test_a_second_connect_inside_a_tunnel_goes_to_the_tunnel_only(lab: Lab) -> None:
    port = lab.echo.port
    with lab.connect() as client:
        client.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\nCONNECT denied.test:443 HTTP/1.1\r\n\r\n".encode())
        got = b""
        while not got.endswith(b"CONNECT denied.test:443 HTTP/1.1\r\n\r\n"):
            got += client.recv(4096)
    assert got == b"HTTP/1.1 200 Connection Established\r\n\r\nCONNECT denied.test:443 HTTP/1.1\r\n\r\n"
    record = _only_record(lab)
    assert (record.host, record.port, record.address, record.allowed) == ("127.0.0.1", port, "127.0.0.1", True)
    assert [bytes(c) for c in lab.echo.connections] == [b"CONNECT denied.test:443 HTTP/1.1\r\n\r\n"]


@pytest.mark.parametrize(
    ("headers", "status", "reason"),
    [
        ("Transfer-Encoding: chunked", 411, "a chunked request body is not forwarded; send Content-Length"),
        ("Transfer-Encoding: identity, chunked", 411, "a chunked request body is not forwarded; send Content-Length"),
        ("Content-Length: 4\r\nTransfer-Encoding: chunked", 400,
         "both Content-Length and Transfer-Encoding (refused: request smuggling)"),
        ("Content-Length: 4\r\nContent-Length: 40", 400, "malformed or repeated Content-Length"),
        ("Content-Length: 4, 4", 400, "malformed or repeated Content-Length"),
        ("Content-Length: +4", 400, "malformed or repeated Content-Length"),
        ("Content-Length: 0x4", 400, "malformed or repeated Content-Length"),
        ("Transfer-Encoding : chunked", 400, "malformed header line 'Transfer-Encoding : chunked'"),
        ("X-Pad: a\r\n Transfer-Encoding: chunked", 400, "an obs-folded or empty header line"),
        ("X-Pad: a\r\n\tHost: denied.test", 400, "an obs-folded or empty header line"),
        ("X-Nul: a\x00b", 400, "a control character in header 'X-Nul'"),
    ],
)  # fmt: skip
def test_framing_a_parser_could_read_two_ways_is_refused(lab: Lab, headers: str, status: int, reason: str) -> None:
    port = lab.http.port
    raw = f"POST http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{headers}\r\n\r\n0\r\n\r\n"
    assert_refused(lab, raw.encode(), status, reason)


def test_a_bare_lf_cannot_start_a_second_request_line(lab: Lab) -> None:
    port = lab.http.port
    raw = f"GET http://127.0.0.1:{port}/ HTTP/1.1\nGET http://denied.test/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"
    assert_refused(lab, raw.encode(), 400, "a bare CR or LF in the request head")


def test_http_0_9_is_refused(lab: Lab) -> None:
    assert_refused(
        lab, b"GET http://denied.test/\r\n\r\n", 400,
        "the request line is not METHOD SP TARGET SP VERSION (HTTP/0.9 is refused)",
    )  # fmt: skip


# --- address classes: an allowed name that points somewhere it must not ------------------------


@pytest.mark.parametrize(
    ("name", "address", "why"),
    [
        ("denied.test", "127.0.0.1", "loopback"),
        ("zero.test", "0.0.0.0", "'this network' (unspecified)"),  # connect() to it reaches loopback
        ("mapped.test", "::ffff:7f00:1", "IPv4-mapped"),
        ("compat.test", "::7f00:1", "IPv4-compatible (deprecated)"),
        ("nat64.test", "64:ff9b::7f00:1", "NAT64 of 127.0.0.1: loopback"),
        ("sixtofour.test", "2002:7f00:1::", "6to4"),
        ("teredo.test", "2001::1", "IETF protocol assignments (Teredo included)"),
        ("loop6.test", "::1", "loopback"),
        ("cgnat.test", "100.64.0.1", "shared address space (carrier-grade NAT, RFC 6598)"),
        ("metadata.test", "169.254.169.254", "cloud metadata (AWS, GCP, Azure, OpenStack, Oracle)"),
        ("ecs.test", "169.254.170.2", "cloud metadata (AWS ECS task credentials)"),
        ("metadata6.test", "fd00:ec2::254", "cloud metadata (AWS, IPv6)"),
        ("alibaba.test", "100.100.100.200", "cloud metadata (Alibaba Cloud)"),
        ("private.test", "10.0.0.1", "private (RFC 1918)"),
    ],
)
def test_an_allowed_name_resolving_to_a_refused_address_is_refused(lab: Lab, name: str, address: str, why: str) -> None:
    # every one of these names is allowed on the HTTP origin's port, and the loopback ones
    # would reach it: the refusal must be the address check's
    port = lab.http.port
    raw = f"CONNECT {name}:{port} HTTP/1.1\r\n\r\n".encode()
    record = assert_refused(
        lab, raw, 403, f"{name} resolves only to refused addresses: {address} is {why}", host=name, port=port
    )
    assert record.addresses == (address,)


def test_a_name_resolving_to_a_public_and_a_loopback_address_never_tries_the_loopback_one(lab: Lab) -> None:
    port = lab.http.port
    answer = lab.ask(f"CONNECT mixed.test:{port} HTTP/1.1\r\n\r\n".encode())
    record = _only_record(lab)
    assert answer.startswith((b"HTTP/1.1 502 ", b"HTTP/1.1 504 "))  # the public one is routed nowhere here
    assert record.addresses == (PUBLIC, "127.0.0.1") and record.address == ""
    assert record.reason.startswith(f"cannot connect: {PUBLIC}: ") and "127.0.0.1" not in record.reason
    assert lab.http.connections == []


# --- resources -----------------------------------------------------------------------------------


def test_slowloris_gets_408_when_the_head_deadline_passes(lab: Lab) -> None:
    with lab.connect() as client:
        client.sendall(b"CONNECT allowed.test:443 HTTP/1.1\r\n")
        for _ in range(12):  # a header byte now and then, never the blank line
            time.sleep(0.25)
            try:
                client.sendall(b"X")
            except OSError:
                break
        answer = read_all(client)
    reason = "no complete request head within 2 s"
    assert answer == refusal(408, reason)
    record = _only_record(lab)
    assert (record.status, record.reason, record.host) == (408, reason, "")


def test_half_open_connections_beyond_the_limit_get_429(tmp_path: Path) -> None:
    lab = Lab(tmp_path, limits=EgressLimits(max_connections=3))
    try:
        idle = [lab.connect() for _ in range(3)]
        time.sleep(0.2)  # the proxy has accepted all three
        assert lab.ask(b"CONNECT allowed.test:443 HTTP/1.1\r\n\r\n") == refusal(429, "more than 3 connections at once")
        assert [(r.status, r.reason) for r in lab.settled(1)] == [(429, "more than 3 connections at once")]
        for client in idle:
            assert read_all(client) == refusal(408, "no complete request head within 2 s")
            client.close()
        assert sorted(r.status for r in lab.settled(4)) == [408, 408, 408, 429]
    finally:
        lab.close()


def test_a_huge_header_gets_431(lab: Lab) -> None:
    raw = b"CONNECT allowed.test:443 HTTP/1.1\r\nX-Big: " + b"a" * 40000 + b"\r\n\r\n"
    assert_refused(lab, raw, 431, "the request head is too large")


def test_too_many_header_lines_get_431(lab: Lab) -> None:
    raw = b"CONNECT allowed.test:443 HTTP/1.1\r\n" + b"X: y\r\n" * 101 + b"\r\n"
    assert_refused(lab, raw, 431, "too many header fields")


def test_a_huge_request_line_gets_414(lab: Lab) -> None:
    raw = b"GET http://allowed.test/" + b"a" * 9000 + b" HTTP/1.1\r\nHost: allowed.test\r\n\r\n"
    assert_refused(lab, raw, 414, "the request line is too long")


def _tunnel(lab: Lab, port: int) -> socket.socket:
    client = lab.connect()
    client.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode())
    assert client.recv(4096) == b"HTTP/1.1 200 Connection Established\r\n\r\n"
    return client


def test_a_busy_tunnel_is_closed_at_its_lifetime(tmp_path: Path) -> None:
    lab = Lab(tmp_path, limits=EgressLimits(max_seconds=1.0, idle_seconds=30.0))
    try:
        with _tunnel(lab, lab.echo.port) as client:
            sent = 0
            try:
                for _ in range(100):  # 5 s of traffic, well past the lifetime
                    client.sendall(b"ping")
                    sent += 4
                    time.sleep(0.05)
            except OSError:
                pass
            read_all(client)
        record = _only_record(lab)
        assert record.allowed and record.status == 200
        assert record.reason == f"allowed by 127.0.0.1:{lab.echo.port}; closed after 1 s"
        assert 0 < record.bytes_up < 100 * 4
    finally:
        lab.close()


def test_a_silent_tunnel_is_closed_when_idle(tmp_path: Path) -> None:
    lab = Lab(tmp_path, limits=EgressLimits(max_seconds=30.0, idle_seconds=0.5))
    try:
        with _tunnel(lab, lab.echo.port) as client:
            assert read_all(client) == b""
        record = _only_record(lab)
        assert record.reason == f"allowed by 127.0.0.1:{lab.echo.port}; closed idle after 0.5 s"
    finally:
        lab.close()


def test_the_byte_budget_stops_a_tunnel_and_refuses_the_next(tmp_path: Path) -> None:
    lab = Lab(tmp_path, limits=EgressLimits(max_bytes=1000))
    try:
        with _tunnel(lab, lab.echo.port) as client:
            client.sendall(b"x" * 1000)  # the whole budget up; its echo has none left
            assert read_all(client) == b""
        first = _only_record(lab)
        assert first.reason == f"allowed by 127.0.0.1:{lab.echo.port}; stopped: the session's egress bytes are spent"
        assert (first.bytes_up, first.bytes_down) == (1000, 0)
        answer = lab.ask(f"CONNECT 127.0.0.1:{lab.echo.port} HTTP/1.1\r\n\r\n".encode())
        assert answer == refusal(503, "the session's 1000 bytes of egress are spent")
        assert lab.settled(2)[1].status == 503
    finally:
        lab.close()


# --- the ledger ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        b'CONNECT allowed.test","verdict":"allowed","x":":443 HTTP/1.1\r\n\r\n',
        b'CONNECT allowed.test}\r\n{"verdict":"allowed"}:443 HTTP/1.1\r\n\r\n',
        b'GET http://127.0.0.1:1/ HTTP/1.1\r\nHost: a\x85\xe2\x80\xa8"}{"verdict": "allowed"\r\n\r\n',
        b"GET http://127.0.0.1:1/ HTTP/1.1\r\nHost: \x1b[2J\x1b]0;owned\x07\r\n\r\n",
    ],
)
def test_hostile_host_names_land_in_the_ledger_as_one_escaped_refusal(lab: Lab, raw: bytes) -> None:
    lab.ask(raw)
    record = _only_record(lab)
    assert not record.allowed and record.status == 400
    lines = lab.ledger_lines()
    assert len(lines) == 1 and lines[0]["verdict"] == "refused" and lines[0]["reason"] == record.reason
    data = lab.ledger.read_bytes()
    assert data.count(b"\n") == 1 and data.isascii()
    assert all(byte >= 0x20 for byte in data[:-1])  # no control character, no terminal escape
    assert audit.verify(lab.ledger) == 1
