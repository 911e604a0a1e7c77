"""The network policy of a session, as data: parsed strictly, decided purely.

Three modes. ``off`` (the default): the session has no route out. ``allow``: the session
reaches the outside only through the allowlisting proxy, and only the names and ports of
the allow patterns that no deny pattern matches. ``proxy-command``: the legacy knob, a
proxy the user supplies as an argv.

The grammar of ``SANDBOX_NETWORK`` and of the ``run`` option::

    off
    allow:PATTERN[,PATTERN...]      a leading ``!`` makes a pattern deny
    proxy-command:ARGV              split with shlex, never run through a shell

A pattern is ``host``, ``host:port``, ``*.suffix``, ``*.suffix:port``, an IPv4 literal
with an optional ``:port``, or an IPv6 literal as ``[v6]``, ``[v6]:port`` or bare ``v6``.
Names are compared as lower-case IDNA A-labels. ``*.suffix`` matches names *under* the
suffix, never the suffix itself. An allow pattern without a port allows ports 80 and 443
only; a deny pattern without a port denies every port. Deny patterns win over allow.

Nothing here touches the network: :meth:`NetworkPolicy.decide` judges a name the proxy was
asked for; resolving it and judging the address is the proxy's job.
"""

from __future__ import annotations

import ipaddress
import math

from terminai_apts.egress.errors import ConfigError
from terminai_apts.records import frozen_record

TYPE_CHECKING = False  # not `from typing import ...`: a launch never imports typing
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Literal

    Mode = Literal["off", "allow", "proxy-command"]
    _IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

MODES = ("off", "allow", "proxy-command")
DEFAULT_PORTS = (80, 443)  # what an allow pattern without a port allows
_GRAMMAR = "off | allow:PATTERN[,PATTERN...] (a leading ! denies) | proxy-command:ARGV"
_PATTERN_FORMS = "host, host:port, *.suffix, *.suffix:port, an IPv4 address, or [IPv6]:port"
_LDH = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")
_HEX = frozenset("0123456789abcdef")


class PatternError(ValueError):
    """A name, address or port that no pattern or request may carry (no source attached yet)."""


# ---------------------------------------------------------------------------------------------
# Names and addresses
# ---------------------------------------------------------------------------------------------


def _check_text(text: str) -> None:
    if not text:
        raise PatternError("it is empty")
    for char in text:
        if char.isspace() or not char.isprintable():
            raise PatternError(f"it contains {char!r} (no spaces or control characters)")


def _looks_numeric(label: str) -> bool:
    # Resolvers (inet_aton) read "127.1", "2130706433" and "0x7f.1" as IPv4 addresses, so a
    # name whose last label is a number would reach an address no pattern names literally.
    return label.isdigit() or (label.startswith("0x") and set(label[2:]) <= _HEX)


def _check_label(label: str) -> None:
    if not label:
        raise PatternError("it has an empty label (two dots in a row, or a leading or trailing dot)")
    if len(label) > 63:
        raise PatternError(f"label {label[:20]!r}... is longer than 63 characters")
    if not set(label) <= _LDH:
        bad = sorted(set(label) - _LDH)[0]
        raise PatternError(f"label {label!r} contains {bad!r} (letters, digits and '-' only)")
    if label.startswith("-") or label.endswith("-"):
        raise PatternError(f"label {label!r} starts or ends with '-'")
    if label.startswith("xn--"):
        _check_a_label(label)
    elif label[2:4] == "--":
        raise PatternError(f"label {label!r} has '--' in the third and fourth places (reserved by IDNA)")


_DEVIATIONS = {"\u00df": "sharp s", "\u03c2": "final sigma", "\u200d": "ZWJ", "\u200c": "ZWNJ"}


def _check_a_label(label: str) -> None:
    """Refuse an ``xn--`` label that is not the A-label of a plausible IDNA 2008 U-label.

    Punycode decodes almost anything (``xn--ascii`` is C1 controls), so decoding is not
    validation: the U-label must be non-empty, non-ASCII, NFC, lower-case, only letters,
    marks, decimal digits and '-', and encode back to exactly this label.
    """
    import unicodedata  # noqa: PLC0415  (only names with xn-- labels need it)

    invalid = PatternError(f"label {label!r} is not a valid IDNA A-label")
    try:
        decoded = label[4:].encode("ascii").decode("punycode")
    except UnicodeError:
        raise PatternError(f"label {label!r} is not valid punycode") from None
    if not decoded or decoded.isascii() or decoded != decoded.lower():
        raise invalid
    if unicodedata.normalize("NFC", decoded) != decoded:
        raise invalid
    if any(
        char != "-" and unicodedata.category(char)[0] not in "LM" and unicodedata.category(char) != "Nd"
        for char in decoded
    ):
        raise invalid
    if "xn--" + decoded.encode("punycode").decode("ascii") != label:
        raise invalid


def _u_label(label: str) -> str:
    """The A-label of one Unicode label, as IDNA 2008 (non-transitional UTS 46) writes it.

    Python's ``idna`` codec is IDNA 2003, which maps the deviation characters away
    (``straße`` to ``strasse``), while clients and registries use IDNA 2008
    (``xn--strae-oqa``): a deny pattern would deny the wrong name. The ``idna`` package is
    not an option (the launch kernel imports this module: standard library only), so we
    implement the narrow subset we need: lower-case and NFC, then punycode, then the strict
    A-label check. ß and ς are kept (IDNA 2008 PVALID). ZWJ and ZWNJ are refused (IDNA
    2008 allows them only by contextual rules we do not implement). Any other label where
    IDNA 2003 and this encoding disagree (case folding, NFKC mappings) is refused too:
    the operator writes the A-label, and there is only one reading.
    """
    import unicodedata  # noqa: PLC0415  (only Unicode patterns need it)
    from encodings import idna  # noqa: PLC0415

    for char, name in _DEVIATIONS.items():
        if char in label and name in ("ZWJ", "ZWNJ"):
            raise PatternError(f"label {label!r} contains {name} (U+{ord(char):04X}); write its A-label (xn--...)")
    folded = unicodedata.normalize("NFC", label.lower())
    if folded.isascii():
        return folded
    try:
        strict = "xn--" + folded.encode("punycode").decode("ascii")
        _check_a_label(strict)
    except PatternError:
        raise PatternError(f"label {label!r} is not a valid IDNA 2008 label; write its A-label (xn--...)") from None
    if any(char in folded for char in _DEVIATIONS):
        return strict  # IDNA 2003 would map it away; 2008, what clients use, keeps it
    try:
        legacy = idna.ToASCII(label).decode("ascii").lower()
    except UnicodeError:
        legacy = ""
    if legacy != strict:
        raise PatternError(
            f"label {label!r} reads differently in IDNA 2003 ({legacy or 'invalid'}) and IDNA 2008 ({strict}); "
            "write the A-label (xn--...) you mean"
        )
    return strict


def canonical_name(text: str, *, unicode_ok: bool) -> str:
    """``text`` as a lower-case IDNA A-label name, or :class:`PatternError`.

    Operators may write a Unicode name in a pattern (``unicode_ok``); a request from a
    client must already be ASCII (an HTTP request line carries A-labels). A trailing dot is
    refused: ``allowed.test.`` is the same DNS name, but a second spelling is a second
    thing to get wrong.
    """
    _check_text(text)
    if not text.isascii():
        if not unicode_ok:
            raise PatternError("it is not ASCII (send the IDNA form, xn--...)")
        text = ".".join(_u_label(label) if label else label for label in text.split("."))
    name = text.lower()
    if len(name) > 253:
        raise PatternError("it is longer than 253 characters")
    labels = name.split(".")
    for label in labels:
        _check_label(label)
    if _looks_numeric(labels[-1]):
        raise PatternError("its last label is a number, which resolvers read as an IPv4 address")
    return name


def parse_ip(text: str) -> _IPAddress | None:
    """The address ``text`` spells in its one accepted form, or None if it is not an address."""
    if "%" in text:
        return None  # a zone index ("fe80::1%eth0") picks an interface: never a destination here
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _parse_port(text: str) -> int:
    if not text.isascii() or not text.isdigit():
        raise PatternError(f"port {text!r} is not a number")
    if text != "0" and text.startswith("0"):
        raise PatternError(f"port {text!r} has a leading zero")
    port = int(text)
    if not 1 <= port <= 65535:
        raise PatternError(f"port {port} is outside 1-65535")
    return port


# ---------------------------------------------------------------------------------------------
# Records
# ---------------------------------------------------------------------------------------------


@frozen_record
class HostPattern:
    """One allow or deny pattern: an exact name, ``*.suffix``, or an IP literal, and a port.

    ``host`` is canonical: a lower-case IDNA A-label name, ``*.`` and such a name, or an IP
    address in Python's compressed form (IPv6 without brackets). ``port`` None means 80 and
    443 in an allow pattern and every port in a deny pattern.
    """

    host: str
    port: int | None = None

    def __post_init__(self) -> None:
        if self.port is not None and (type(self.port) is not int or not 1 <= self.port <= 65535):
            raise ValueError(f"HostPattern port {self.port!r} is outside 1-65535")
        try:
            if self.host.startswith("*."):
                canonical = "*." + canonical_name(self.host[2:], unicode_ok=False)
            else:
                ip = parse_ip(self.host)
                canonical = str(ip) if ip is not None else canonical_name(self.host, unicode_ok=False)
        except PatternError:
            canonical = ""
        if canonical != self.host:
            raise ValueError(f"HostPattern host {self.host!r} is not canonical (use parse_pattern)")

    @property
    def is_suffix(self) -> bool:
        return self.host.startswith("*.")

    @property
    def ip(self) -> _IPAddress | None:
        """The address this pattern names literally, if it is an IP literal."""
        return None if self.is_suffix else parse_ip(self.host)

    def matches_host(self, host: str) -> bool:
        """Whether canonical ``host`` (see :func:`canonical_request_host`) is this pattern's."""
        if self.is_suffix:
            return host.endswith(self.host[1:])  # ".suffix": a label boundary, never the bare suffix
        return host == self.host

    def matches(self, host: str, port: int, *, deny: bool = False) -> bool:
        """Whether this pattern covers ``host`` on ``port``; ``deny``: no port means every port."""
        if self.port is not None:
            return port == self.port and self.matches_host(host)
        return (deny or port in DEFAULT_PORTS) and self.matches_host(host)

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port is None else f"{host}:{self.port}"


@frozen_record
class EgressLimits:
    """What one session may use of the proxy; every limit refuses with an HTTP status, never hangs.

    ``max_connections``: tunnels and requests open at once (429 beyond it).
    ``max_bytes``: bytes up and down, summed over the session (the proxy stops relaying).
    ``max_seconds``: the lifetime of one connection. ``idle_seconds``: the longest silence
    in both directions before a connection is closed. ``max_refusals``: refused attempts
    recorded one by one in the ledger; beyond them refusals are counted, and written as one
    summary record per ``max_refusals`` more and when the proxy stops (a client looping on
    refused CONNECTs cannot fill the disk, and every attempt is still in the sum).
    """

    max_connections: int = 32
    max_bytes: int = 2 * 1024**3  # 2 GiB: a few large wheels, not a disk image
    max_seconds: float = 900.0
    idle_seconds: float = 60.0
    max_refusals: int = 256

    def __post_init__(self) -> None:
        for name, value, ceiling in (
            ("max_connections", self.max_connections, _MAX_CONNECTIONS),
            ("max_bytes", self.max_bytes, _MAX_BYTES),
            ("max_refusals", self.max_refusals, _MAX_REFUSALS),
        ):
            if type(value) is not int or not 1 <= value <= ceiling:
                raise ValueError(f"EgressLimits {name} {value!r} is outside 1-{ceiling}")
        for name, seconds in (("max_seconds", self.max_seconds), ("idle_seconds", self.idle_seconds)):
            if type(seconds) not in (int, float) or not math.isfinite(seconds) or not 0 < seconds <= _MAX_SECONDS:
                raise ValueError(f"EgressLimits {name} {seconds!r} is outside (0, {_MAX_SECONDS}]")

    def to_json(self) -> dict[str, int | float]:
        return {
            "max_connections": self.max_connections,
            "max_bytes": self.max_bytes,
            "max_seconds": float(self.max_seconds),
            "idle_seconds": float(self.idle_seconds),
            "max_refusals": self.max_refusals,
        }


_MAX_CONNECTIONS = 4096
_MAX_BYTES = 1 << 50
_MAX_REFUSALS = 1 << 20
_MAX_SECONDS = 86400.0


@frozen_record
class Verdict:
    """The policy's answer for one (host, port): allowed or not, why, and the pattern that decided."""

    allowed: bool
    reason: str
    pattern: HostPattern | None = None  # the allow pattern that let it through; None when refused


@frozen_record
class NetworkPolicy:
    """A session's network policy. Build one with :func:`parse_network_policy`,
    :func:`policy_from_settings`, :meth:`from_json` or :meth:`off`."""

    mode: Mode
    allow: tuple[HostPattern, ...] = ()
    deny: tuple[HostPattern, ...] = ()
    proxy_command: tuple[str, ...] = ()
    limits: EgressLimits = EgressLimits()

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"NetworkPolicy mode {self.mode!r} is not one of {MODES}")
        if (self.mode == "allow") != bool(self.allow):
            raise ValueError("NetworkPolicy: allow patterns go with mode 'allow', and it needs one")
        if self.deny and self.mode != "allow":
            raise ValueError("NetworkPolicy: deny patterns go with mode 'allow'")
        if (self.mode == "proxy-command") != bool(self.proxy_command):
            raise ValueError("NetworkPolicy: an argv goes with mode 'proxy-command', and it needs one")

    @classmethod
    def off(cls) -> NetworkPolicy:
        return cls(mode="off")

    def to_spec(self) -> str:
        """The ``SANDBOX_NETWORK`` form of this policy (limits are settings-file only)."""
        if self.mode == "off":
            return "off"
        if self.mode == "proxy-command":
            import shlex  # noqa: PLC0415  (the launch seal keeps shlex off the common path)

            return "proxy-command:" + shlex.join(self.proxy_command)
        return "allow:" + ",".join([str(p) for p in self.allow] + [f"!{p}" for p in self.deny])

    def describe(self) -> str:
        """One line for preflight and the audit ledger."""
        if self.mode == "off":
            return "off (no network: the session has loopback only)"
        if self.mode == "proxy-command":
            return f"{self.to_spec()} (the session's HTTP(S)_PROXY is that command's)"
        limits = self.limits
        return (
            f"{self.to_spec()} (at most {limits.max_connections} connections at once, "
            f"{_size(limits.max_bytes)} in all, {limits.max_seconds:g} s each, idle {limits.idle_seconds:g} s)"
        )

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict; :meth:`from_json` reads it back to an equal policy."""
        return {
            "mode": self.mode,
            "allow": [str(p) for p in self.allow],
            "deny": [str(p) for p in self.deny],
            "proxy_command": list(self.proxy_command),
            "limits": self.limits.to_json(),
        }

    @classmethod
    def from_json(cls, value: object, *, source: str = "the egress policy JSON") -> NetworkPolicy:
        return policy_from_settings(value, source=source)

    def decide(self, host: str, port: int) -> Verdict:
        """Whether the proxy may connect to ``host`` (as the client spelled it) on ``port``.

        Never raises: a malformed name or port is a refusal with its reason.
        """
        if self.mode != "allow":
            return Verdict(allowed=False, reason=f"network mode is {self.mode}: the proxy allows nothing")
        if type(port) is not int or not 1 <= port <= 65535:
            return Verdict(allowed=False, reason=f"port {port!r} is outside 1-65535")
        try:
            canonical = canonical_request_host(host)
        except PatternError as exc:
            return Verdict(allowed=False, reason=f"malformed host {host[:80]!r}: {exc}")
        for pattern in self.deny:
            if pattern.matches(canonical, port, deny=True):
                return Verdict(allowed=False, reason=f"denied by !{pattern}")
        for pattern in self.allow:
            if pattern.matches(canonical, port):
                return Verdict(allowed=True, reason=f"allowed by {pattern}", pattern=pattern)
        return Verdict(allowed=False, reason=f"{_show(canonical, port)} is not in the allowlist")


def _show(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _size(count: int) -> str:
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if count >= scale and count % scale == 0:
            return f"{count // scale} {unit}"
    return f"{count} bytes"


def canonical_request_host(host: str) -> str:
    """The host a client asked for, in the form patterns hold: an address in Python's
    compressed form (brackets dropped) or a lower-case ASCII name. Raises :class:`PatternError`."""
    _check_text(host)
    inner = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    ip = parse_ip(inner)
    if ip is not None:
        if inner is not host and ip.version != 6:
            raise PatternError("only an IPv6 address goes in brackets")
        return str(ip)
    if inner is not host or ":" in host:
        raise PatternError("it is neither a name nor an IP address")
    return canonical_name(host, unicode_ok=False)


# ---------------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------------


def parse_pattern(text: str) -> HostPattern:
    """One pattern (without its ``!``) as a :class:`HostPattern`; raises :class:`PatternError`."""
    _check_text(text)
    port: int | None = None
    if text.startswith("["):
        close = text.find("]")
        if close < 0:
            raise PatternError("'[' without a closing ']'")
        host, rest = text[1:close], text[close + 1 :]
        if rest:
            if not rest.startswith(":"):
                raise PatternError(f"{rest!r} after ']' (write [IPv6]:port)")
            port = _parse_port(rest[1:])
        ip = parse_ip(host)
        if ip is None or ip.version != 6:
            raise PatternError(f"{host!r} in brackets is not an IPv6 address")
        return HostPattern(host=str(ip), port=port)
    if text.count(":") > 1:
        ip = parse_ip(text)
        if ip is None:
            raise PatternError("it has several ':' but is not an IPv6 address (write [IPv6]:port)")
        return HostPattern(host=str(ip), port=None)
    host, colon, port_text = text.partition(":")
    if colon:
        port = _parse_port(port_text)
    ip = parse_ip(host)
    if ip is not None:
        return HostPattern(host=str(ip), port=port)
    if host.startswith("*."):
        suffix = host[2:]
        if not suffix:
            raise PatternError("'*.' needs a suffix ('*.example.org')")
        if "*" in suffix:
            raise PatternError("a wildcard may only be the whole first label ('*.suffix')")
        return HostPattern(host="*." + canonical_name(suffix, unicode_ok=True), port=port)
    if "*" in host:
        raise PatternError("'*' may only be the whole first label of '*.suffix' (never alone, never inside a name)")
    return HostPattern(host=canonical_name(host, unicode_ok=True), port=port)


def _patterns(items: Iterable[str], *, deny: bool, source: str) -> tuple[HostPattern, ...]:
    out: list[HostPattern] = []
    for item in items:
        try:
            pattern = parse_pattern(item)
        except PatternError as exc:
            kind = "deny pattern" if deny else "pattern"
            raise ConfigError(
                f"{source}: {kind} {item[:80]!r}: {exc}",
                hint=f"a pattern is {_PATTERN_FORMS}; e.g. allow:pypi.org,*.githubusercontent.com:443",
            ) from None
        if pattern in out:
            raise ConfigError(f"{source}: pattern {item!r} is listed twice", hint="list each pattern once")
        out.append(pattern)
    return tuple(out)


def _split_patterns(body: str, *, source: str) -> tuple[list[str], list[str]]:
    if not body:
        raise ConfigError(f"{source}: 'allow:' needs at least one pattern", hint=f"write {_GRAMMAR}")
    allow: list[str] = []
    deny: list[str] = []
    for item in body.split(","):
        if not item:
            raise ConfigError(
                f"{source}: empty pattern in {body[:80]!r} (a doubled, leading or trailing comma)",
                hint="separate patterns with single commas and no spaces",
            )
        if any(item.startswith(mode + ":") or item == mode for mode in MODES):
            raise ConfigError(
                f"{source}: {item[:80]!r} names a second mode; a policy has exactly one",
                hint=f"write {_GRAMMAR}",
            )
        if item.startswith("!"):
            deny.append(item[1:])
        else:
            allow.append(item)
    if not allow:
        raise ConfigError(
            f"{source}: only deny patterns: 'allow:' needs at least one pattern that allows",
            hint="add the hosts the session may reach, e.g. allow:pypi.org,!evil.pypi.org",
        )
    return allow, deny


def _proxy_argv(body: str, *, source: str) -> tuple[str, ...]:
    import shlex  # noqa: PLC0415  (the launch seal keeps shlex off the common path)

    if any(not char.isprintable() and char not in " \t" for char in body):
        raise ConfigError(f"{source}: the proxy command contains a control character", hint="write the argv as text")
    try:
        argv = tuple(shlex.split(body))
    except ValueError as exc:
        raise ConfigError(
            f"{source}: the proxy command {body[:80]!r} does not split: {exc}",
            hint="quote it as a POSIX shell would; it is split into an argv, never run by a shell",
        ) from None
    if not argv:
        raise ConfigError(f"{source}: 'proxy-command:' needs a command", hint="write proxy-command:PROGRAM [ARGS...]")
    return argv


def parse_network_policy(text: str, *, source: str) -> NetworkPolicy:
    """The policy ``text`` spells in the ``SANDBOX_NETWORK`` grammar; ConfigError naming ``source``."""
    mode, colon, body = text.partition(":")
    if mode == "off" and not colon:
        return NetworkPolicy.off()
    if mode == "allow" and colon:
        if any(char.isspace() or not char.isprintable() for char in body):
            raise ConfigError(
                f"{source}: {text[:80]!r} contains a space or control character",
                hint="separate patterns with single commas and no spaces",
            )
        allow, deny = _split_patterns(body, source=source)
        return NetworkPolicy(
            mode="allow",
            allow=_patterns(allow, deny=False, source=source),
            deny=_patterns(deny, deny=True, source=source),
        )
    if mode == "proxy-command" and colon:
        return NetworkPolicy(mode="proxy-command", proxy_command=_proxy_argv(body, source=source))
    raise ConfigError(f"{source}: {text[:80]!r} is not a network policy", hint=f"write {_GRAMMAR}")


# ---------------------------------------------------------------------------------------------
# The settings-file form (and the JSON the launcher hands the proxy)
# ---------------------------------------------------------------------------------------------

_KEYS = frozenset({"mode", "allow", "deny", "proxy_command", "limits"})
_LIMIT_KEYS = ("max_connections", "max_bytes", "max_seconds", "idle_seconds", "max_refusals")


def _strings(value: object, key: str, *, source: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{source}: {key!r} must be a list of strings", hint=f'e.g. "{key}": ["pypi.org"]')
    return list(value)


def _limits(value: object, *, source: str) -> EgressLimits:
    if not isinstance(value, dict):
        raise ConfigError(f"{source}: 'limits' must be an object", hint=f"keys: {', '.join(_LIMIT_KEYS)}")
    unknown = sorted(set(value) - set(_LIMIT_KEYS))
    if unknown:
        raise ConfigError(f"{source}: unknown limit {unknown[0]!r}", hint=f"keys: {', '.join(_LIMIT_KEYS)}")
    values: dict[str, int | float] = {}
    for key, number in value.items():
        integral = key in ("max_connections", "max_bytes", "max_refusals")
        kinds: tuple[type, ...] = (int,) if integral else (int, float)
        if type(number) not in kinds:
            kind = "a whole number" if integral else "a number of seconds"
            raise ConfigError(f"{source}: limit {key!r} must be {kind}", hint=f'e.g. "{key}": 60')
        values[key] = number
    try:
        return EgressLimits(**values)  # type: ignore[arg-type]  # keys checked against _LIMIT_KEYS
    except ValueError as exc:
        raise ConfigError(
            f"{source}: {exc}", hint="choose a positive limit within the range the message gives"
        ) from None


def policy_from_settings(value: object, *, source: str) -> NetworkPolicy:
    """The policy a settings-file value (or :meth:`NetworkPolicy.to_json`'s dict) spells.

    ``{"mode": "allow", "allow": [...], "deny": [...], "limits": {...}}``; ``deny`` and
    ``limits`` are optional; ``{"mode": "proxy-command", "proxy_command": [ARGV...]}``;
    ``{"mode": "off"}``. A string is read in the ``SANDBOX_NETWORK`` grammar.
    """
    if isinstance(value, str):
        return parse_network_policy(value, source=source)
    if not isinstance(value, dict):
        raise ConfigError(f"{source}: the network policy must be an object or a string", hint=f"write {_GRAMMAR}")
    settings: Mapping[str, object] = value
    unknown = sorted(str(key) for key in set(settings) - _KEYS)
    if unknown:
        raise ConfigError(f"{source}: unknown network key {unknown[0]!r}", hint=f"keys: {', '.join(sorted(_KEYS))}")
    mode = settings.get("mode")
    if mode not in MODES:
        raise ConfigError(f"{source}: network mode {mode!r} is not one of {', '.join(MODES)}", hint=f"write {_GRAMMAR}")
    allow = _strings(settings.get("allow", []), "allow", source=source)
    deny = _strings(settings.get("deny", []), "deny", source=source)
    argv = _strings(settings.get("proxy_command", []), "proxy_command", source=source)
    limits = _limits(settings["limits"], source=source) if "limits" in settings else EgressLimits()
    for key, present in (("allow", allow), ("deny", deny), ("proxy_command", argv)):
        wanted = {"allow": "allow", "deny": "allow", "proxy_command": "proxy-command"}[key]
        if present and mode != wanted:
            raise ConfigError(f"{source}: {key!r} goes with mode {wanted!r}, not {mode!r}", hint=f"remove {key!r}")
    if mode == "allow" and not allow:
        raise ConfigError(f"{source}: mode 'allow' needs at least one allow pattern", hint='e.g. "allow": ["pypi.org"]')
    if mode == "proxy-command" and not argv:
        raise ConfigError(
            f"{source}: mode 'proxy-command' needs 'proxy_command'", hint='e.g. "proxy_command": ["tinyproxy", "-d"]'
        )
    for item in allow + deny:
        if item.startswith("!"):
            raise ConfigError(
                f"{source}: {item!r}: '!' belongs to the one-line form", hint="list it under 'deny' without the '!'"
            )
    if any(not arg or any(not char.isprintable() for char in arg) for arg in argv):
        raise ConfigError(
            f"{source}: the proxy command has an empty or unprintable argument", hint="write each argument as text"
        )
    return NetworkPolicy(
        mode=mode,  # type: ignore[arg-type]  # checked against MODES above
        allow=_patterns(allow, deny=False, source=source),
        deny=_patterns(deny, deny=True, source=source),
        proxy_command=tuple(argv),
        limits=limits,
    )
