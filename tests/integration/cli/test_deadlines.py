"""Registries and engines that trickle, stall, never stop or answer outside the protocol.

Each case starts a server on 127.0.0.1 (a registry) or on a unix socket (an engine, reached
through ``DOCKER_HOST=unix://...``) that misbehaves in one way, runs the installed console
script against it with a small deadline set through the documented environment variables
(``docs/DEADLINES.md``), and checks that it ends within that deadline plus start-up slack,
with the documented exit code, one ``error:`` line and its ``hint:``, no traceback and no
"unexpected failure". The slow servers also prove the deadline was waited for, so a case
cannot pass by failing early for another reason.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from terminai_sandbox.secret import Secret
from terminai_sandbox.signing.formats import keys

from tests.fixtures.hostile import ENDLESS, STALL, TRICKLE, Answer, HostileServer, always, http, serving
from tests.fixtures.oci import write_layout

CLI = str(Path(sys.executable).with_name("terminai-sandbox"))
REGISTRY_SECONDS = 1.5  # TERMINAI_REGISTRY_TIMEOUT in these tests
ENGINE_SECONDS = 1.0  # TERMINAI_ENGINE_TIMEOUT in these tests
SLACK = 6.0  # interpreter start-up and imports of the console script, on a busy 2-core machine
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
PASSWORD = "deadlines"  # a throwaway key made for these tests


@pytest.fixture(scope="module")
def place() -> Iterator[Path]:
    """A short directory (unix socket paths are limited to 108 bytes) with a key and a layout."""
    with tempfile.TemporaryDirectory(prefix="dl", dir="/tmp") as raw:
        root = Path(raw)
        key = keys.generate()
        (root / "cosign.pub").write_bytes(keys.public_pem(key))
        (root / "cosign.key").write_bytes(keys.encrypt_private(key, Secret(PASSWORD.encode())))
        write_layout(root / "layout", config=b'{"architecture":"amd64","os":"linux"}', layers=[b"layer" * 400])
        (root / "home").mkdir()
        yield root


def _env(place: Path, **extra: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("TERMINAI_", "GEMINI_", "SANDBOX_", "DOCKER_"))
    }
    home = place / "home"
    return {
        **env,
        "HOME": str(home),
        "DOCKER_CONFIG": str(home / ".docker"),  # no credentials: every request is anonymous
        "XDG_STATE_HOME": str(home / "state"),
        "XDG_CACHE_HOME": str(home / "cache"),
        "XDG_CONFIG_HOME": str(home / "config"),
        **extra,
    }


def _run(args: list[str], env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = subprocess.run([CLI, *args], capture_output=True, text=True, env=env, timeout=60, check=False)
    return done, time.monotonic() - started


def _one_error_with_hint(done: subprocess.CompletedProcess[str], code: int, words: str) -> str:
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr and "unexpected failure" not in done.stderr, done.stderr
    lines = done.stderr.splitlines()
    errors = [i for i, line in enumerate(lines) if line.startswith("error:")]
    assert len(errors) == 1, done.stderr
    assert errors[0] + 1 < len(lines) and lines[errors[0] + 1].startswith("  hint: "), done.stderr
    assert len(lines[errors[0] + 1]) > len("  hint: "), done.stderr
    assert words in lines[errors[0]], done.stderr
    return lines[errors[0]]


# -- registries ------------------------------------------------------------------------------


def _token_realm(body: bytes, content_type: str) -> Callable[[HostileServer], Callable[[str, str], Answer]]:
    """A registry asking for a bearer token at its own /token, which answers ``body``."""

    def make(server: HostileServer) -> Callable[[str, str], Answer]:
        def answer(method: str, path: str) -> Answer:
            if path.startswith("/token"):
                return Answer((http(200, body, headers={"Content-Type": content_type}),))
            challenge = f'Bearer realm="http://{server.host}/token",service="test"'
            return Answer((http(401, headers={"WWW-Authenticate": challenge}),))

        return answer

    return make


def _uploads(then: Callable[[str, str], Answer]) -> Callable[[HostileServer], Callable[[str, str], Answer]]:
    """A registry that has no blob and starts uploads properly; ``then`` answers the rest."""

    def make(server: HostileServer) -> Callable[[str, str], Answer]:
        def answer(method: str, path: str) -> Answer:
            if method == "HEAD":
                return Answer((http(404),))
            if method == "POST":
                return Answer((http(202, headers={"Location": "/v2/x/blobs/uploads/one"}),))
            return then(method, path)

        return answer

    return make


def _fixed(answer: Callable[[str, str], Answer]) -> Callable[[HostileServer], Callable[[str, str], Answer]]:
    return lambda server: answer


def _no_location(method: str, path: str) -> Answer:
    if method == "HEAD":
        return Answer((http(404),))
    return Answer((http(202),))  # the upload "starts", but nobody says where it continues


def _chunk_without_location(method: str, path: str) -> Answer:
    if method == "PATCH":
        return Answer((http(202),))
    return Answer((http(500),))


JSON = {"Content-Type": MANIFEST}
HTML = b"<!DOCTYPE html><html><head><title>Sign in</title></head><body>portal</body></html>"


@dataclass(frozen=True)
class Registry:
    name: str
    server: Callable[[HostileServer], Callable[[str, str], Answer]]
    words: str  # in the error line
    slow: bool = False  # the deadline itself ends it: it must have been waited for


REGISTRIES = {
    r.name: r
    for r in (
        Registry("trickled-head", _fixed(always(TRICKLE, http(200, b"{}", headers=JSON))), "no whole answer", True),
        Registry(
            "trickled-body",
            _fixed(always(http(200, headers=JSON, length=400), TRICKLE, b"{" + b" " * 399)),
            "no whole answer",
            True,
        ),
        # No Content-Length: the body ends when the connection closes, so a socket shut down at
        # the deadline would look like a whole (short) answer if the deadline were not checked.
        Registry(
            "trickled-body-until-close",
            _fixed(always(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", TRICKLE, b"{" + b" " * 400 + b"}")),
            "no whole answer",
            True,
        ),
        Registry("silent", _fixed(always(STALL)), "no whole answer", True),
        Registry(
            "endless-body",
            _fixed(always(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n", ENDLESS)),
            "larger than",
        ),
        Registry("html", _fixed(always(http(200, HTML, headers={"Content-Type": "text/html"}))), "an HTML page"),
        Registry("junk-json", _fixed(always(http(200, b'{"schemaVersion": 2,', headers=JSON))), "not the JSON"),
        Registry("wrong-shape", _fixed(always(http(200, b'["schemaVersion", 2]', headers=JSON))), "wrong shape"),
        Registry(
            "redirect-loop",
            _fixed(always(http(302, headers={"Location": "/v2/x/manifests/again"}), close=False)),
            "redirects in a loop",
        ),
        Registry("http-500", _fixed(always(http(500, b"internal error"))), "HTTP 500"),
        Registry("truncated", _fixed(always(http(200, b'{"schema', headers=JSON, length=4096))), "cut short"),
        Registry("token-html", _token_realm(HTML, "text/html"), "token service"),
        Registry("token-junk", _token_realm(b"{token:", "application/json"), "token service"),
        Registry("token-wrong-shape", _token_realm(b'"a-token"', "application/json"), "wrong shape"),
        Registry("token-without-token", _token_realm(b'{"expires_in": 60}', "application/json"), "without a token"),
        Registry("no-location", _fixed(_no_location), "no Location header"),
        Registry("upload-silent", _uploads(always(STALL)), "no whole answer", True),
        Registry("upload-trickled", _uploads(always(TRICKLE, http(201))), "no whole answer", True),
    )
}

# What each command meets first; every registry above is tried against the commands whose
# requests it can break (an upload server only means something to push).
READERS = [
    "trickled-head",
    "trickled-body",
    "trickled-body-until-close",
    "silent",
    "endless-body",
    "html",
    "junk-json",
    "wrong-shape",
    "redirect-loop",
    "http-500",
    "truncated",
    "token-html",
    "token-junk",
    "token-wrong-shape",
    "token-without-token",
]
PUSH = [
    "trickled-head",
    "trickled-body-until-close",
    "silent",
    "redirect-loop",
    "http-500",
    "truncated",
    "token-html",
    "token-junk",
    "no-location",
    "upload-silent",
    "upload-trickled",
]
ROWS = [
    *[("verify", name) for name in READERS],
    *[("kube", name) for name in ("trickled-head", "silent", "html", "junk-json", "token-html", "http-500")],
    *[("push", name) for name in PUSH],
    *[("sign", name) for name in ("trickled-head", "silent", "html", "token-junk", "http-500")],
]


def _args(command: str, place: Path, host: str) -> list[str]:
    if command == "push":
        return ["push", str(place / "layout"), f"{host}/x:1.0.0"]
    if command == "sign":
        return ["sign", f"{host}/x:1.0.0", "--key", str(place / "cosign.key")]
    return [command, f"{host}/x:1.0.0", "--key", str(place / "cosign.pub")]


@pytest.mark.parametrize(("command", "registry"), ROWS, ids=[f"{c}-{r}" for c, r in ROWS])
def test_a_registry_that_breaks_the_protocol_gets_a_bounded_typed_error(
    command: str, registry: str, place: Path
) -> None:
    row = REGISTRIES[registry]
    holder: list[HostileServer] = []

    def answer(method: str, path: str) -> Answer:  # the server's answers may name its own address
        return row.server(holder[0])(method, path)

    with serving(answer) as server:
        holder.append(server)
        done, seconds = _run(
            _args(command, place, server.host),
            _env(place, TERMINAI_REGISTRY_TIMEOUT=str(REGISTRY_SECONDS), COSIGN_PASSWORD=PASSWORD),
        )
        assert server.requests, "the command never asked the registry"
    _one_error_with_hint(done, 9, row.words)
    assert seconds < REGISTRY_SECONDS + SLACK, f"{seconds:.1f} s: {done.stderr}"
    if row.slow:
        assert seconds >= REGISTRY_SECONDS * 0.9, f"ended after {seconds:.1f} s, before the deadline"
    if command == "kube":
        assert done.stdout == ""  # kube's stdout is for kubectl: nothing on failure


def test_a_chunked_upload_without_location_is_refused(place: Path) -> None:
    with serving(_uploads(_chunk_without_location)(None)) as server:  # type: ignore[arg-type]
        done, _ = _run(
            ["push", str(place / "layout"), f"{server.host}/x:1.0.0", "--chunk-size", "1024"],
            _env(place, TERMINAI_REGISTRY_TIMEOUT=str(REGISTRY_SECONDS)),
        )
    line = _one_error_with_hint(done, 9, "no Location header")
    assert "a chunk of sha256:" in line


def test_a_trickling_registry_is_cut_at_the_deadline_not_at_the_per_read_timeout(place: Path) -> None:
    """Each byte arrives well within any per-read timeout; only a total deadline ends it."""
    with serving(always(TRICKLE, http(200, b"{}" + b" " * 200, headers=JSON))) as server:
        done, seconds = _run(_args("verify", place, server.host), _env(place, TERMINAI_REGISTRY_TIMEOUT="3"))
    _one_error_with_hint(done, 9, "no whole answer within 3 s")
    assert 2.7 <= seconds < 3 + SLACK


@pytest.mark.parametrize("value", ["abc", "-1", "0", "1e3", "٣", "nan", " "])
def test_a_malformed_registry_deadline_is_refused_before_any_request(value: str, place: Path) -> None:
    with serving(always(http(404))) as server:
        done, _ = _run(_args("verify", place, server.host), _env(place, TERMINAI_REGISTRY_TIMEOUT=value))
        assert server.requests == []
    _one_error_with_hint(done, 3, "TERMINAI_REGISTRY_TIMEOUT")


# -- engines ---------------------------------------------------------------------------------

PING = {"Api-Version": "1.45", "Server": "Docker/27.0 (linux)"}
ENGINES = {
    "silent": (always(STALL), "did not answer within", True),
    "trickled": (always(TRICKLE, http(200, b"OK", headers=PING)), "did not answer within", True),
    "html": (always(http(200, HTML, headers={"Content-Type": "text/html"})), "not as a Docker or Podman API", False),
    "not-http": (always(b"SSH-2.0-OpenSSH_9.2\r\n"), "not as a Docker or Podman API", False),
}
ENGINE_COMMANDS = {
    "engine-status": ["engine", "status"],
    "preflight": ["preflight", "--image", "127.0.0.1:9/x:1.0.0", "--key", "{key}"],
    "run": ["run", "--image", "127.0.0.1:9/x:1.0.0", "--key", "{key}", "--", "true"],
    "contracts": ["contracts", "127.0.0.1:9/x:1.0.0", "--output", "{place}/report"],
}
ENGINE_ROWS = [(command, engine) for command in ENGINE_COMMANDS for engine in ENGINES]


def _engine_args(command: str, place: Path) -> list[str]:
    return [a.format(key=place / "cosign.pub", place=place) for a in ENGINE_COMMANDS[command]]


@pytest.mark.parametrize(("command", "engine"), ENGINE_ROWS, ids=[f"{c}-{e}" for c, e in ENGINE_ROWS])
def test_an_engine_socket_that_breaks_the_protocol_gets_a_bounded_engine_error(
    command: str, engine: str, place: Path
) -> None:
    answer, words, slow = ENGINES[engine]
    sock = place / f"{command}-{engine}.sock"
    with serving(answer, unix_path=sock) as server:
        env = _env(place, DOCKER_HOST=f"unix://{sock}", TERMINAI_SANDBOX="docker")
        done, seconds = _run(_engine_args(command, place), {**env, "TERMINAI_ENGINE_TIMEOUT": str(ENGINE_SECONDS)})
        assert server.requests, "the command never asked the engine"
    _one_error_with_hint(done, 4, words)
    assert seconds < ENGINE_SECONDS + SLACK, f"{seconds:.1f} s: {done.stderr}"
    if slow:
        assert seconds >= ENGINE_SECONDS * 0.9, f"ended after {seconds:.1f} s, before the deadline"


@pytest.mark.slow
def test_engine_status_waits_the_documented_five_seconds_by_default(place: Path) -> None:
    sock = place / "default.sock"
    with serving(always(STALL), unix_path=sock):
        done, seconds = _run(["engine", "status"], _env(place, DOCKER_HOST=f"unix://{sock}"))
    _one_error_with_hint(done, 4, "did not answer within 5 s")
    assert 4.8 <= seconds < 5 + SLACK


@pytest.mark.parametrize("value", ["soon", "-5", "0", "١"])
def test_a_malformed_engine_deadline_is_refused(value: str, place: Path) -> None:
    sock = place / f"unused-{ord(value[0])}.sock"
    with serving(always(STALL), unix_path=sock) as server:
        done, _ = _run(["engine", "status"], _env(place, DOCKER_HOST=f"unix://{sock}", TERMINAI_ENGINE_TIMEOUT=value))
        assert server.requests == []
    _one_error_with_hint(done, 3, "TERMINAI_ENGINE_TIMEOUT")
