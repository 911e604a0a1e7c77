"""Auth, retry and TLS rules of the registry client against a scripted loopback server."""

from __future__ import annotations

import base64
import json
import os
import stat
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from terminai_sandbox.common.registry_auth import Credentials, docker_config_credentials
from terminai_sandbox.errors import (
    RegistryBadResponse,
    RegistryError,
    RegistryNotFound,
    RegistryUnauthorized,
    RegistryUnreachable,
)
from terminai_sandbox.registry import RegistryClient
from terminai_sandbox.secret import Secret

MANIFEST = b'{"schemaVersion":2}'


class _State:
    failures_left = 0
    token_requests: list[str] = []  # noqa: RUF012 (test state)


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *_: object) -> None:
        pass

    def do_GET(self) -> None:
        port = self.server.server_address[1]
        if self.path.startswith("/token"):
            _State.token_requests.append(self.headers.get("Authorization", ""))
            if self.headers.get("Authorization") != "Basic " + base64.b64encode(b"alice:pw").decode():
                self.send_response(401)
                self.end_headers()
                return
            self._send(200, json.dumps({"token": "tok-123"}).encode(), "application/json")
            return
        if _State.failures_left > 0:
            _State.failures_left -= 1
            self._send(503, b"busy", "text/plain")
            return
        if self.headers.get("Authorization") != "Bearer tok-123":
            self.send_response(401)
            self.send_header(
                "WWW-Authenticate",
                f'Bearer realm="http://127.0.0.1:{port}/token",service="test",scope="repository:a/b:pull"',
            )
            self.end_headers()
            return
        if self.path.endswith("/manifests/missing"):
            self._send(404, b'{"errors":[{"code":"MANIFEST_UNKNOWN"}]}', "application/json")
            return
        if self.path.endswith("/manifests/forbidden"):
            self._send(403, b"{}", "application/json")
            return
        self._send(200, MANIFEST, "application/vnd.oci.image.manifest.v1+json")

    def _send(self, code: int, body: bytes, kind: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture()
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    _State.failures_left = 0
    _State.token_requests = []
    try:
        yield f"127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_bearer_challenge_with_basic_credentials_and_clear_errors(server: str) -> None:
    client = RegistryClient(server, credentials=Credentials(username="alice", password=Secret("pw")), retries=0)
    body, _, digest = client.get_manifest("a/b", "latest")
    assert body == MANIFEST and digest.startswith("sha256:")
    # each failure has its own type (callers branch on it, never on the text); all are RegistryError
    with pytest.raises(RegistryNotFound, match="manifest unknown"):
        client.get_manifest("a/b", "missing")
    with pytest.raises(RegistryUnauthorized, match="403"):
        client.get_manifest("a/b", "forbidden")
    anonymous = RegistryClient(server, retries=0)
    with pytest.raises(RegistryUnauthorized, match="token service refused"):
        anonymous.get_manifest("a/b", "latest")
    assert issubclass(RegistryNotFound, RegistryError) and issubclass(RegistryUnauthorized, RegistryError)


def test_a_5xx_left_after_the_retries_is_a_bad_response(server: str) -> None:
    _State.failures_left = 1
    client = RegistryClient(server, credentials=Credentials(username="alice", password=Secret("pw")), retries=0)
    with pytest.raises(RegistryBadResponse, match="HTTP 503") as caught:
        client.get_manifest("a/b", "latest")
    assert caught.value.exit_code == RegistryError.exit_code


def test_5xx_is_retried_then_succeeds(server: str) -> None:
    _State.failures_left = 2
    client = RegistryClient(server, credentials=Credentials(username="alice", password=Secret("pw")), retries=3)
    assert client.get_manifest("a/b", "latest")[0] == MANIFEST


def test_unreachable_and_tls_rules() -> None:
    with pytest.raises(RegistryUnreachable, match="unreachable"):
        RegistryClient("127.0.0.1:9", retries=1).get_manifest("a/b", "latest")
    assert RegistryClient("registry.example.com").base == "https://registry.example.com"
    assert RegistryClient("10.1.2.3:5000").base.startswith("https://")  # not loopback: TLS
    assert RegistryClient("10.1.2.3:5000", insecure=True).base.startswith("http://")


def test_credential_helper(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    helper = tmp_path / "bin" / "docker-credential-fake"
    helper.parent.mkdir()
    helper.write_text('#!/bin/sh\nread host\necho "{\\"Username\\":\\"bob\\",\\"Secret\\":\\"from-$host\\"}"\n')
    helper.chmod(helper.stat().st_mode | stat.S_IEXEC)
    (tmp_path / "config.json").write_text(json.dumps({"credHelpers": {"reg.example": "fake"}}))
    monkeypatch.setenv("PATH", f"{helper.parent}{os.pathsep}{os.environ['PATH']}")
    creds = docker_config_credentials("reg.example", {"DOCKER_CONFIG": str(tmp_path)})
    assert creds is not None and creds.username == "bob" and creds.password.reveal() == "from-reg.example"
    assert "from-reg" not in repr(creds)
