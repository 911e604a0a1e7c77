"""Run inside the lab's namespace: the proxy (Python API) with a resolver that rebinds.

Each lookup of ``rebind.test`` alternates: the public origin first, then a private one.
A proxy that looked the name up a second time (to connect by name after checking) would
reach the private origin every other time. Prints one JSON object: what each request
reached, and how many lookups the resolver answered.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import sys

from terminai_apts.egress.policy import parse_network_policy
from terminai_apts.egress.proxy import EgressProxy


class Rebinding:
    def __init__(self, public: str, private: str) -> None:
        self.answers = [ipaddress.ip_address(public), ipaddress.ip_address(private)]
        self.lookups = 0

    async def resolve(self, name: str) -> tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, ...]:
        answer = self.answers[self.lookups % 2]
        self.lookups += 1
        return (answer,)


async def main(public: str, private: str, count: int) -> None:
    resolver = Rebinding(public, private)
    proxy = EgressProxy(parse_network_policy("allow:rebind.test", source="test"), resolver=resolver)  # type: ignore[arg-type]
    port = await proxy.listen_tcp(0)
    reached = []
    for _ in range(count):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET http://rebind.test/r HTTP/1.1\r\nHost: rebind.test\r\n\r\n")
        answer = await reader.read()
        writer.close()
        reached.append(
            answer.split(b"\r\n\r\n", 1)[-1].decode() if answer.startswith(b"HTTP/1.1 200") else answer[:12].decode()
        )
    await proxy.close()
    print(json.dumps({"reached": reached, "lookups": resolver.lookups}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
