"""The registry client's progress callback over real HTTP: counts, retries, skipped blobs.

The server is a small distribution-API endpoint on loopback (``http.server``) that can fail
the first upload with a 500 after reading it, as a registry behind a flaky proxy does; the
client must send the whole body again, and the byte counts must never claim more than the
blob's size.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest
from terminai_sandbox.registry import BlobProgress, RegistryClient

DATA = os.urandom(200_000)
DIGEST = "sha256:" + hashlib.sha256(DATA).hexdigest()


class _Registry(BaseHTTPRequestHandler):
    fail_first_put: ClassVar[bool] = True
    bodies: ClassVar[list[bytes]] = []
    stored: ClassVar[set[str]] = set()

    def log_message(self, *args: object) -> None:  # quiet
        pass

    def _reply(self, code: int, headers: dict[str, str] | None = None) -> None:
        self.send_response(code)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_HEAD(self) -> None:
        self._reply(200 if self.path.rsplit("/", 1)[-1] in self.stored else 404)

    def do_POST(self) -> None:
        self._reply(202, {"Location": "/v2/t/s/blobs/uploads/1"})

    def do_PUT(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        type(self).bodies.append(body)
        if type(self).fail_first_put:
            type(self).fail_first_put = False
            self._reply(500)
            return
        digest = self.path.split("digest=", 1)[1]
        if "sha256:" + hashlib.sha256(body).hexdigest() != digest:
            self._reply(400)
            return
        self.stored.add(digest)
        self._reply(201)


@pytest.fixture()
def server() -> Iterator[str]:
    _Registry.fail_first_put = True
    _Registry.bodies = []
    _Registry.stored = set()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Registry)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_a_retried_upload_sends_the_whole_body_again_and_counts_honestly(server: str) -> None:
    events: list[BlobProgress] = []
    client = RegistryClient(server, retries=2)
    assert client.push_blob("t/s", DIGEST, DATA, on_progress=events.append) is True
    assert _Registry.bodies == [DATA, DATA]  # the 500 was answered after the body was read; resent whole
    assert events[-1] == BlobProgress(digest=DIGEST, done=len(DATA), total=len(DATA), state="sent")
    counts = [e.done for e in events if e.state == "sending"]
    assert counts and max(counts) == len(DATA) and all(0 < c <= len(DATA) for c in counts)
    assert counts.index(len(DATA)) < len(counts) - 1  # the count started again for the retry

    events.clear()
    assert client.push_blob("t/s", DIGEST, DATA, on_progress=events.append) is False
    assert events == [BlobProgress(digest=DIGEST, done=len(DATA), total=len(DATA), state="skipped")]


def test_without_a_callback_the_body_goes_as_bytes(server: str) -> None:
    client = RegistryClient(server, retries=2)
    assert client.push_blob("t/s", DIGEST, DATA) is True
    assert _Registry.bodies == [DATA, DATA]


def test_chunked_uploads_count_across_the_parts(server: str) -> None:
    events: list[BlobProgress] = []

    class _Chunked(_Registry):
        def do_PATCH(self) -> None:
            type(self).bodies.append(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            self._reply(202, {"Location": "/v2/t/s/blobs/uploads/1"})

        def do_PUT(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            digest = self.path.split("digest=", 1)[1]
            ok = "sha256:" + hashlib.sha256(b"".join(self.bodies)).hexdigest() == digest
            self._reply(201 if ok else 400)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Chunked)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        _Chunked.bodies = []
        client = RegistryClient(f"127.0.0.1:{httpd.server_address[1]}")
        assert client.push_blob("t/s", DIGEST, DATA, chunk_size=65536, on_progress=events.append) is True
    finally:
        httpd.shutdown()
        httpd.server_close()
    counts = [e.done for e in events if e.state == "sending"]
    assert counts == sorted(counts) and counts[-1] == len(DATA)
    assert {65536, 131072, 196608} <= set(counts)  # each part's end is counted from the blob's start
