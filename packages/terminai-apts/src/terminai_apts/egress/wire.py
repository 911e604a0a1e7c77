"""The one HTTP request head the proxy reads per connection, parsed strictly.

Two forms only: ``CONNECT host:port`` (a tunnel) and an absolute-form ``http://`` request
(plain HTTP). Everything a lenient parser would guess at is refused with its status:
bare CR or LF, NUL and other control characters, obs-folded or malformed header lines,
HTTP/0.9 (no version), userinfo or a fragment in the target, a Host header that
disagrees with the target, both Content-Length and Transfer-Encoding (request
smuggling), a chunked body (411: the proxy forwards exactly Content-Length bytes).
"""

from __future__ import annotations

from terminai_apts.egress.policy import PatternError, canonical_request_host
from terminai_apts.records import frozen_record

_TCHAR = frozenset(b"!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
# Hop-by-hop headers (RFC 9110 §7.6.1) and the proxy's own: never forwarded upstream.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "proxy-connection",
        "keep-alive",
        "proxy-authorization",
        "proxy-authenticate",
        "te",
        "trailer",
        "upgrade",
    }
)


@frozen_record
class WireLimits:
    """The proxy's bounds on one client connection's request head and on the way out."""

    head_seconds: float = 10.0  # the whole head must arrive within this (slowloris)
    max_head_bytes: int = 32768
    max_request_line: int = 8192
    max_headers: int = 100
    resolve_seconds: float = 5.0
    connect_seconds: float = 10.0
    hello_seconds: float = (
        10.0  # the TLS ClientHello after 200 on CONNECT (443, or any port whose tunnel starts with TLS)
    )


class WireError(Exception):
    """A request the proxy answers with ``status`` and closes."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


@frozen_record
class Request:
    """A parsed request head: where it goes, and what to forward for plain HTTP."""

    method: str
    host: str  # canonical (policy.canonical_request_host)
    port: int
    target: str  # origin-form path for plain HTTP; "" for CONNECT
    version: str
    headers: tuple[tuple[str, str], ...]
    content_length: int = 0

    @property
    def is_connect(self) -> bool:
        return self.method == "CONNECT"

    def forward_head(self) -> bytes:
        """The head to send the origin: origin-form target, hop-by-hop headers dropped, one request."""
        named = {
            token.strip().lower()
            for name, value in self.headers
            if name.lower() == "connection"
            for token in value.split(",")
        }
        lines = [f"{self.method} {self.target} {self.version}"]
        lines += [f"{n}: {v}" for n, v in self.headers if n.lower() not in HOP_BY_HOP and n.lower() not in named]
        lines.append("Connection: close")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _port(text: str) -> int:
    if not text.isascii() or not text.isdigit() or len(text) > 5 or (text.startswith("0") and text != "0"):
        raise WireError(400, f"malformed port {text[:16]!r}")
    port = int(text)
    if not 1 <= port <= 65535:
        raise WireError(400, f"port {port} is outside 1-65535")
    return port


def split_authority(authority: str, *, default_port: int | None) -> tuple[str, int]:
    """``host[:port]`` or ``[v6][:port]`` → (canonical host, port); WireError(400) otherwise."""
    if "@" in authority:
        raise WireError(400, "userinfo in the request target is refused")
    if authority.startswith("["):
        close = authority.find("]")
        if close < 0:
            raise WireError(400, "'[' without ']' in the authority")
        host, rest = authority[: close + 1], authority[close + 1 :]
        if rest and not rest.startswith(":"):
            raise WireError(400, "bytes after ']' in the authority")
        port_text = rest[1:] if rest else None
    else:
        host, colon, port_text_raw = authority.partition(":")
        port_text = port_text_raw if colon else None
    if port_text is None:
        if default_port is None:
            raise WireError(400, "CONNECT needs host:port")
        port = default_port
    else:
        port = _port(port_text)
    try:
        return canonical_request_host(host), port
    except PatternError as exc:
        raise WireError(400, f"malformed host {host[:80]!r}: {exc}") from None


def _line(raw: bytes) -> str:
    if b"\r" in raw or b"\n" in raw:
        raise WireError(400, "a bare CR or LF in the request head")
    return raw.decode("latin-1")


def _check_value(name: str, value: str) -> None:
    for char in value:
        if (ord(char) < 0x20 and char != "\t") or ord(char) == 0x7F:
            raise WireError(400, f"a control character in header {name[:40]!r}")


def parse_head(head: bytes, limits: WireLimits) -> Request:
    """The request ``head`` (through the blank line) spells; WireError with the status to answer."""
    if not head.endswith(b"\r\n\r\n"):
        raise WireError(400, "the request head does not end with CRLF CRLF")
    if len(head) > limits.max_head_bytes:
        raise WireError(431, "the request head is too large")
    raw_lines = head[:-4].split(b"\r\n")
    if len(raw_lines[0]) > limits.max_request_line:
        raise WireError(414, "the request line is too long")
    request_line = _line(raw_lines[0])
    if not request_line.isascii() or not request_line.isprintable():
        raise WireError(400, "the request line has a control or non-ASCII character")
    parts = request_line.split(" ")
    if len(parts) != 3 or not all(parts):
        raise WireError(400, "the request line is not METHOD SP TARGET SP VERSION (HTTP/0.9 is refused)")
    method, target, version = parts
    if not set(method.encode()) <= _TCHAR:
        raise WireError(400, "malformed method")
    if version not in ("HTTP/1.1", "HTTP/1.0"):
        if version.startswith("HTTP/") and version[5:].replace(".", "", 1).isdigit():
            raise WireError(505, f"{version} is not supported (HTTP/1.0 and HTTP/1.1 only)")
        raise WireError(400, "malformed HTTP version")
    if len(raw_lines) - 1 > limits.max_headers:
        raise WireError(431, "too many header fields")
    headers: list[tuple[str, str]] = []
    for raw in raw_lines[1:]:
        line = _line(raw)
        if not line or line[0] in " \t":
            raise WireError(400, "an obs-folded or empty header line")
        name, colon, value = line.partition(":")
        if not colon or not name or not set(name.encode("latin-1")) <= _TCHAR:
            raise WireError(400, f"malformed header line {line[:40]!r}")
        value = value.strip(" \t")
        _check_value(name, value)
        headers.append((name, value))
    lowered = [(n.lower(), v) for n, v in headers]
    hosts = [v for n, v in lowered if n == "host"]
    lengths = [v for n, v in lowered if n == "content-length"]
    encodings = [v for n, v in lowered if n == "transfer-encoding"]
    if len(hosts) > 1:
        raise WireError(400, "more than one Host header")
    if lengths and encodings:
        raise WireError(400, "both Content-Length and Transfer-Encoding (refused: request smuggling)")
    if encodings:
        raise WireError(411, "a chunked request body is not forwarded; send Content-Length")
    if len(lengths) > 1 or (lengths and (not lengths[0].isascii() or not lengths[0].isdigit() or len(lengths[0]) > 15)):
        raise WireError(400, "malformed or repeated Content-Length")
    content_length = int(lengths[0]) if lengths else 0
    if "#" in target:
        raise WireError(400, "a fragment in the request target")
    if method == "CONNECT":
        host, port = split_authority(target, default_port=None)
        path = ""
    else:
        scheme, sep, rest = target.partition("://")
        if not sep or not scheme.isascii() or scheme.lower() not in ("http", "https"):
            raise WireError(400, "not a proxy request: plain HTTP needs an absolute http:// target")
        if scheme.lower() == "https":
            raise WireError(400, "an https:// target: use CONNECT (the proxy never originates TLS)")
        cut = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
        authority, path = rest[:cut], rest[cut:]
        if not authority:
            raise WireError(400, "an empty authority in the request target")
        host, port = split_authority(authority, default_port=80)
        path = path if path.startswith("/") else "/" + path
        if not hosts:
            raise WireError(400, "plain HTTP needs a Host header")
    if hosts:
        header_host, header_port = split_authority(hosts[0], default_port=port)
        if (header_host, header_port) != (host, port):
            raise WireError(400, f"the Host header {hosts[0][:80]!r} disagrees with the request target")
    return Request(
        method=method,
        host=host,
        port=port,
        target=path,
        version=version,
        headers=tuple(headers),
        content_length=content_length,
    )
