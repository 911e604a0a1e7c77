"""The default deadlines are the documented ones, and the knobs that change them parse strictly.

No server and no waiting: the bounds themselves are proven against misbehaving servers in
``tests/integration/cli/test_deadlines.py``.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
from terminai_sandbox.common import deadlines
from terminai_sandbox.engine import client as engine
from terminai_sandbox.engine import podman as launch_engines
from terminai_sandbox.engine.client import DockerApi
from terminai_sandbox.errors import ConfigError, RegistryBadResponse
from terminai_sandbox.registry import RegistryClient, _first_cause, json_document

DOC = (Path(__file__).parents[3] / "docs" / "DEADLINES.md").read_text()


def _row(first_cell: str) -> list[str]:
    for line in DOC.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if cells and cells[0] == first_cell:
            return cells
    raise AssertionError(f"no row {first_cell!r} in docs/DEADLINES.md")


def test_the_registry_default_is_the_documented_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(deadlines.REGISTRY_VARIABLE, raising=False)
    assert RegistryClient("127.0.0.1:5000").timeout == deadlines.REGISTRY_SECONDS == 60
    assert deadlines.REGISTRY_INTERACTIVE_SECONDS == 30
    assert _row(f"`{deadlines.REGISTRY_VARIABLE}`")[2] == "30 or 60 (above)"
    assert _row("`sign`, `attest`")[3] == "60 s + 1 s per MiB of blob"
    assert _row("`push`")[3] == "60 s + 1 s per MiB of blob"
    assert _row("`verify`, `kube`")[3] == "30 s + 1 s per MiB of blob"
    assert _row("`preflight`, `run`")[3].startswith("30 s")
    assert _row("`release`")[3] == "60 s + 1 s per MiB of blob"
    assert deadlines.SECONDS_PER_MIB == 1 and deadlines.REGISTRY_CONNECT_SECONDS == 10
    assert deadlines.MAX_DOCUMENT == 16 << 20 and deadlines.MAX_BLOB == 512 << 20
    assert "16 MiB" in DOC and "512 MiB" in DOC and "10 s of it" in DOC


def test_the_registry_variable_sets_the_client_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(deadlines.REGISTRY_VARIABLE, "2.5")
    assert RegistryClient("127.0.0.1:5000").timeout == 2.5
    assert RegistryClient("127.0.0.1:5000", timeout=7).timeout == 7


def test_the_engine_defaults_are_the_documented_ones() -> None:
    connect = inspect.signature(DockerApi.connect).parameters
    assert connect["probe"].default == deadlines.ENGINE_PROBE_SECONDS == 5  # preflight and run
    assert connect["timeout"].default == deadlines.ENGINE_REQUEST_SECONDS == 120
    batch = inspect.signature(engine.connect).parameters
    assert batch["probe"].default == deadlines.ENGINE_BATCH_PROBE_SECONDS == 15  # build, contracts, release
    assert deadlines.ENGINE_STREAM_SECONDS == 3600
    assert _row("`engine status`")[1] == "5 s"
    assert _row("`preflight`, `run`")[1].startswith("5 s")
    assert _row("`build`")[1] == "15 s" and _row("`contracts`")[1] == "15 s"
    assert _row("`release`")[1:3] == ["15 s", "120 s; a pull or load 3600 s"]
    assert "podman: 60 s" in _row("`preflight`, `run`")[1]
    assert "deadlines.engine_probe_seconds(env, 60)" in inspect.getsource(launch_engines.PodmanEngine.connect)


def test_the_commands_a_person_waits_on_use_the_lower_bounds() -> None:
    from terminai_sandbox.cli import build_cmd, kube_cmd, supply_cmd
    from terminai_sandbox.launch import preflight

    def source(command: object) -> str:
        return inspect.getsource(command.callback)  # type: ignore[attr-defined]

    assert "engine_mod.connect(probe=deadlines.ENGINE_PROBE_SECONDS)" in source(build_cmd.engine_status)
    assert "_client(ref, insecure_registry, waiting=True)" in source(supply_cmd.verify_cmd)
    assert "waiting=True" not in source(supply_cmd.push_cmd) + source(supply_cmd.sign_cmd)
    assert "deadlines.REGISTRY_INTERACTIVE_SECONDS" in source(kube_cmd.kube_cmd)
    assert "registry_seconds(options.env, REGISTRY_INTERACTIVE_SECONDS)" in inspect.getsource(preflight)


@pytest.mark.parametrize(("raw", "seconds"), [("1", 1.0), ("0.25", 0.25), (" 30 ", 30.0), ("86400", 86400.0)])
def test_a_number_of_seconds_is_read(raw: str, seconds: float) -> None:
    assert deadlines.seconds_from({"X": raw}, "X", 9) == seconds


def test_unset_or_empty_is_the_default() -> None:
    assert deadlines.seconds_from({}, "X", 9) == 9
    assert deadlines.seconds_from({"X": ""}, "X", 9) == 9


@pytest.mark.parametrize(
    "raw", ["0", "-1", "abc", "1e3", "inf", "nan", "١٢", "２", "1.2.3", ".", "86401", "1_000", "0x10", " "]
)
def test_anything_else_is_refused(raw: str) -> None:
    with pytest.raises(ConfigError) as caught:
        deadlines.seconds_from({"X": raw}, "X", 9)
    assert caught.value.exit_code == 3
    assert caught.value.message.startswith("X=") and "unset it for 9 s" in caught.value.hint


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b"<!DOCTYPE html><html><body>sign in</body></html>", "an HTML page"),
        (b"  <html>", "an HTML page"),
        (b"", "an empty body"),
        (b'{"schemaVersion": 2', "not the JSON"),
        (b"[1, 2]", "wrong shape (an array, not an object)"),
        (b'"text"', "wrong shape (a string, not an object)"),
        (b"null", "wrong shape (null, not an object)"),
    ],
)
def test_an_answer_that_is_not_a_json_object_is_a_bad_response(body: bytes, words: str) -> None:
    with pytest.raises(RegistryBadResponse) as caught:
        json_document(body, "r.example/x:1 (manifest)")
    assert caught.value.exit_code == 9
    assert caught.value.message.startswith("r.example/x:1 (manifest) answered ") and words in caught.value.message
    assert caught.value.hint


def test_a_json_object_is_returned() -> None:
    assert json_document(b'{"token": "t"}', "token service") == {"token": "t"}


def test_the_reason_under_requests_wrapping_is_one_line() -> None:
    import requests
    from urllib3.exceptions import ProtocolError

    inner = ProtocolError("Connection broken: IncompleteRead(5 bytes read, 95 more expected)", ValueError("x"))
    assert _first_cause(requests.exceptions.ChunkedEncodingError(inner)) == (
        "Connection broken: IncompleteRead(5 bytes read, 95 more expected)"
    )


def test_every_registry_and_engine_error_has_a_hint() -> None:
    from terminai_sandbox import errors

    for cls in (
        errors.EngineError,
        errors.RegistryError,
        errors.RegistryNotFound,
        errors.RegistryUnauthorized,
        errors.RegistryUnreachable,
        errors.RegistryCorrupted,
        errors.RegistryBadResponse,
    ):
        assert re.search(r"\w", cls("x").hint), cls
