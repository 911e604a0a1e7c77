"""Unicode patterns are read as IDNA 2008 names, and A-labels are held to what they decode to.

The expected A-labels come from CPython's punycode codec applied to the U-label, the
encoding IDNA 2008 (and UTS 46 non-transitional processing, what browsers use) specifies.
"""

from __future__ import annotations

import pytest
from terminai_apts.egress.errors import ConfigError
from terminai_apts.egress.policy import NetworkPolicy, PatternError, canonical_name, parse_network_policy


def _a_label(u_label: str) -> str:
    return "xn--" + u_label.encode("punycode").decode("ascii")


@pytest.mark.parametrize("name", ["faß.de", "straße.test", "ς.gr", "bücher.de", "Bücher.de"])
def test_a_unicode_pattern_is_its_idna2008_name(name: str) -> None:
    first, rest = name.lower().split(".", 1)
    policy = parse_network_policy(f"allow:{name}", source="t")
    assert str(policy.allow[0]) == f"{_a_label(first)}.{rest}"


def test_a_deviation_character_is_not_mapped_to_its_idna2003_spelling() -> None:
    policy = parse_network_policy("allow:*.de,!faß.de", source="t")
    assert not policy.decide("xn--fa-hia.de", 443).allowed  # the IDNA 2008 name is denied
    assert policy.decide("fass.de", 443).allowed  # a different name, allowed by *.de
    assert policy.decide("fass.de", 443).reason == "allowed by *.de"


@pytest.mark.parametrize("joiner", ["\u200d", "\u200c"])
def test_a_joiner_in_a_pattern_is_refused(joiner: str) -> None:
    with pytest.raises(PatternError, match=r"control characters|A-label"):
        canonical_name(f"a{joiner}b.de", unicode_ok=True)


def test_a_label_the_idna_versions_read_differently_is_refused_with_a_hint() -> None:
    with pytest.raises(ConfigError, match=r"IDNA 2003 \(fi\) and IDNA 2008"):
        parse_network_policy("allow:\ufb01.de", source="t")  # the fi ligature: NFKC maps it in 2003


@pytest.mark.parametrize(
    "label",
    [
        "xn--ascii",  # C1 controls
        _a_label("b\u00dccher"),  # an upper-case U-label (Ü): IDNA 2008 has none
        _a_label("a\u0301b"),  # not NFC
        _a_label("a\u00a0b"),  # a no-break space (Zs)
        _a_label("a\u200db"),  # ZWJ (Cf)
    ],
)
def test_an_invalid_a_label_is_refused_in_patterns_and_requests(label: str) -> None:
    with pytest.raises(ConfigError, match="not a valid IDNA A-label"):
        parse_network_policy(f"allow:{label}.test", source="t")
    verdict = parse_network_policy("allow:*.test", source="t").decide(f"{label}.test", 443)
    assert not verdict.allowed and verdict.reason.endswith(f"label {label!r} is not a valid IDNA A-label")


def test_a_valid_a_label_is_accepted_as_written() -> None:
    policy = parse_network_policy("allow:xn--strae-oqa.test", source="t")
    assert policy.decide("XN--STRAE-OQA.test", 443).allowed
    assert NetworkPolicy.from_json(policy.to_json()) == policy
