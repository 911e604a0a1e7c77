"""The engine client against a hostile or broken engine: every answer is a specific error.

A fake engine (a unix-socket server on a temporary path, stopped by the fixture) answers
malformed HTTP, bad chunk framing, bodies that never end or are too large, a pull stream
whose error comes after "Pull complete", non-JSON documents with status 200, redirects and
answers that trickle in. The client must turn each into an :class:`EngineError` (exit 4)
or :class:`RegistryError` (exit 9) as ``docs/EXIT_CODES.md`` says: no other exception, no
wait longer than its deadline, no unbounded memory.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from terminai_sandbox.common import deadlines
from terminai_sandbox.engine import transport
from terminai_sandbox.engine.client import DockerApi, EngineInfo
from terminai_sandbox.engine.docker import DockerEngine
from terminai_sandbox.errors import EngineError, RegistryError, RegistryUnreachable

Answer = Callable[[socket.socket], None]
DIGEST = "sha256:" + "a" * 64
PINNED = f"127.0.0.1:5000/terminai/sandbox@{DIGEST}"
PING = b"HTTP/1.0 200 OK\r\nApi-Version: 1.41\r\nServer: Docker/20.10.24 (linux)\r\n\r\nOK"


def send(raw: bytes) -> Answer:
    return lambda conn: conn.sendall(raw)


class _HostileEngine:
    """Answers each request path with a scripted behaviour (bytes, or a function of the socket)."""

    def __init__(self, path: Path) -> None:
        self.server = socket.socket(socket.AF_UNIX)
        self.server.bind(str(path))
        self.server.listen(8)
        self.answers: dict[str, Answer] = {"/_ping": send(PING)}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self.answer, args=(conn,), daemon=True).start()

    def answer(self, conn: socket.socket) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data and (more := conn.recv(65536)):
                data += more
            path = data.split(b" ", 2)[1].decode() if data.count(b" ") >= 2 else ""
            behaviour = self.answers.get(path.split("?")[0], send(b'HTTP/1.0 404 Not Found\r\n\r\n{"message":"no"}'))
            with contextlib.suppress(OSError):  # the client gave up: that is what some tests want
                behaviour(conn)


@pytest.fixture()
def engine(tmp_path: Path) -> Iterator[_HostileEngine]:
    server = _HostileEngine(tmp_path / "e.sock")
    yield server
    server.stop.set()
    server.server.close()


def _client(server: _HostileEngine, timeout: float = 5) -> DockerApi:
    host = f"unix://{server.server.getsockname()}"
    return DockerApi(EngineInfo(host=host, name="docker", version="20.10", api_version="1.41"), timeout=timeout)


INSPECT = f"/v1.41/images/{PINNED}/json"


@pytest.mark.parametrize(
    "raw",
    [
        b"garbage without a head end",
        b"SSH-2.0-OpenSSH_9.2\r\n\r\n",
        b"HTTP/1.0 abc OK\r\n\r\n{}",
        b"",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
    ],
    ids=["no-head-end", "not-http", "bad-status", "closed", "bad-chunk-size"],
)
def test_malformed_http_is_an_engine_error(engine: _HostileEngine, raw: bytes) -> None:
    engine.answers[INSPECT] = send(raw)
    with pytest.raises(EngineError, match=r"stopped answering|not as the Docker API does") as caught:
        _client(engine).inspect_image(PINNED)
    assert caught.value.hint


@pytest.mark.parametrize(
    "raw",
    [
        b"HTTP/1.0 200 OK\r\n\r\n<html>proxy login</html>",
        b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nff\r\n{"Id": "sha256:1"',  # truncated chunk
        b"HTTP/1.0 200 OK\r\n\r\n[1, 2]",
        b'HTTP/1.0 200 OK\r\n\r\n{"Config": {}}',  # no Id
        b'HTTP/1.0 200 OK\r\n\r\n{"Id": "sha256:1", "Config": "labels"}',
        b'HTTP/1.0 200 OK\r\n\r\n{"Id": "sha256:1", "Config": {"Labels": ["a"]}}',
    ],
    ids=["html", "truncated-chunk", "json-list", "no-id", "config-not-object", "labels-not-object"],
)
def test_an_inspect_answer_that_is_not_an_image_document_is_an_engine_error(engine: _HostileEngine, raw: bytes) -> None:
    engine.answers[INSPECT] = send(raw)
    with pytest.raises(EngineError):
        DockerEngine(_client(engine), {}).inspect(PINNED)


def test_a_redirect_is_not_followed(engine: _HostileEngine) -> None:
    engine.answers[INSPECT] = send(b"HTTP/1.0 301 Moved\r\nLocation: http://evil.example/\r\n\r\n")
    with pytest.raises(EngineError, match=r"cannot look up .* \(301\)"):
        _client(engine).inspect_image(PINNED)
    engine.answers[f"/v1.41/distribution/{PINNED}/json"] = send(b"HTTP/1.0 302 Found\r\nLocation: /x\r\n\r\n")
    with pytest.raises(RegistryError, match=r"\(302\)"):
        _client(engine).distribution_digest(PINNED)


def test_a_pull_stream_with_an_error_after_pull_complete_fails(engine: _HostileEngine) -> None:
    lines = [
        {"status": "Pulling fs layer", "id": "0a1b"},
        {"status": "Pull complete", "id": "0a1b"},
        {"status": "Digest: " + DIGEST},
        {"error": "unexpected EOF", "errorDetail": {"message": "unexpected EOF"}},
    ]
    body = b"".join(json.dumps(line).encode() + b"\r\n" for line in lines)
    engine.answers["/v1.41/images/create"] = send(b"HTTP/1.0 200 OK\r\n\r\n" + body)
    engine.answers[INSPECT] = send(b'HTTP/1.0 200 OK\r\n\r\n{"Id": "sha256:1"}')
    with pytest.raises(RegistryError, match="unexpected EOF"):
        _client(engine).pull_by_digest("127.0.0.1:5000/terminai/sandbox", DIGEST)


def test_an_engine_that_keeps_the_connection_open_is_a_timeout_not_a_hang(engine: _HostileEngine) -> None:
    engine.answers[INSPECT] = lambda conn: (conn.sendall(b"HTTP/1.0 200 OK\r\n\r\n{"), time.sleep(3))  # type: ignore[func-returns-value]
    started = time.monotonic()
    with pytest.raises(EngineError, match="in time"):
        _client(engine, timeout=0.5).inspect_image(PINNED)
    assert time.monotonic() - started < 2


def _trickle(conn: socket.socket) -> None:
    conn.sendall(b'HTTP/1.0 200 OK\r\n\r\n{"Id": "sha256:1", "pad": "')
    for _ in range(30):  # one byte every 0.1 s: never idle for the client's 0.5 s
        conn.sendall(b"x")
        time.sleep(0.1)
    conn.sendall(b'"}')


def test_an_answer_that_trickles_in_is_cut_at_the_deadline(engine: _HostileEngine) -> None:
    engine.answers[INSPECT] = _trickle
    started = time.monotonic()
    with pytest.raises(EngineError, match="in time"):
        _client(engine, timeout=0.5).inspect_image(PINNED)
    assert time.monotonic() - started < 1.5  # the trickle takes 3 s


def test_without_a_deadline_the_timeout_bounds_the_whole_exchange(engine: _HostileEngine) -> None:
    """No request is unbounded: a caller that names only ``timeout`` gets it as the total deadline."""
    engine.answers[INSPECT] = _trickle
    started = time.monotonic()
    with pytest.raises(TimeoutError, match="no whole answer"):
        transport.api_request(f"unix://{engine.server.getsockname()}", INSPECT, timeout=0.5)
    assert time.monotonic() - started < 1.5  # the trickle takes 3 s


def test_with_a_longer_deadline_the_trickle_is_read_whole(engine: _HostileEngine) -> None:
    engine.answers[INSPECT] = _trickle
    status, _, body = transport.api_request(f"unix://{engine.server.getsockname()}", INSPECT, timeout=0.5, deadline=10)
    assert status == 200 and body.endswith(b'"}')


def _endless(conn: socket.socket) -> None:
    conn.sendall(b'HTTP/1.0 200 OK\r\n\r\n{"Id": "sha256:1", "pad": "')
    block = b"x" * 65536
    while True:
        conn.sendall(block)


def test_a_body_that_never_ends_is_refused_at_the_cap(engine: _HostileEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transport, "MAX_ANSWER", 4 << 20)
    engine.answers[INSPECT] = _endless
    with pytest.raises(EngineError, match="larger than"):
        _client(engine, timeout=30).inspect_image(PINNED)


def test_the_cap_is_far_above_any_real_answer() -> None:
    # A pull of a large image streams a few MB of progress lines; inspect documents are KB.
    assert transport.MAX_ANSWER >= 64 << 20


def test_an_api_version_that_is_not_a_number_is_an_engine_error(engine: _HostileEngine) -> None:
    host = f"unix://{engine.server.getsockname()}"
    for api in (b"abc", b"1", b"1.x"):
        engine.answers["/_ping"] = send(b"HTTP/1.0 200 OK\r\nApi-Version: %s\r\nServer: Docker/1 (linux)\r\n\r\n" % api)
        with pytest.raises(EngineError, match="API version"):
            DockerApi.connect({"DOCKER_HOST": host}, timeout=5)


def test_container_answers_without_an_id_or_status_code_are_engine_errors(engine: _HostileEngine) -> None:
    engine.answers["/v1.41/containers/create"] = send(b"HTTP/1.0 201 Created\r\n\r\n")
    with pytest.raises(EngineError):
        _client(engine).create_container("img")
    engine.answers["/v1.41/containers/c1/wait"] = send(b'HTTP/1.0 200 OK\r\n\r\n{"StatusCode": "zero"}')
    with pytest.raises(EngineError):
        _client(engine).wait_container("c1", timeout=5)


@pytest.mark.parametrize(("cap", "refused"), [(4 << 20, True), (64 << 20, False)])
def test_the_cap_is_what_refuses_a_large_answer(
    engine: _HostileEngine, monkeypatch: pytest.MonkeyPatch, cap: int, refused: bool
) -> None:
    monkeypatch.setattr(transport, "MAX_ANSWER", cap)
    pad = b"x" * (5 << 20)
    engine.answers[INSPECT] = send(b'HTTP/1.0 200 OK\r\n\r\n{"Id": "sha256:1", "pad": "' + pad + b'"}')
    if refused:
        with pytest.raises(EngineError, match="larger than 4 MiB"):
            _client(engine).inspect_image(PINNED)
    else:
        assert _client(engine).inspect_image(PINNED)["Id"] == "sha256:1"  # type: ignore[index]


def _waits_for_the_registry(conn: socket.socket) -> None:
    """What dockerd does while a registry trickles: the answer's head only after it, here never."""
    time.sleep(3)


def test_a_tag_lookup_the_registry_holds_up_ends_at_the_registry_deadline(engine: _HostileEngine) -> None:
    # The engine's own 120 s (here 30) is not the bound: dockerd answers once the registry has.
    engine.answers[f"/v1.41/distribution/{PINNED}/json"] = _waits_for_the_registry
    started = time.monotonic()
    with pytest.raises(RegistryUnreachable) as caught:
        _client(engine, timeout=30).distribution_digest(PINNED, seconds=0.5)
    assert time.monotonic() - started < 1.5
    assert caught.value.exit_code == 9
    assert "the registry gave it no whole answer within 0.5 s" in caught.value.message
    assert "TERMINAI_REGISTRY_TIMEOUT" in caught.value.hint


def test_a_tag_lookup_ends_at_the_command_deadline_when_it_is_nearer(engine: _HostileEngine) -> None:
    engine.answers[f"/v1.41/distribution/{PINNED}/json"] = _waits_for_the_registry
    deadlines.begin("preflight", 0.5)
    try:
        with pytest.raises(RegistryUnreachable, match=r"the preflight command's total deadline of 0\.5 s"):
            _client(engine, timeout=30).distribution_digest(PINNED, seconds=30)
    finally:
        deadlines.end()
