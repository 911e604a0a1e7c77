"""Name resolution for the proxy: the system resolver, or an operator's hosts file for tests.

The session has no DNS of its own; the proxy resolves, once, and connects to the very
address it judged (no second lookup a rebinding server could answer differently).
A hosts file (``--hosts-file``, operator only) replaces the system resolver entirely:
a name it does not list does not resolve, so a test never sends a query anywhere.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from pathlib import Path

from terminai_apts.egress.errors import ConfigError
from terminai_apts.egress.inputs import read_input
from terminai_apts.egress.policy import PatternError, canonical_name, parse_ip

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    _IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

MAX_ADDRESSES = 16  # answers beyond these are ignored: enough for any real name, bounded for a hostile one


class ResolveError(Exception):
    """The name did not resolve (no such name, or the resolver failed)."""


class SystemResolver:
    """``getaddrinfo`` in the event loop's executor, TCP stream addresses only.

    The name is looked up absolute (with a trailing dot): the resolver's ``search`` list
    never applies, so with ``ndots:5`` an allowed ``pypi.org`` is never first asked as
    ``pypi.org.corp.example``, a name the policy did not judge. (glibc then does not
    match ``/etc/hosts`` entries, which are written without the dot: the proxy's names
    come from DNS.)
    """

    async def resolve(self, name: str) -> tuple[_IPAddress, ...]:
        loop = asyncio.get_running_loop()
        try:
            infos = await loop.getaddrinfo(name + ".", None, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
        except (socket.gaierror, UnicodeError) as exc:
            raise ResolveError(f"{name} does not resolve: {exc}") from None
        found: list[_IPAddress] = []
        for family, _, _, _, sockaddr in infos:
            if family not in (socket.AF_INET, socket.AF_INET6):
                continue
            address = parse_ip(str(sockaddr[0]))
            if address is not None and address not in found:
                found.append(address)
        if not found:
            raise ResolveError(f"{name} has no IPv4 or IPv6 address")
        return tuple(found[:MAX_ADDRESSES])


class HostsFileResolver:
    """Names from a hosts(5)-style file and nothing else."""

    def __init__(self, table: Mapping[str, tuple[_IPAddress, ...]]) -> None:
        self.table = dict(table)

    async def resolve(self, name: str) -> tuple[_IPAddress, ...]:
        found = self.table.get(name)
        if not found:
            raise ResolveError(f"{name} is not in the hosts file")
        return found


def read_hosts_file(path: Path) -> HostsFileResolver:
    """``ADDRESS NAME [NAME...]`` per line, ``#`` comments; a name may repeat for several addresses."""
    text = read_input(path, what="the hosts file")
    table: dict[str, list[_IPAddress]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        address = parse_ip(fields[0])
        if address is None or len(fields) < 2:
            raise ConfigError(f"{path} line {number}: expected ADDRESS NAME...", hint="write one address and its names")
        for raw in fields[1:]:
            try:
                name = canonical_name(raw, unicode_ok=False)
            except PatternError as exc:
                raise ConfigError(f"{path} line {number}: name {raw!r}: {exc}", hint="write IDNA names") from None
            table.setdefault(name, []).append(address)
    return HostsFileResolver({name: tuple(found) for name, found in table.items()})
