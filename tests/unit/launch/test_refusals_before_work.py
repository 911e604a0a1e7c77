"""A configuration refusal costs no engine and no registry request.

A launch from a working directory it refuses (every session mounts it read-write), or
with a key file it cannot read, is refused before preflight: an engine socket and a
registry that record every request they get show that neither was asked. The same launch
from a project folder asks both, so the recorders do hear a launch.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from terminai_sandbox.errors import ConfigError, SandboxError
from terminai_sandbox.launch import session
from terminai_sandbox.launch.session import LaunchRequest
from terminai_sandbox.signing.formats import keys

from tests.unit.launch.test_engines_and_trust import _FakeEngine

PING = b"HTTP/1.0 200 OK\r\nApi-Version: 1.41\r\nServer: Docker/20.10.24 (linux)\r\n\r\nOK"


class _RecordingRegistry(http.server.ThreadingHTTPServer):
    def __init__(self) -> None:
        self.paths: list[str] = []
        registry = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self) -> None:
                registry.paths.append(f"{self.command} {self.path}")
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_HEAD = _answer  # noqa: N815  (http.server's names)

            def log_message(self, *_: object) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)


@pytest.fixture()
def registry() -> Iterator[_RecordingRegistry]:
    server = _RecordingRegistry()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _launch(tmp_path: Path, registry: _RecordingRegistry, engine: Path, *, key: bool = True) -> None:
    pub = tmp_path / "cosign.pub"
    if key:
        pub.write_bytes(keys.public_pem(keys.generate()))
    # Pinned by digest: step 3 asks the registry itself for the signatures.
    digest = "sha256:" + "a" * 64
    request = LaunchRequest(image=f"127.0.0.1:{registry.server_address[1]}/demo/x@{digest}", key_path=pub)
    env = {
        "HOME": str(tmp_path / "home"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "DOCKER_HOST": f"unix://{engine}",
        "DOCKER_CONFIG": str(tmp_path / "docker-config"),
        "TERMINAI_SANDBOX": "docker",
        "PATH": "/usr/bin:/bin",
    }
    session.run(request, ["true"], limits=session.Limits(), env=env, say=lambda _line: None)


@pytest.mark.parametrize("cwd", ["/", "/proc/self", "/run"])
def test_a_refused_working_directory_asks_neither_the_engine_nor_the_registry(
    cwd: str, tmp_path: Path, registry: _RecordingRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = _FakeEngine(tmp_path / "engine.sock", {"/_ping": PING})
    try:
        monkeypatch.chdir(cwd)
        with pytest.raises(ConfigError, match=r"the working directory .* is refused: it "):
            _launch(tmp_path, registry, tmp_path / "engine.sock")
    finally:
        engine.server.close()
    assert engine.requests == []
    assert registry.paths == []
    assert not (tmp_path / "state" / "terminai-sandbox" / "verified.json").exists()


def test_a_key_file_that_cannot_be_read_asks_neither_the_engine_nor_the_registry(
    tmp_path: Path, registry: _RecordingRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    engine = _FakeEngine(tmp_path / "engine.sock", {"/_ping": PING})
    try:
        monkeypatch.chdir(project)
        with pytest.raises(ConfigError, match=r"^cannot read public key '.*cosign\.pub': No such file or directory$"):
            _launch(tmp_path, registry, tmp_path / "engine.sock", key=False)
    finally:
        engine.server.close()
    assert engine.requests == []
    assert registry.paths == []


def test_the_recorders_hear_a_launch_from_a_project_folder(
    tmp_path: Path, registry: _RecordingRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    engine = _FakeEngine(tmp_path / "engine.sock", {"/_ping": PING})
    try:
        monkeypatch.chdir(project)
        with pytest.raises(SandboxError) as caught:
            _launch(tmp_path, registry, tmp_path / "engine.sock")
    finally:
        engine.server.close()
    assert "working directory" not in caught.value.message
    assert engine.requests[:1] == ["/_ping"]
    assert registry.paths != []
