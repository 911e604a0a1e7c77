"""The address classes the proxy refuses, against Python's ipaddress and the IANA blocks by example."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from terminai_apts.egress.addresses import refusal


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("127.0.0.1", "loopback"),
        ("127.255.255.254", "loopback"),
        ("10.1.2.3", "private"),
        ("172.31.0.1", "private"),
        ("192.168.1.1", "private"),
        ("100.64.0.1", "shared address space"),
        ("100.100.100.200", "Alibaba"),
        ("169.254.169.254", "cloud metadata"),
        ("169.254.170.2", "ECS"),
        ("169.254.1.1", "link-local"),
        ("0.0.0.0", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("255.255.255.255", "reserved"),
        ("192.0.2.1", "documentation"),
        ("198.18.0.1", "benchmarking"),
        ("::", "unspecified"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "IPv4-mapped"),
        ("::ffff:8.8.8.8", "IPv4-mapped"),
        ("64:ff9b::7f00:1", "NAT64 of 127.0.0.1: loopback"),
        ("64:ff9b::a9fe:a9fe", "NAT64 of 169.254.169.254: cloud metadata"),
        ("2002:7f00:1::1", "6to4"),
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"),
        ("2001:db8::1", "documentation"),
        ("fd00:ec2::254", "cloud metadata (AWS, IPv6)"),
        ("fc00::1", "unique local"),
        ("fe80::1", "link-local"),
        ("fec0::1", "site-local"),
        ("ff02::1", "multicast"),
    ],
)
def test_refused(address: str, why: str) -> None:
    reason = refusal(ipaddress.ip_address(address))
    assert reason is not None and why in reason, reason


@pytest.mark.parametrize("address", ["45.0.2.1", "8.8.8.8", "1.1.1.1", "2a00:1450:4001:80b::200e", "64:ff9b::808:808"])
def test_global_addresses_pass(address: str) -> None:
    assert refusal(ipaddress.ip_address(address)) is None


@settings(max_examples=2000, deadline=None)
@given(address=st.ip_addresses())
def test_nothing_python_calls_non_global_passes(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> None:
    if refusal(address) is None:
        if address in ipaddress.ip_network("64:ff9b::/96"):  # NAT64: judged by the IPv4 address it embeds
            address = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        assert address.is_global
        assert not (address.is_private or address.is_loopback or address.is_link_local or address.is_multicast)
        assert not address.is_reserved and not address.is_unspecified
