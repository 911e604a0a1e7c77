"""Slowloris and a flood against a proxy process whose policy allows 8 connections at once.

While eight clients drip a request head a byte at a time, every further connection is
answered 429 at once; a thousand of them leave the proxy's memory where it was; the
dripping clients are cut at the head deadline with 408; then a good request is served,
SIGTERM stops the proxy cleanly (exit 0, socket removed) and the shared ledger verifies.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import socket
import time

import pytest
from terminai_apts.egress.policy import EgressLimits, policy_from_settings
from terminai_sandbox.launch import audit

from tests.integration.egress.conftest import ALLOWED, Lab, start_proxy
from tests.integration.egress.test_attacks import _settled

HOLD = 8
FLOOD = 1000


def _rss_kib(pid: int) -> int:
    for line in open(f"/proc/{pid}/status").read().splitlines():  # noqa: SIM115
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _blocking_status(path: str, raw: bytes) -> int:
    with socket.socket(socket.AF_UNIX) as client:
        client.settimeout(20)
        client.connect(path)
        with contextlib.suppress(ConnectionError):
            client.sendall(raw)  # a 429 is sent without reading the request: it is read below all the same
        line = client.makefile("rb").readline()
    return int(line.split()[1]) if line.startswith(b"HTTP/1.1 ") else 0


async def _status_of(path: str, raw: bytes) -> int:
    return await asyncio.to_thread(_blocking_status, path, raw)


async def _drip(path: str, stop: asyncio.Event) -> int:
    """A slowloris client: a byte of header every 0.2 s until the proxy answers."""
    reader, writer = await asyncio.open_unix_connection(path)
    writer.write(b"GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n")
    answer = asyncio.create_task(reader.readline())
    try:
        while not answer.done() and not stop.is_set():
            try:
                writer.write(b"X")
                await writer.drain()
            except ConnectionError:
                break
            await asyncio.wait({answer}, timeout=0.2)
        line = await asyncio.wait_for(answer, 20)
        return int(line.split()[1]) if line.startswith(b"HTTP/1.1 ") else 0
    finally:
        writer.close()


@pytest.mark.slow
def test_slowloris_and_a_flood_stay_within_the_limits(lab: Lab) -> None:
    policy = policy_from_settings(
        {"mode": "allow", "allow": ["allowed.test"], "limits": {"max_connections": HOLD}}, source="test"
    )
    policy_path = lab.root / "flood-policy.json"
    policy_path.write_text(json.dumps(policy.to_json()))
    socket_path = lab.root / "sock" / "flood.sock"
    proxy = start_proxy(lab, policy=policy_path, socket=socket_path, port=3129)
    try:
        path = str(socket_path)
        good = b"GET http://allowed.test/good HTTP/1.1\r\nHost: allowed.test\r\n\r\n"

        async def scenario() -> tuple[list[int], list[int], int, int, float]:
            stop = asyncio.Event()
            drips = [asyncio.create_task(_drip(path, stop)) for _ in range(HOLD)]
            await asyncio.sleep(1.0)  # all eight are inside their request heads
            before = _rss_kib(proxy.pid)
            flood: list[int] = []
            for start in range(0, FLOOD, 50):
                flood += await asyncio.gather(*(_status_of(path, good) for _ in range(min(50, FLOOD - start))))
            after = _rss_kib(proxy.pid)
            # curl over TCP gets the 429 too (the proxy reads what it was sent before closing)
            curl = await asyncio.to_thread(
                lab.inside, "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-x", "http://127.0.0.1:3129",
                "http://allowed.test/",
            )  # fmt: skip
            assert curl.stdout == "429", curl
            started = time.monotonic()
            dripped = await asyncio.gather(*drips)
            cut_after = time.monotonic() - started
            stop.set()
            return flood, dripped, before, after, cut_after

        flood, dripped, before, after, _cut_after = asyncio.run(scenario())
        assert flood == [429] * FLOOD
        assert dripped == [408] * HOLD
        assert after - before < 16 * 1024, f"the proxy grew {after - before} KiB under the flood"
        assert asyncio.run(_status_of(path, good)) == 200

        proxy.send_signal(signal.SIGTERM)
        _, err = proxy.communicate(timeout=20)
        assert proxy.returncode == 0, err
        assert not socket_path.exists()
    finally:
        if proxy.poll() is None:  # a failed assertion above must not leave the proxy running
            proxy.kill()
            proxy.communicate()
    _settled(lab)
    records = lab.records()
    # past max_refusals refusals are counted into summary records: every one is in the sum,
    # and the ledger does not grow a line per attempt
    assert sum(1 for r in records if r["status"] == 429) == EgressLimits().max_refusals
    assert sum(int(r.get("count", 1)) for r in records if r["verdict"] == "refused") >= FLOOD + HOLD  # type: ignore[call-overload]
    assert len(records) < FLOOD
    assert audit.verify(lab.ledger) == len(records)
    assert (
        lab.curl("http://allowed.test/still").stdout == f"origin {ALLOWED}:80 /still"
    )  # the first proxy is unaffected
