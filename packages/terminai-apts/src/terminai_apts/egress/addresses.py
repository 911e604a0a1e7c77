"""Which addresses the proxy refuses to connect to, whatever name led there.

A name on the allowlist may resolve anywhere (its owner controls its DNS, and DNS can be
rebound between two lookups), so the proxy judges the *address* it is about to connect to.
It refuses every special-purpose block of the IANA IPv4 and IPv6 registries that is not
globally reachable (loopback, private, shared/CGNAT, link-local, documentation,
benchmarking, multicast, reserved, unspecified, ULA, site-local), the cloud metadata
endpoints by name, and the transition forms that embed an IPv4 address (mapped,
6to4, Teredo; NAT64 is judged by the address it embeds). Anything Python's
``ipaddress`` does not call global, or calls reserved, is refused too (outside 2000::/3
most of IPv6 is reserved), so the table can only add refusals.

Only a pattern that names the address literally (``allow:10.0.0.5:8080``) lets the proxy
reach such an address; a name never does.
"""

from __future__ import annotations

import ipaddress

TYPE_CHECKING = False
if TYPE_CHECKING:
    _IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Named first, so a refusal says what the address is (the networks below hold them too).
METADATA = {
    ipaddress.ip_address("169.254.169.254"): "cloud metadata (AWS, GCP, Azure, OpenStack, Oracle)",
    ipaddress.ip_address("169.254.170.2"): "cloud metadata (AWS ECS task credentials)",
    ipaddress.ip_address("169.254.169.253"): "cloud DNS resolver (AWS)",
    ipaddress.ip_address("100.100.100.200"): "cloud metadata (Alibaba Cloud)",
    ipaddress.ip_address("192.0.0.192"): "cloud metadata (Oracle Cloud, legacy)",
    ipaddress.ip_address("fd00:ec2::254"): "cloud metadata (AWS, IPv6)",
    ipaddress.ip_address("fd00:ec2::23"): "cloud DNS resolver (AWS, IPv6)",
}

_V4 = (
    ("0.0.0.0/8", "'this network' (unspecified)"),
    ("10.0.0.0/8", "private (RFC 1918)"),
    ("100.64.0.0/10", "shared address space (carrier-grade NAT, RFC 6598)"),
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link-local"),
    ("172.16.0.0/12", "private (RFC 1918)"),
    ("192.0.0.0/24", "IETF protocol assignments"),
    ("192.0.2.0/24", "documentation (TEST-NET-1)"),
    ("192.88.99.0/24", "6to4 relay anycast (deprecated)"),
    ("192.168.0.0/16", "private (RFC 1918)"),
    ("198.18.0.0/15", "benchmarking"),
    ("198.51.100.0/24", "documentation (TEST-NET-2)"),
    ("203.0.113.0/24", "documentation (TEST-NET-3)"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved"),
)
_V6 = (
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("::ffff:0:0/96", "IPv4-mapped"),
    ("::/96", "IPv4-compatible (deprecated)"),
    ("64:ff9b:1::/48", "local-use NAT64"),
    ("100::/64", "discard-only"),
    ("2001::/23", "IETF protocol assignments (Teredo included)"),
    ("2001:db8::/32", "documentation"),
    ("2002::/16", "6to4"),
    ("3fff::/20", "documentation"),
    ("5f00::/16", "segment routing (SRv6) SIDs"),
    ("fc00::/7", "unique local (private)"),
    ("fe80::/10", "link-local"),
    ("fec0::/10", "site-local (deprecated)"),
    ("ff00::/8", "multicast"),
)
_REFUSED = tuple((ipaddress.ip_network(net), why) for net, why in _V4 + _V6)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def refusal(address: _IPAddress) -> str | None:
    """Why the proxy must not connect to ``address`` on a name's behalf, or None if it may."""
    if address in METADATA:
        return METADATA[address]
    if isinstance(address, ipaddress.IPv6Address) and address in _NAT64:
        embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        inner = refusal(embedded)
        return None if inner is None else f"NAT64 of {embedded}: {inner}"
    for network, why in _REFUSED:
        if address.version == network.version and address in network:
            return why
    if address.is_reserved:
        return "reserved (IETF)"
    if not address.is_global or address.is_private or address.is_multicast:
        return "not globally reachable"
    return None
