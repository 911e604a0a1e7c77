"""Requests a session start sends the engine before the kernel is imported (``launch/early``).

The answers wait in an explicit cache (``engine/transport.EarlyAnswers``). A client handed
the cache reads an answer asked early in place of asking again, once, and only for the same
engine address and the same request; a client without it (the build, the contract suite,
the release) never reads one. A fake engine (a unix socket server) records every request.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from terminai_sandbox.engine.client import DockerApi
from terminai_sandbox.engine.transport import LAUNCH_ANSWERS, EarlyAnswers, distribution_path, image_path
from terminai_sandbox.errors import EngineError
from terminai_sandbox.launch import early
from terminai_sandbox.launch.early import image_request

DIGEST = "sha256:" + "a" * 64
OTHER = "sha256:" + "b" * 64
PINNED = f"127.0.0.1:5000/terminai/sandbox@{DIGEST}"


class _Engine:
    """Answers /_ping (as Docker ``version``) and image inspects (an Id naming the path); records paths."""

    def __init__(self, path: Path, version: str) -> None:
        self.version = version
        self.seen: list[str] = []
        self.server = socket.socket(socket.AF_UNIX)
        self.server.bind(str(path))
        self.server.listen(8)
        self.host = f"unix://{path}"
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn, contextlib.suppress(OSError):
                data = b""
                while b"\r\n\r\n" not in data and (more := conn.recv(65536)):
                    data += more
                path = data.split(b" ", 2)[1].decode()
                self.seen.append(path)
                if path == "/_ping":
                    head = f"HTTP/1.0 200 OK\r\nApi-Version: 1.41\r\nServer: Docker/{self.version} (linux)\r\n\r\n"
                    conn.sendall(head.encode() + b"OK")
                else:
                    body = json.dumps({"Id": f"{self.version} {path}", "Config": {"Labels": {}}}).encode()
                    conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + body)

    def wait_for(self, count: int) -> None:
        deadline = time.monotonic() + 5
        while len(self.seen) < count and time.monotonic() < deadline:
            time.sleep(0.005)
        assert len(self.seen) >= count, self.seen


@pytest.fixture()
def answers() -> Iterator[EarlyAnswers]:
    cache = EarlyAnswers()
    yield cache
    cache.forget()


@pytest.fixture()
def engines(tmp_path: Path) -> Iterator[tuple[_Engine, _Engine]]:
    first, second = _Engine(tmp_path / "one.sock", "20.10.24"), _Engine(tmp_path / "two.sock", "24.0.7")
    yield first, second
    LAUNCH_ANSWERS.forget()
    first.server.close()
    second.server.close()


def test_an_answer_asked_early_is_read_instead_of_asking_again(
    engines: tuple[_Engine, _Engine], answers: EarlyAnswers
) -> None:
    engine, _ = engines
    answers.ask(engine.host, ["/_ping", image_path(PINNED)])
    engine.wait_for(2)  # both answered before the client reads either
    api = DockerApi.connect({"DOCKER_HOST": engine.host}, answers=answers)
    found = api.inspect_image(PINNED)
    assert api.info.version == "20.10.24" and api.info.api_version == "1.41"
    assert found is not None and found["Id"] == f"20.10.24 {image_path(PINNED)}"
    assert engine.seen == ["/_ping", image_path(PINNED)]  # nothing asked twice
    assert not answers.pending()


def test_each_early_answer_is_read_once(engines: tuple[_Engine, _Engine], answers: EarlyAnswers) -> None:
    engine, _ = engines
    answers.ask(engine.host, ["/_ping", image_path(PINNED)])
    api = DockerApi.connect({"DOCKER_HOST": engine.host}, answers=answers)
    api.inspect_image(PINNED)
    again = api.inspect_image(PINNED)
    assert again is not None and again["Id"] == f"20.10.24 /v1.41{image_path(PINNED)}"  # asked anew
    assert engine.seen.count(image_path(PINNED)) == 1 and engine.seen.count(f"/v1.41{image_path(PINNED)}") == 1


def test_an_early_answer_is_never_read_for_another_image(
    engines: tuple[_Engine, _Engine], answers: EarlyAnswers
) -> None:
    engine, _ = engines
    other = PINNED.replace(DIGEST, OTHER)
    answers.ask(engine.host, ["/_ping", image_path(PINNED)])
    api = DockerApi.connect({"DOCKER_HOST": engine.host}, answers=answers)
    found = api.inspect_image(other)
    assert found is not None and found["Id"] == f"20.10.24 /v1.41{image_path(other)}"


def test_an_early_answer_is_never_read_for_another_engine(
    engines: tuple[_Engine, _Engine], answers: EarlyAnswers
) -> None:
    first, second = engines
    answers.ask(first.host, ["/_ping", image_path(PINNED)])
    first.wait_for(2)
    api = DockerApi.connect({"DOCKER_HOST": second.host}, answers=answers)
    found = api.inspect_image(PINNED)
    assert api.info.version == "24.0.7" and api.info.host == second.host
    assert found is not None and found["Id"] == f"24.0.7 /v1.41{image_path(PINNED)}"
    assert second.seen == ["/_ping", f"/v1.41{image_path(PINNED)}"]


def test_forgotten_answers_are_closed_and_asked_again(engines: tuple[_Engine, _Engine], answers: EarlyAnswers) -> None:
    engine, _ = engines
    answers.ask(engine.host, ["/_ping"])
    engine.wait_for(1)
    answers.forget()
    assert not answers.pending()
    DockerApi.connect({"DOCKER_HOST": engine.host}, answers=answers)
    assert engine.seen == ["/_ping", "/_ping"]


def test_only_unix_sockets_are_asked_early_and_a_missing_one_is_left_to_preflight(
    tmp_path: Path, answers: EarlyAnswers
) -> None:
    answers.ask("tcp://127.0.0.1:9", ["/_ping"])
    absent = f"unix://{tmp_path}/absent.sock"
    answers.ask(absent, ["/_ping"])
    assert not answers.pending()
    with pytest.raises(EngineError, match="not running"):
        DockerApi.connect({"DOCKER_HOST": absent}, answers=answers)


TAGGED = "127.0.0.1:5000/terminai/sandbox:0.1.0"


@pytest.mark.parametrize(
    ("args", "env", "path"),
    [
        (["--image", PINNED, "--", "true"], {}, image_path(PINNED)),
        ([f"--image={PINNED}"], {}, image_path(PINNED)),
        ([f"--image={TAGGED}@{DIGEST}"], {}, image_path(PINNED)),  # the tag is not inspected
        (["--image", TAGGED], {}, distribution_path(TAGGED)),  # a release tag: step 2 resolves it
        (["--image", "127.0.0.1:5000/terminai/sandbox:latest"], {}, None),  # floating: step 2 refuses first
        (["--image", "127.0.0.1:5000/terminai/sandbox:main"], {}, None),
        (["--image", "127.0.0.1:5000/terminai/sandbox"], {}, None),  # no tag is latest
        (["--image", "alpine:3.20"], {}, distribution_path("docker.io/library/alpine:3.20")),
        (["--", "--image", PINNED], {}, None),  # the session's command, not an option
        (["--image", "Not A Reference@" + DIGEST], {}, None),  # step 0 refuses it
        (["--image", PINNED], {"TERMINAI_SANDBOX_IMAGE": f"x.example/o@{OTHER}"}, image_path(f"x.example/o@{OTHER}")),
        (
            ["--image", PINNED],
            {"TERMINAI_SANDBOX_IMAGE": "x.example/other:1.0"},
            distribution_path("x.example/other:1.0"),
        ),
        (["--image", PINNED], {"TERMINAI_SANDBOX_IMAGE": ""}, None),  # the variable wins, and step 0 refuses it
        ([], {"GEMINI_SANDBOX_IMAGE": PINNED}, image_path(PINNED)),
        (["--image"], {}, None),
    ],
)
def test_the_image_request_asked_early_is_the_one_preflight_makes(
    args: list[str], env: dict[str, str], path: str | None, tmp_path: Path
) -> None:
    assert image_request(args, {**env, "DOCKER_CONFIG": str(tmp_path)}) == path  # no credentials anywhere


def test_a_release_tag_resolved_early_is_read_by_step_2(
    engines: tuple[_Engine, _Engine], answers: EarlyAnswers
) -> None:
    engine, _ = engines
    answer = distribution_path(TAGGED)
    answers.ask(engine.host, [answer])
    engine.wait_for(1)
    api = DockerApi.connect({"DOCKER_HOST": engine.host}, answers=answers)
    status, body = api._get(answer)
    assert status == 200 and body["Id"] == f"20.10.24 {answer}"  # the early answer, read in place
    status, body = api._get(answer, {"X-Registry-Auth": "e30="})  # with credentials: asked anew
    assert body["Id"] == f"20.10.24 /v1.41{answer}"
    assert engine.seen == [answer, "/_ping", f"/v1.41{answer}"]


@pytest.mark.parametrize(
    ("args", "env", "asked"),
    [
        ([], {}, True),  # the settings file or the default decide: dockerd may be the engine
        ([], {"TERMINAI_SANDBOX": "docker"}, True),
        ([], {"TERMINAI_SANDBOX": "true"}, True),
        ([], {"TERMINAI_SANDBOX": "podman"}, False),
        ([], {"TERMINAI_SANDBOX": "false"}, False),  # switched off: step 0 refuses
        ([], {"GEMINI_SANDBOX": "podman"}, False),
        (["--engine", "podman"], {}, False),
        (["--engine=podman"], {}, False),
        (["--engine", "podman"], {"TERMINAI_SANDBOX": "docker"}, True),  # the variable wins
        (["--", "--engine", "podman"], {}, True),  # the session's command
    ],
)
def test_dockerd_is_not_asked_when_another_engine_was_chosen(
    engines: tuple[_Engine, _Engine], args: list[str], env: dict[str, str], asked: bool
) -> None:
    engine, _ = engines
    early.ask(["--image", PINNED, *args], {**env, "DOCKER_HOST": engine.host})
    assert set(LAUNCH_ANSWERS.pending()) == (
        {(engine.host, "/_ping"), (engine.host, image_path(PINNED))} if asked else set()
    )


@pytest.mark.parametrize(
    ("config", "asked"),
    [
        (None, True),  # no Docker configuration: anonymous, as step 2 would ask
        ({}, True),
        ({"auths": {"other.example": {"auth": "dTpw"}}}, True),
        ({"credHelpers": {"other.example": "pass"}}, True),
        ({"auths": {"127.0.0.1:5000": {"auth": "dTpw"}}}, False),
        ({"auths": {"https://127.0.0.1:5000": {"auth": "dTpw"}}}, False),
        ({"credHelpers": {"127.0.0.1:5000": "pass"}}, False),
        ({"credsStore": "desktop"}, False),
        ("{ not json", False),  # cannot tell: step 2 decides
        ([], False),
    ],
)
def test_a_tag_is_not_asked_early_of_a_registry_with_credentials(tmp_path: Path, config: object, asked: bool) -> None:
    folder = tmp_path / "docker"
    folder.mkdir()
    if config is not None:
        (folder / "config.json").write_text(config if isinstance(config, str) else json.dumps(config))
    for env in ({"DOCKER_CONFIG": str(folder)}, {"HOME": str(tmp_path), "DOCKER_CONFIG": ""}):
        if "HOME" in env:
            folder.rename(tmp_path / ".docker")
        path = image_request(["--image", TAGGED], env)
        assert path == (distribution_path(TAGGED) if asked else None), env


def test_a_client_without_the_cache_never_reads_an_early_answer(
    engines: tuple[_Engine, _Engine], answers: EarlyAnswers
) -> None:
    # The build, the contract suite and the release connect without it: a guess a session
    # start made is never the answer to another command's question.
    engine, _ = engines
    answers.ask(engine.host, ["/_ping", image_path(PINNED)])
    engine.wait_for(2)
    api = DockerApi.connect({"DOCKER_HOST": engine.host})
    found = api.inspect_image(PINNED)
    assert found is not None and found["Id"] == f"20.10.24 /v1.41{image_path(PINNED)}"
    assert engine.seen == ["/_ping", image_path(PINNED), "/_ping", f"/v1.41{image_path(PINNED)}"]
    assert set(answers.pending()) == {(engine.host, "/_ping"), (engine.host, image_path(PINNED))}


def test_a_path_already_asked_is_not_sent_twice(engines: tuple[_Engine, _Engine], answers: EarlyAnswers) -> None:
    engine, _ = engines
    answers.ask(engine.host, ["/_ping"])
    answers.ask(engine.host, ["/_ping"])
    engine.wait_for(1)
    time.sleep(0.05)
    assert engine.seen == ["/_ping"] and answers.pending() == ((engine.host, "/_ping"),)
    assert answers.take(engine.host, "/_ping") is not None
    assert answers.take(engine.host, "/_ping") is None  # read once


def test_a_session_start_reads_its_early_ping_at_step_1_instead_of_asking_again(
    engines: tuple[_Engine, _Engine],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The whole console path: early.ask fills the launch's cache, preflight step 1 is handed
    # it; the launch is then refused at step 3 (the key is not one), before step 4's inspect.
    from terminai_sandbox import console

    engine, _ = engines
    key = tmp_path / "k.pub"
    key.write_text("not a key\n")
    for name, value in {
        "DOCKER_HOST": engine.host,
        "HOME": str(tmp_path),
        "TERMINAI_SANDBOX": "docker",
        "DOCKER_CONFIG": str(tmp_path),
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(sys, "argv", ["terminai-sandbox", "run", "--image", PINNED, "--key", str(key), "--", "true"])

    def leave(code: int) -> None:
        raise SystemExit(code)

    monkeypatch.setattr(os, "_exit", leave)
    with pytest.raises(SystemExit) as ended:
        console.main()
    assert ended.value.code != 0
    assert "preflight step 3" in capsys.readouterr().err
    assert engine.seen[0] == "/_ping" and "/_ping" not in engine.seen[1:]  # step 1 read the early answer
    assert not any(path.endswith("/_ping") for path in engine.seen if path != "/_ping")
    assert not LAUNCH_ANSWERS.pending()  # the unread inspect was closed when the launch ended
