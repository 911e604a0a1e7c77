"""A pull's progress stream is heard line by line while it arrives, whatever the read sizes."""

from __future__ import annotations

import json

import pytest
from terminai_sandbox.engine import client, transport
from terminai_sandbox.engine.client import PullProgress

EVENTS = [
    {"status": "Pulling from progress/pull", "id": "sha256:abc"},
    {"status": "Pulling fs layer", "id": "0a1b2c"},
    {"status": "Downloading", "progressDetail": {"current": 1024, "total": 4096}, "id": "0a1b2c"},
    {"status": "Downloading", "progressDetail": {"current": -5, "total": "x"}, "id": "0a1b2c"},
    {"status": "Pull complete", "progressDetail": {}, "id": "0a1b2c"},
    {"status": "Digest: sha256:" + "1" * 64},
]
HEAD = b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n"
BODY = b"".join(json.dumps(e).encode() + b"\r\n" for e in EVENTS)


@pytest.mark.parametrize("size", [1, 7, 64, 4096])
def test_lines_arrive_as_the_bytes_do(size: int) -> None:
    heard: list[bytes] = []
    feed = transport._LineFeed(heard.append)
    raw = HEAD + BODY
    seen_before_end = 0
    for start in range(0, len(raw), size):
        feed.feed(raw[start : start + size])
        if start + size < len(raw) - len(json.dumps(EVENTS[-1])) - 2:
            seen_before_end = len(heard)
    feed.end()
    assert [json.loads(line) for line in heard if line.strip()] == EVENTS
    if size < len(raw):
        assert seen_before_end >= 1  # heard during the transfer, not only at its end


@pytest.mark.parametrize(
    "header", [b"Transfer-Encoding: chunked", b"transfer-encoding:chunked", b"TRANSFER-ENCODING:  Chunked "]
)
def test_a_chunked_answer_is_heard_once_decoded(header: bytes) -> None:
    heard: list[bytes] = []
    feed = transport._LineFeed(heard.append)
    feed.feed(b"HTTP/1.1 200 OK\r\n" + header + b"\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
    feed.end()
    assert heard == []  # api_request feeds the decoded body instead


def test_pull_events_keep_only_well_formed_counts() -> None:
    got: list[PullProgress] = []
    hear = client._pull_events(got.append)
    for line in BODY.splitlines():
        hear(line)
    hear(b"not json")
    hear(json.dumps({"error": "boom", "id": "x", "status": "y"}).encode())
    assert [(p.layer, p.status, p.current, p.total) for p in got] == [
        ("sha256:abc", "Pulling from progress/pull", 0, 0),
        ("0a1b2c", "Pulling fs layer", 0, 0),
        ("0a1b2c", "Downloading", 1024, 4096),
        ("0a1b2c", "Downloading", 0, 0),
        ("0a1b2c", "Pull complete", 0, 0),
    ]
