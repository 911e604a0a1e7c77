"""The network policy grammar and its decisions, against an oracle written another way.

The oracle matches names label by label (lists, never string suffixes) and ports from the
documented rule (no port: 80 and 443 to allow, every port to deny); hypothesis draws the
patterns and the names asked for, including the near misses an attacker would try.
"""

from __future__ import annotations

import ipaddress
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from terminai_apts.egress.errors import ConfigError
from terminai_apts.egress.policy import (
    EgressLimits,
    HostPattern,
    NetworkPolicy,
    Verdict,
    parse_network_policy,
    policy_from_settings,
)

SOURCE = "SANDBOX_NETWORK"


def parse(text: str) -> NetworkPolicy:
    return parse_network_policy(text, source=SOURCE)


# --- the grammar, by example --------------------------------------------------------------


def test_off_is_the_one_word_and_equals_the_constructor() -> None:
    assert parse("off") == NetworkPolicy.off()
    assert NetworkPolicy.off().mode == "off"
    assert NetworkPolicy.off().decide("pypi.org", 443) == Verdict(
        allowed=False, reason="network mode is off: the proxy allows nothing"
    )


def test_allow_reads_every_pattern_form() -> None:
    policy = parse(
        "allow:PyPI.org,*.githubusercontent.com:443,10.1.2.3:8080,[2001:DB8::1]:443,2001:db8::2,!bad.pypi.org"
    )
    assert policy.allow == (
        HostPattern(host="pypi.org"),
        HostPattern(host="*.githubusercontent.com", port=443),
        HostPattern(host="10.1.2.3", port=8080),
        HostPattern(host="2001:db8::1", port=443),
        HostPattern(host="2001:db8::2"),
    )
    assert policy.deny == (HostPattern(host="bad.pypi.org"),)
    assert policy.limits == EgressLimits()


def test_a_unicode_name_in_a_pattern_becomes_its_a_label() -> None:
    policy = parse("allow:Bücher.example")
    assert policy.allow == (HostPattern(host="xn--bcher-kva.example"),)
    assert policy.decide("xn--bcher-kva.example", 443).allowed
    # a client sends A-labels; the Unicode spelling on the wire is refused, not mapped
    assert not policy.decide("bücher.example", 443).allowed


def test_proxy_command_is_split_like_a_shell_and_never_run_by_one() -> None:
    policy = parse("proxy-command:tinyproxy -d -c '/etc/my proxy.conf' ;rm")
    assert policy.proxy_command == ("tinyproxy", "-d", "-c", "/etc/my proxy.conf", ";rm")
    assert parse(policy.to_spec()) == policy
    assert not policy.decide("pypi.org", 443).allowed


MALFORMED = [
    "",
    "of",
    "OFF",
    "off:",
    "allow",
    "allow:",
    "allow:*",
    "allow:*.",
    "allow:**.example.org",
    "allow:a.*.example.org",
    "allow:*example.org",
    "allow:example.*",
    "allow:pypi.org,",
    "allow:,pypi.org",
    "allow:pypi.org,,x.org",
    "allow:pypi.org, x.org",
    "allow: pypi.org",
    "allow:pypi.org\t",
    "allow:pypi\x00.org",
    "allow:pypi.org\n",
    "allow:pypi.org:0",
    "allow:pypi.org:65536",
    "allow:pypi.org:-1",
    "allow:pypi.org:+443",
    "allow:pypi.org:0443",
    "allow:pypi.org:",
    "allow:pypi.org:https",
    "allow:pypi.org:४४३",  # Devanagari digits: str.isdigit says yes, a port says no
    "allow:pypi.org:443:443",
    "allow:[::1",
    "allow:[::1]x",
    "allow:[10.0.0.1]:80",
    "allow:[pypi.org]:443",
    "allow:fe80::1%eth0",
    "allow:[fe80::1%25eth0]:443",
    "allow:pypi..org",
    "allow:.pypi.org",
    "allow:pypi.org.",
    "allow:-pypi.org",
    "allow:pypi-.org",
    "allow:py_pi.org",
    "allow:ab--cd.org",
    "allow:xn--.org",
    "allow:xn--abc-.org",
    "allow:xn--zz.org",
    "allow:" + "a" * 64 + ".org",
    "allow:" + ".".join(["abcdefgh"] * 30) + ".org",
    "allow:127.1",
    "allow:2130706433",
    "allow:0x7f.1",
    "allow:example.123",
    "allow:010.0.0.1",
    "allow:!pypi.org",
    "allow:pypi.org,pypi.org",
    "allow:pypi.org,allow:x.org",
    "allow:pypi.org,off",
    "allow:pypi.org,proxy-command:x",
    "off,allow:pypi.org",
    "proxy-command:",
    "proxy-command:   ",
    "proxy-command:'unclosed",
    "proxy-command:a\x00b",
    "proxy-command:a\x1bb",
    "allow:\u200bpypi.org",
    "allow:pypi.org\u3002",
]


@pytest.mark.parametrize("text", MALFORMED)
def test_every_malformed_policy_is_a_config_error_naming_its_source(text: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse(text)
    assert caught.value.message.startswith(SOURCE + ": "), caught.value.message
    assert caught.value.hint and caught.value.hint != ConfigError.default_hint
    assert caught.value.exit_code == 3
    assert "\n" not in caught.value.message


# --- the settings form and the JSON -------------------------------------------------------


def test_the_settings_form_reads_lists_and_limits() -> None:
    policy = policy_from_settings(
        {
            "mode": "allow",
            "allow": ["pypi.org", "files.pythonhosted.org:443"],
            "deny": ["evil.pypi.org"],
            "limits": {"max_connections": 4, "max_bytes": 1000, "max_seconds": 5, "idle_seconds": 1.5},
        },
        source="settings.json network",
    )
    assert policy == parse("allow:pypi.org,files.pythonhosted.org:443,!evil.pypi.org").__class__(
        mode="allow",
        allow=(HostPattern(host="pypi.org"), HostPattern(host="files.pythonhosted.org", port=443)),
        deny=(HostPattern(host="evil.pypi.org"),),
        limits=EgressLimits(max_connections=4, max_bytes=1000, max_seconds=5, idle_seconds=1.5),
    )
    assert "at most 4 connections at once" in policy.describe()
    assert policy_from_settings("off", source="s") == NetworkPolicy.off()
    assert policy_from_settings({"mode": "off"}, source="s") == NetworkPolicy.off()
    assert policy_from_settings({"mode": "proxy-command", "proxy_command": ["p", "-x"]}, source="s").proxy_command == (
        "p",
        "-x",
    )


BAD_SETTINGS: list[object] = [
    None,
    [],
    42,
    {},
    {"mode": "ALLOW", "allow": ["a.org"]},
    {"mode": "allow"},
    {"mode": "allow", "allow": []},
    {"mode": "allow", "allow": "a.org"},
    {"mode": "allow", "allow": [1]},
    {"mode": "allow", "allow": ["!a.org"]},
    {"mode": "allow", "allow": ["a.org"], "deny": ["!b.org"]},
    {"mode": "allow", "allow": ["a.org"], "proxy_command": ["x"]},
    {"mode": "allow", "allow": ["a.org"], "extra": 1},
    {"mode": "off", "allow": ["a.org"]},
    {"mode": "off", "deny": ["a.org"]},
    {"mode": "proxy-command"},
    {"mode": "proxy-command", "proxy_command": "tinyproxy -d"},
    {"mode": "proxy-command", "proxy_command": [""]},
    {"mode": "proxy-command", "proxy_command": ["a\x00"]},
    {"mode": "allow", "allow": ["a.org"], "limits": []},
    {"mode": "allow", "allow": ["a.org"], "limits": {"max_conns": 1}},
    {"mode": "allow", "allow": ["a.org"], "limits": {"max_connections": 0}},
    {"mode": "allow", "allow": ["a.org"], "limits": {"max_connections": True}},
    {"mode": "allow", "allow": ["a.org"], "limits": {"max_connections": 1.0}},
    {"mode": "allow", "allow": ["a.org"], "limits": {"max_connections": 10**9}},
    {"mode": "allow", "allow": ["a.org"], "limits": {"max_bytes": -1}},
    {"mode": "allow", "allow": ["a.org"], "limits": {"max_seconds": 0}},
    {"mode": "allow", "allow": ["a.org"], "limits": {"max_seconds": float("inf")}},
    {"mode": "allow", "allow": ["a.org"], "limits": {"idle_seconds": float("nan")}},
    {"mode": "allow", "allow": ["a.org"], "limits": {"idle_seconds": "60"}},
]


@pytest.mark.parametrize("value", BAD_SETTINGS, ids=lambda v: json.dumps(v, default=str)[:60])
def test_every_malformed_settings_value_is_a_config_error(value: object) -> None:
    with pytest.raises(ConfigError) as caught:
        policy_from_settings(value, source="settings.json network")
    assert caught.value.message.startswith("settings.json network: ")
    assert caught.value.hint


def test_from_json_reads_only_what_to_json_writes() -> None:
    policy = parse("allow:a.org,!b.a.org")
    text = json.dumps(policy.to_json())
    assert NetworkPolicy.from_json(json.loads(text)) == policy
    with pytest.raises(ConfigError, match="the egress policy JSON"):
        NetworkPolicy.from_json({"mode": "allow", "allow": ["a.org"], "limits": {"max_bytes": "1"}})


def test_the_records_are_frozen_and_canonical() -> None:
    pattern = HostPattern(host="pypi.org", port=443)
    with pytest.raises(AttributeError):
        pattern.port = 80  # type: ignore[misc]
    with pytest.raises(ValueError, match="not canonical"):
        HostPattern(host="PyPI.org")
    with pytest.raises(ValueError, match="not canonical"):
        HostPattern(host="[::1]")
    with pytest.raises(ValueError, match="outside"):
        HostPattern(host="pypi.org", port=0)
    with pytest.raises(ValueError):
        NetworkPolicy(mode="allow")
    with pytest.raises(ValueError):
        NetworkPolicy(mode="off", deny=(pattern,))
    with pytest.raises(ValueError):
        EgressLimits(max_seconds=-1)


# --- decisions, by example ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "port", "allowed"),
    [
        ("allowed.test", 443, True),
        ("allowed.test", 80, True),
        ("ALLOWED.TEST", 443, True),
        ("allowed.test", 8443, False),
        ("allowed.test.", 443, False),
        ("allowed.test.evil", 443, False),
        ("evilallowed.test", 443, False),
        ("sub.allowed.test", 443, False),
        ("allowed%2etest", 443, False),
        ("allowed.test\x00.evil", 443, False),
        ("allowed.test ", 443, False),
        ("a.suffix.test", 443, True),
        ("a.b.suffix.test", 443, True),
        ("suffix.test", 443, False),
        ("xsuffix.test", 443, False),
        ("denied.suffix.test", 443, False),
        ("denied.suffix.test", 9999, False),
        ("x.denied.suffix.test", 443, True),
        ("10.0.0.5", 443, True),
        ("010.0.0.5", 443, False),
        ("10.0.0.6", 443, False),
        ("[2001:db8::1]", 8080, True),
        ("2001:db8:0:0::1", 8080, True),
        ("[2001:db8::1]", 443, False),
        ("[10.0.0.5]", 443, False),
        ("::ffff:10.0.0.5", 443, False),  # a mapped address is not the literal the pattern names
        ("2130706433", 80, False),
        ("0x0a000005", 443, False),
        ("", 443, False),
        ("allowed.test", 0, False),
        ("allowed.test", 65536, False),
    ],
)
def test_decide(host: str, port: int, allowed: bool) -> None:
    policy = parse("allow:allowed.test,*.suffix.test,10.0.0.5,[2001:db8::1]:8080,!denied.suffix.test")
    verdict = policy.decide(host, port)
    assert verdict.allowed is allowed, verdict
    assert verdict.reason
    assert (verdict.pattern is not None) is allowed


def test_a_deny_pattern_without_a_port_denies_every_port() -> None:
    policy = parse("allow:*.example.org:8080,!bad.example.org")
    assert policy.decide("good.example.org", 8080).allowed
    assert policy.decide("bad.example.org", 8080) == Verdict(allowed=False, reason="denied by !bad.example.org")


def test_the_verdict_names_the_pattern_an_ip_literal_rule_needs() -> None:
    verdict = parse("allow:10.0.0.5:443").decide("10.0.0.5", 443)
    assert verdict.pattern is not None
    assert verdict.pattern.ip == ipaddress.ip_address("10.0.0.5")
    name = parse("allow:private.test").decide("private.test", 443)
    assert name.pattern is not None
    assert name.pattern.ip is None


# --- properties -------------------------------------------------------------------------------

_LETTERS = "abcdefghijklmnopqrstuvwxyz"
label = st.from_regex(r"\A[a-z0-9](?:[a-z0-9-]{0,8}[a-z0-9])?\Z").filter(lambda s: s[2:4] != "--")
top = st.text(_LETTERS, min_size=1, max_size=6)
name_labels = st.tuples(st.lists(label, min_size=0, max_size=3), top).map(lambda t: [*t[0], t[1]])
port = st.one_of(st.none(), st.integers(1, 65535), st.sampled_from([80, 443, 8080]))


@st.composite
def patterns(draw: st.DrawFn) -> tuple[str, list[str] | str, int | None]:
    """(kind, labels or address, port): a pattern as the oracle sees it."""
    kind = draw(st.sampled_from(["exact", "suffix", "ip"]))
    if kind == "ip":
        return kind, str(draw(st.ip_addresses())), draw(port)
    return kind, draw(name_labels), draw(port)


def spell(pattern: tuple[str, list[str] | str, int | None], *, shout: bool) -> str:
    kind, body, number = pattern
    if kind == "ip":
        assert isinstance(body, str)
        host = f"[{body}]" if ":" in body and number is not None else body
    else:
        host = ("*." if kind == "suffix" else "") + ".".join(body)
    host = host.upper() if shout else host
    return host if number is None else f"{host}:{number}"


def oracle_matches(pattern: tuple[str, list[str] | str, int | None], host: str, port: int, *, deny: bool) -> bool:
    kind, body, number = pattern
    if number is None and not deny and port not in (80, 443):
        return False
    if number is not None and port != number:
        return False
    if kind == "ip":
        try:
            return ipaddress.ip_address(host.strip("[]")) == ipaddress.ip_address(body)
        except ValueError:
            return False
    asked = host.lower().split(".")
    assert isinstance(body, list)
    if kind == "exact":
        return asked == body
    return len(asked) > len(body) and asked[-len(body) :] == body


@st.composite
def policies(draw: st.DrawFn) -> tuple[list[tuple[str, list[str] | str, int | None]], list[bool]]:
    drawn = draw(st.lists(patterns(), min_size=1, max_size=6))
    denies = draw(st.lists(st.booleans(), min_size=len(drawn), max_size=len(drawn)))
    denies[draw(st.integers(0, len(drawn) - 1))] = False  # at least one allows
    return drawn, denies


@st.composite
def asked_hosts(draw: st.DrawFn, drawn: list[tuple[str, list[str] | str, int | None]]) -> str:
    """A host near the patterns: one of them, a subdomain, its parent, a lookalike, or random."""
    kind, body, _ = draw(st.sampled_from(drawn))
    if kind == "ip":
        assert isinstance(body, str)
        return draw(st.sampled_from([body, f"[{body}]" if ":" in body else body, str(draw(st.ip_addresses()))]))
    assert isinstance(body, list)
    base = ".".join(body)
    extra = draw(label)
    return draw(
        st.sampled_from(
            [base, f"{extra}.{base}", ".".join(body[1:]) or base, f"{extra}{base}", f"{base}.{extra}a", base.upper()]
        )
    )


@settings(max_examples=300, deadline=None)
@given(data=st.data(), drawn_policy=policies(), shout=st.booleans())
def test_decisions_agree_with_the_oracle(data: st.DataObject, drawn_policy: object, shout: bool) -> None:
    drawn, denies = drawn_policy  # type: ignore[misc]
    items = [("!" if deny else "") + spell(p, shout=shout) for p, deny in zip(drawn, denies, strict=True)]
    try:
        policy = parse("allow:" + ",".join(items))
    except ConfigError as exc:
        # the one refusal a well-formed draw can meet: the same pattern twice
        assert "listed twice" in exc.message
        return
    for _ in range(5):
        host = data.draw(asked_hosts(drawn))
        asked_port = data.draw(st.sampled_from([80, 443, 8080, 22, 65535]))
        denied = any(
            oracle_matches(p, host, asked_port, deny=True) for p, deny in zip(drawn, denies, strict=True) if deny
        )
        allowed = any(
            oracle_matches(p, host, asked_port, deny=False) for p, deny in zip(drawn, denies, strict=True) if not deny
        )
        assert policy.decide(host, asked_port).allowed is (allowed and not denied), (items, host, asked_port)


@settings(max_examples=300, deadline=None)
@given(
    drawn_policy=policies(),
    limits=st.builds(
        EgressLimits,
        max_connections=st.integers(1, 4096),
        max_bytes=st.integers(1, 1 << 50),
        max_seconds=st.floats(0.001, 86400),
        idle_seconds=st.floats(0.001, 86400),
    ),
)
def test_the_spec_and_the_json_round_trip(drawn_policy: object, limits: EgressLimits) -> None:
    drawn, denies = drawn_policy  # type: ignore[misc]
    items = [("!" if deny else "") + spell(p, shout=False) for p, deny in zip(drawn, denies, strict=True)]
    try:
        policy = parse("allow:" + ",".join(items))
    except ConfigError as exc:
        assert "listed twice" in exc.message
        return
    assert parse(policy.to_spec()) == policy
    assert policy.describe().startswith(policy.to_spec() + " (")
    with_limits = NetworkPolicy(mode="allow", allow=policy.allow, deny=policy.deny, limits=limits)
    assert NetworkPolicy.from_json(json.loads(json.dumps(with_limits.to_json()))) == with_limits


@settings(max_examples=500, deadline=None)
@given(text=st.text(max_size=40))
def test_any_text_parses_or_is_a_config_error(text: str) -> None:
    for candidate in (text, "allow:" + text, "proxy-command:" + text):
        try:
            policy = parse(candidate)
        except ConfigError as exc:
            assert exc.message.startswith(SOURCE + ": ")
            continue
        assert parse(policy.to_spec()) == policy
        for pattern in policy.allow + policy.deny:
            assert pattern.host.isascii()
            assert pattern.host == pattern.host.lower()
