"""Step 2 on docker: dockerd resolves a tag (with the user's Docker credentials), against a real registry."""

from __future__ import annotations

import base64
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from terminai_sandbox.common.reference import ImageRef
from terminai_sandbox.engine.docker import DockerEngine
from terminai_sandbox.errors import RegistryError
from terminai_sandbox.registry import OCI_MANIFEST, RegistryClient, sha256_digest

from tests.fixtures.registry import RegistryServer

pytestmark = pytest.mark.integration

REPO = "terminai/tiny"
PASSWORD = "s3cret-pw"


def _push_tiny(registry: RegistryServer, tag: str) -> str:
    """A manifest with only a config blob: all the engine reads to resolve a tag."""
    client = RegistryClient(registry.host)
    config = b'{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}'
    client.push_blob(REPO, sha256_digest(config), config)
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": sha256_digest(config),
                "size": len(config),
            },
            "layers": [],
        }
    ).encode()
    return client.put_manifest(REPO, tag, manifest, OCI_MANIFEST)


class _BasicAuthProxy(BaseHTTPRequestHandler):
    """Basic auth in front of the real registry, the way a private registry asks dockerd to log in."""

    upstream = ""
    expected = "Basic " + base64.b64encode(f"alice:{PASSWORD}".encode()).decode()

    def log_message(self, *_: object) -> None:
        pass

    def do_GET(self) -> None:
        self._forward("GET")

    def do_HEAD(self) -> None:
        self._forward("HEAD")

    def _forward(self, method: str) -> None:
        if self.headers.get("Authorization") != self.expected:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="private"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        accept = ", ".join(self.headers.get_all("Accept") or ["*/*"])  # dockerd sends one header per type
        url = f"http://{self.upstream}{self.path}"
        request = urllib.request.Request(url, method=method, headers={"Accept": accept})
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                status, headers, body = answer.status, answer.headers, answer.read()
        except urllib.error.HTTPError as refused:
            status, headers, body = refused.code, refused.headers, refused.read()
        self.send_response(status)
        for name in ("Content-Type", "Docker-Content-Digest", "Docker-Distribution-Api-Version"):
            if headers.get(name):
                self.send_header(name, headers[name])
        self.send_header("Content-Length", headers.get("Content-Length") or str(len(body)))
        self.end_headers()
        if method != "HEAD":
            self.wfile.write(body)


@pytest.fixture()
def private(registry: RegistryServer) -> Iterator[str]:
    handler = type("Proxy", (_BasicAuthProxy,), {"upstream": registry.host})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _no_registry_client() -> RegistryClient:
    raise AssertionError("docker resolves tags through the engine, never with its own HTTP client")


def test_the_engine_resolves_a_tag_to_the_pushed_digest(registry: RegistryServer, tmp_path: Path) -> None:
    digest = _push_tiny(registry, "1.0.0")
    engine = DockerEngine.connect({"HOME": str(tmp_path)})
    assert (
        engine.resolve(ImageRef.parse(f"{registry.host}/{REPO}:1.0.0"), "1.0.0", _no_registry_client, seconds=30)
        == digest
    )
    with pytest.raises(RegistryError, match="manifest unknown"):
        engine.resolve(ImageRef.parse(f"{registry.host}/{REPO}:9.9.9"), "9.9.9", _no_registry_client, seconds=30)
    with pytest.raises(RegistryError, match=r"could not resolve 127\.0\.0\.1:1/"):
        engine.resolve(ImageRef.parse(f"127.0.0.1:1/{REPO}:1.0.0"), "1.0.0", _no_registry_client, seconds=30)


def test_a_private_registry_gets_the_docker_config_credentials(
    registry: RegistryServer, private: str, tmp_path: Path
) -> None:
    digest = _push_tiny(registry, "1.0.0")
    ref = ImageRef.parse(f"{private}/{REPO}:1.0.0")
    anonymous = DockerEngine.connect({"HOME": str(tmp_path)})
    with pytest.raises(RegistryError, match="refused") as refused:
        anonymous.resolve(ref, "1.0.0", _no_registry_client, seconds=30)
    assert "docker login" in refused.value.hint
    config = tmp_path / "docker"
    config.mkdir()
    auth = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    (config / "config.json").write_text(json.dumps({"auths": {private: {"auth": auth}}}))
    logged_in = DockerEngine.connect({"HOME": str(tmp_path), "DOCKER_CONFIG": str(config)})
    assert logged_in.resolve(ref, "1.0.0", _no_registry_client, seconds=30) == digest


def test_a_pull_from_a_private_registry_sends_the_docker_config_credentials(
    registry: RegistryServer, private: str, tmp_path: Path
) -> None:
    digest = _push_tiny(registry, "1.0.0")
    pinned = ImageRef.parse(f"{private}/{REPO}:1.0.0").with_digest(digest)
    anonymous = DockerEngine.connect({"HOME": str(tmp_path)})
    with pytest.raises(RegistryError, match="refused") as refused:  # exit 9, as at tag resolution
        anonymous.pull(pinned, insecure=False)
    assert "login" in refused.value.hint
    config = tmp_path / "docker"
    config.mkdir()
    auth = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    (config / "config.json").write_text(json.dumps({"auths": {private: {"auth": auth}}}))
    logged_in = DockerEngine.connect({"HOME": str(tmp_path), "DOCKER_CONFIG": str(config)})
    try:
        pulled = logged_in.pull(pinned, insecure=False)
        assert logged_in.inspect(pinned.pinned) == pulled
    finally:
        logged_in.api.remove_image(pinned.pinned, force=True)
