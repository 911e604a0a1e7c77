"""The request-head parser: what it forwards, and that no input makes it do anything but refuse."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from terminai_apts.egress.ledger import LedgerFile, LedgerWriter
from terminai_apts.egress.wire import WireError, WireLimits, parse_head
from terminai_sandbox.launch import audit

LIMITS = WireLimits()


def test_plain_http_is_forwarded_in_origin_form_without_hop_by_hop_headers() -> None:
    request = parse_head(
        b"POST http://Allowed.Test:8080/a/b?c=d HTTP/1.1\r\nHost: allowed.test:8080\r\nProxy-Authorization: Basic x\r\n"
        b"Connection: keep-alive, X-Secret\r\nX-Secret: 1\r\nKeep-Alive: 5\r\nContent-Length: 3\r\nAccept: */*\r\n\r\n",
        LIMITS,
    )
    assert (request.method, request.host, request.port, request.target) == ("POST", "allowed.test", 8080, "/a/b?c=d")
    assert request.content_length == 3
    assert request.forward_head() == (
        b"POST /a/b?c=d HTTP/1.1\r\nHost: allowed.test:8080\r\nContent-Length: 3\r\n"
        b"Accept: */*\r\nConnection: close\r\n\r\n"
    )


def test_connect_reads_names_and_bracketed_addresses() -> None:
    assert parse_head(b"CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n", LIMITS).host == "pypi.org"
    v6 = parse_head(b"CONNECT [2001:DB8::1]:443 HTTP/1.0\r\n\r\n", LIMITS)
    assert (v6.host, v6.port, v6.is_connect) == ("2001:db8::1", 443, True)
    query_only = parse_head(b"GET http://a.test?x HTTP/1.1\r\nHost: a.test\r\n\r\n", LIMITS)
    assert query_only.target == "/?x"


@settings(max_examples=1500, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=300),
        st.lists(
            st.sampled_from(
                [b"GET", b"CONNECT", b" ", b"http://", b"a.test", b":", b"443", b"/", b"HTTP/1.1", b"\r\n", b"Host",
                 b"@", b"[", b"]", b"::1", b"%", b"\x00", b"\n", b"\r", b"Content-Length", b"Transfer-Encoding", b"\t"]
            ),
            max_size=40,
        ).map(b"".join),
    )
)  # fmt: skip
def test_any_head_parses_or_is_a_wire_error(head: bytes) -> None:
    raw = head + b"\r\n\r\n"
    try:
        request = parse_head(raw, LIMITS)
    except WireError as exc:
        assert exc.status in (400, 411, 414, 431, 505)
        return
    assert request.host and 1 <= request.port <= 65535
    assert b"\r\n\r\n" not in request.forward_head()[:-4]  # one head, never a second request inside it
    if not request.is_connect:
        assert request.target.startswith("/")


def test_records_share_the_launchers_ledger_and_verify(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    audit.Ledger(path).append("run", argv=["x"])
    writer = LedgerWriter(LedgerFile(path))
    for number in range(100):
        writer.put({"host": f"h{number}.test", "port": 443, "verdict": "refused"})
    writer.close()
    audit.Ledger(path).append("run", argv=["y"])
    assert writer.failure is None
    assert audit.verify(path) == 102


def test_a_corrupt_ledger_tail_is_a_failure_not_a_fork(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    path.write_text("not json\n")
    writer = LedgerWriter(LedgerFile(path))
    writer.put({"host": "a.test"})
    writer.close()
    assert writer.failure is not None
    assert path.read_text() == "not json\n"


@pytest.mark.parametrize("limit", ["max_request_line", "max_head_bytes", "max_headers"])
def test_the_head_limits_are_the_wire_limits(limit: str) -> None:
    small = WireLimits(**{limit: 50 if limit != "max_headers" else 2})  # type: ignore[arg-type]
    head = b"GET http://a.test/" + b"x" * 40 + b" HTTP/1.1\r\nHost: a.test\r\nA: 1\r\nB: 2\r\n\r\n"
    with pytest.raises(WireError) as caught:
        parse_head(head, small)
    assert caught.value.status in (414, 431)
