"""A generated corpus of malformed and tricky requests against the real proxy process.

Each is sent raw over the proxy's Unix socket; the answer's status is checked, then the
origin log shows nothing refused ever reached a server, and the proxy still serves.
"""

from __future__ import annotations

import pytest

from tests.integration.egress.conftest import ALLOWED, Lab
from tests.integration.egress.test_attacks import _ask, _settled, _status

GOOD = b"GET http://allowed.test/good HTTP/1.1\r\nHost: allowed.test\r\n\r\n"


def _corpus() -> list[tuple[str, bytes, int]]:
    cases: list[tuple[str, bytes, int]] = [
        ("http/0.9", b"GET /\r\n\r\n", 400),
        ("http/0.9 absolute", b"GET http://allowed.test/\r\n\r\n", 400),
        ("http/2.0", b"GET http://allowed.test/ HTTP/2.0\r\nHost: allowed.test\r\n\r\n", 505),
        ("lower-case version", b"GET http://allowed.test/ http/1.1\r\nHost: allowed.test\r\n\r\n", 400),
        ("two spaces", b"GET  http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", 400),
        ("tab separator", b"GET\thttp://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", 400),
        ("origin form", b"GET /x HTTP/1.1\r\nHost: allowed.test\r\n\r\n", 400),
        ("https absolute", b"GET https://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", 400),
        ("ftp absolute", b"GET ftp://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", 400),
        ("junk line", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 400),
        ("NUL in the target", b"GET http://allowed.test/\x00 HTTP/1.1\r\nHost: allowed.test\r\n\r\n", 400),
        ("NUL in the host", b"GET http://allowed.test\x00.evil/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", 400),
        ("NUL in a header", b"GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\nX: a\x00b\r\n\r\n", 400),
        ("escape in a header", b"GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\nX: \x1b[2J\r\n\r\n", 400),
        ("bare LF", b"GET http://allowed.test/ HTTP/1.1\nHost: allowed.test\r\n\r\n", 400),
        ("bare CR", b"GET http://allowed.test/ HTTP/1.1\rHost: allowed.test\r\n\r\n", 400),
        ("obs-fold", b"GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\nX: a\r\n b\r\n\r\n", 400),
        ("space before colon", b"GET http://allowed.test/ HTTP/1.1\r\nHost : allowed.test\r\n\r\n", 400),
        ("no colon", b"GET http://allowed.test/ HTTP/1.1\r\nHost allowed.test\r\n\r\n", 400),
        ("non-ASCII target", "GET http://allowed.test/é HTTP/1.1\r\nHost: allowed.test\r\n\r\n".encode(), 400),
        ("userinfo", b"GET http://user:pw@allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", 400),
        ("userinfo trick", b"GET http://allowed.test@denied.test/ HTTP/1.1\r\nHost: denied.test\r\n\r\n", 400),
        ("connect userinfo", b"CONNECT allowed.test@denied.test:443 HTTP/1.1\r\n\r\n", 400),
        ("fragment", b"GET http://allowed.test/#x HTTP/1.1\r\nHost: allowed.test\r\n\r\n", 400),
        ("suffix trick", b"GET http://allowed.test.evil/ HTTP/1.1\r\nHost: allowed.test.evil\r\n\r\n", 403),
        ("prefix trick", b"GET http://evilallowed.test/ HTTP/1.1\r\nHost: evilallowed.test\r\n\r\n", 403),
        ("trailing dot", b"GET http://allowed.test./ HTTP/1.1\r\nHost: allowed.test.\r\n\r\n", 400),
        ("connect trailing dot", b"CONNECT allowed.test.:443 HTTP/1.1\r\n\r\n", 400),
        ("percent-encoded host", b"GET http://allowed%2etest/ HTTP/1.1\r\nHost: allowed%2etest\r\n\r\n", 400),
        ("percent-encoded connect", b"CONNECT allowed%2Etest:443 HTTP/1.1\r\n\r\n", 400),
        ("unicode dot", "CONNECT allowed\u3002test:443 HTTP/1.1\r\n\r\n".encode(), 400),
        ("punycode lookalike", b"CONNECT xn--llowed-9sa.test:443 HTTP/1.1\r\n\r\n", 403),
        ("decimal address", b"GET http://2130706433/ HTTP/1.1\r\nHost: 2130706433\r\n\r\n", 400),
        ("octal address", b"CONNECT 0177.0.0.1:443 HTTP/1.1\r\n\r\n", 400),
        ("hex address", b"CONNECT 0x7f.0.0.1:443 HTTP/1.1\r\n\r\n", 400),
        ("zone index", b"CONNECT [fe80::1%25lo]:443 HTTP/1.1\r\n\r\n", 400),
        ("loopback v6 literal", b"CONNECT [::1]:443 HTTP/1.1\r\n\r\n", 403),
        ("mapped loopback", b"CONNECT [::ffff:127.0.0.1]:443 HTTP/1.1\r\n\r\n", 403),
        ("v4 in brackets", b"CONNECT [45.0.2.1]:443 HTTP/1.1\r\n\r\n", 400),
        ("connect without port", b"CONNECT allowed.test HTTP/1.1\r\n\r\n", 400),
        ("connect port 0", b"CONNECT allowed.test:0 HTTP/1.1\r\n\r\n", 400),
        ("connect port 65536", b"CONNECT allowed.test:65536 HTTP/1.1\r\n\r\n", 400),
        ("connect port sign", b"CONNECT allowed.test:+443 HTTP/1.1\r\n\r\n", 400),
        ("connect empty port", b"CONNECT allowed.test: HTTP/1.1\r\n\r\n", 400),
        ("connect to a path", b"CONNECT http://allowed.test/ HTTP/1.1\r\n\r\n", 400),
        ("no Host", b"GET http://allowed.test/ HTTP/1.1\r\n\r\n", 400),
        ("Host disagrees", b"GET http://allowed.test/ HTTP/1.1\r\nHost: denied.test\r\n\r\n", 400),
        ("Host port disagrees", b"GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test:8080\r\n\r\n", 400),
        ("two Hosts", b"GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\nHost: denied.test\r\n\r\n", 400),
        ("connect Host disagrees", b"CONNECT allowed.test:443 HTTP/1.1\r\nHost: denied.test:443\r\n\r\n", 400),
        (
            "smuggling",
            b"GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 4\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n",
            400,
        ),
        (
            "chunked",
            b"GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\nTransfer-Encoding: chunked\r\n\r\n",
            411,
        ),
        ("bad length", b"GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: -1\r\n\r\n", 400),
        (
            "two lengths",
            b"GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n"
            b"Content-Length: 1\r\nContent-Length: 2\r\n\r\n",
            400,
        ),
        (
            "long request line",
            b"GET http://allowed.test/" + b"a" * 9000 + b" HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
            414,
        ),
        (
            "huge header",
            b"GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\nX: " + b"a" * 40000 + b"\r\n\r\n",
            431,
        ),
        (
            "many headers",
            b"GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n" + b"X-A: b\r\n" * 150 + b"\r\n",
            431,
        ),
        ("bad method", b"G(T http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", 400),
        ("head ends early", b"GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n", 400),
    ]
    return cases


@pytest.mark.parametrize(
    ("raw", "status"), [(raw, status) for _, raw, status in _corpus()], ids=[c[0] for c in _corpus()]
)
def test_a_malformed_request_gets_its_status_and_reaches_no_origin(lab: Lab, raw: bytes, status: int) -> None:
    before = lab.origin_log()
    answer = _ask(lab, raw)
    assert _status(answer) == status, answer[:300]
    assert b"Connection: close" in answer
    assert lab.origin_log() == before, "a refused request reached an origin"


def test_upper_case_is_the_same_name(lab: Lab) -> None:
    answer = _ask(lab, b"GET HTTP://ALLOWED.TEST/Up HTTP/1.1\r\nHost: Allowed.Test\r\n\r\n")
    assert answer.endswith(f"origin {ALLOWED}:80 /Up".encode()), answer


def test_pipelined_requests_after_the_first_go_nowhere(lab: Lab) -> None:
    answer = _ask(
        lab,
        b"GET http://allowed.test/one HTTP/1.1\r\nHost: allowed.test\r\n\r\n"
        b"GET http://denied.test/two HTTP/1.1\r\nHost: denied.test\r\n\r\n"
        b"GET /three HTTP/1.1\r\nHost: denied.test\r\n\r\n\x00\xff junk",
    )
    assert answer.count(b"HTTP/1.1 200") == 1 and answer.endswith(f"origin {ALLOWED}:80 /one".encode())
    log = lab.origin_log()
    assert "/one host=allowed.test" in log
    assert "/two" not in log and "/three" not in log


def test_a_request_body_is_forwarded_exactly_and_nothing_after_it(lab: Lab) -> None:
    before = lab.origin_log()
    answer = _ask(
        lab,
        b"GET http://allowed.test/body HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 5\r\n\r\nhello"
        b"GET /smuggled HTTP/1.1\r\nHost: denied.test\r\n\r\n",
    )
    assert answer.endswith(f"origin {ALLOWED}:80 /body".encode()), answer
    assert "/smuggled" not in lab.origin_log()[len(before) :]


def test_the_proxy_still_serves_after_the_corpus(lab: Lab) -> None:
    _settled(lab)
    assert lab.proxy is not None and lab.proxy.poll() is None
    assert _ask(lab, GOOD).endswith(f"origin {ALLOWED}:80 /good".encode())
