"""A session that loops on refused attempts fills no disk: past ``max_refusals`` its
refusals are counted into summary records, and every attempt is still in the sum."""

from __future__ import annotations

import json
from pathlib import Path

from terminai_apts.egress.policy import EgressLimits
from terminai_sandbox.launch import audit

from tests.unit.egress.test_attacks_on_egress_proxy import Lab, refusal

DENIED = b"CONNECT denied.example:443 HTTP/1.1\r\n\r\n"
WHY = "denied.example:443 is not in the allowlist"


def test_refusals_past_the_bound_are_summarised_not_written_one_by_one(tmp_path: Path) -> None:
    lab = Lab(tmp_path, limits=EgressLimits(max_refusals=5))
    try:
        for _ in range(23):
            assert lab.ask(DENIED) == refusal(403, WHY)  # the client still gets every answer
        assert lab.ask(b"GET / HTTP/1.1\r\n\r\n")[:12] == b"HTTP/1.1 400"
        lab.settled(5 + 3)  # five one by one, then a summary per five more (15 of the 19)
    finally:
        lab.close()  # the rest (4) are summarised when the proxy stops
    records = lab.records
    assert [r.reason for r in records[:5]] == [WHY] * 5
    summaries = records[5:]
    assert [r.count for r in summaries] == [5, 5, 5, 4]
    assert all(r.host == "" and not r.allowed and r.status == 0 for r in summaries)
    assert summaries[0].reason == (
        "5 more refused attempts, counted, not recorded one by one (beyond 5 this session; by status 403: 5)"
    )
    assert summaries[-1].reason.endswith("by status 400: 1, 403: 3)")
    assert 5 + sum(r.count for r in summaries) == 24
    assert audit.verify(lab.ledger) == 9
    lines = lab.ledger.read_text().splitlines()
    assert len(lines) == 9 and json.loads(lines[-1])["count"] == 4 and "count" not in json.loads(lines[0])


def test_allowed_connections_are_always_recorded(tmp_path: Path) -> None:
    lab = Lab(tmp_path, limits=EgressLimits(max_refusals=1))
    try:
        for _ in range(3):
            lab.ask(DENIED)
        port = lab.http.port
        answer = lab.ask(f"GET http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        assert answer.endswith(b"origin")
        lab.settled(4)  # the first refusal, a summary for each of the next two (bound 1), the request
    finally:
        lab.close()
    assert [(r.allowed, r.count, r.host) for r in lab.records] == [
        (False, 1, "denied.example"), (False, 1, ""), (False, 1, ""), (True, 1, "127.0.0.1"),
    ]  # fmt: skip
