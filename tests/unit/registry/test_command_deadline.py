"""A command's total deadline caps the sum of its registry requests, not only each one.

The server here is slow but never stalls: every answer is whole, well inside the
per-request bound, after a pause. A command making many such requests (verify with its
signatures and attestations, a push of many blobs) would take their sum; under a command
deadline it ends at that deadline with the command's own error and hint. The console
scripts against a real registry behind a slow proxy are in
``tests/integration/cli/test_command_deadlines.py``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from terminai_sandbox.common import deadlines
from terminai_sandbox.errors import ConfigError, RegistryUnreachable
from terminai_sandbox.registry import RegistryClient

from tests.fixtures.hostile import TRICKLE, HostileServer, always, http, serving

PAUSE = 0.3  # each answer's delay: far inside the client's own 2 s per request
DOC = (Path(__file__).parents[3] / "docs" / "DEADLINES.md").read_text()


@pytest.fixture()
def slow() -> Iterator[HostileServer]:
    with serving(always(PAUSE, http(404), close=False)) as server:
        yield server


@pytest.fixture(autouse=True)
def _no_command_deadline_left_over() -> Iterator[None]:
    deadlines.end()
    yield
    deadlines.end()


def test_without_a_command_deadline_every_slow_answer_is_waited_for(slow: HostileServer) -> None:
    """The control: the server answers every request, so only a command deadline can end the loop."""
    client = RegistryClient(slow.host, timeout=2)
    started = time.monotonic()
    assert [client.has_blob("x", f"sha256:{i:064x}") for i in range(5)] == [False] * 5
    assert time.monotonic() - started >= 5 * PAUSE * 0.9
    assert len(slow.requests) == 5


def test_many_slow_requests_end_at_the_command_deadline(slow: HostileServer) -> None:
    client = RegistryClient(slow.host, timeout=2)
    command = deadlines.begin("verify", 1.0)
    started = time.monotonic()
    with pytest.raises(RegistryUnreachable) as caught:
        for i in range(100):  # 30 s of requests, each answered in 0.3 s
            client.has_blob("x", f"sha256:{i:064x}")
    took = time.monotonic() - started
    assert 0.9 <= took < 1.0 + 0.5, took
    assert 2 <= len(slow.requests) <= 5
    error = caught.value
    assert error.exit_code == 9
    assert error.message.startswith(f"HEAD http://{slow.host}/v2/x/blobs/sha256:")
    assert "the verify command's total deadline of 1 s passed before the registry answered" in error.message
    assert deadlines.COMMAND_VARIABLE in error.hint and "now 1" in error.hint
    assert command.left() <= 0


def test_a_request_begun_near_the_command_deadline_ends_there() -> None:
    """A trickling answer under a per-request bound of 30 s is cut at the command's 1 s."""
    with serving(always(TRICKLE, http(200, b"{}" * 50))) as server:
        client = RegistryClient(server.host, timeout=30)
        deadlines.begin("kube", 1.0)
        started = time.monotonic()
        with pytest.raises(RegistryUnreachable) as caught:
            client.get_manifest("x", "1.0.0")
    assert time.monotonic() - started < 1.5
    assert "the kube command's total deadline of 1 s" in caught.value.message


def test_the_per_request_bound_still_speaks_for_itself_when_it_is_the_nearer() -> None:
    with serving(always(TRICKLE, http(200, b"{}" * 50))) as server:
        client = RegistryClient(server.host, timeout=0.8)
        deadlines.begin("push", 60.0)
        with pytest.raises(RegistryUnreachable) as caught:
            client.get_manifest("x", "1.0.0")
    assert "no whole answer within 0.8 s" in caught.value.message
    assert deadlines.REGISTRY_VARIABLE in caught.value.hint


def test_a_command_past_its_deadline_sends_nothing_more(slow: HostileServer) -> None:
    client = RegistryClient(slow.host, timeout=2)
    deadlines.begin("sign", 0.001)
    time.sleep(0.01)
    with pytest.raises(RegistryUnreachable, match="the sign command's total deadline"):
        client.has_blob("x", f"sha256:{0:064x}")
    assert slow.requests == []


def _doc_totals() -> dict[str, str]:
    rows: dict[str, str] = {}
    for line in DOC.split("## Per command", 1)[1].split("\n\n", 2)[1].splitlines()[2:]:
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        for name in cells[0].replace("`", "").split(", "):
            rows[name] = cells[4]
    return rows


def test_the_command_totals_are_the_documented_ones() -> None:
    documented = _doc_totals()
    for command, seconds in deadlines.COMMAND_SECONDS.items():
        assert documented[command].startswith(f"{seconds:g} s"), (command, documented[command])
    assert {name for name, cell in documented.items() if cell != "—"} == set(deadlines.COMMAND_SECONDS)
    assert f"{deadlines.COMMAND_DEFAULT_SECONDS:g} s" in DOC.split("**The whole command**", 1)[1].split("\n- ", 1)[0]
    assert f"`{deadlines.COMMAND_VARIABLE}`" in DOC


@pytest.mark.parametrize("command", ["verify", "push", "release", "build", "no-such-command"])
def test_the_variable_sets_every_command_and_unset_is_the_table(command: str) -> None:
    default = deadlines.COMMAND_SECONDS.get(command, deadlines.COMMAND_DEFAULT_SECONDS)
    assert deadlines.command_seconds({}, command) == default
    assert deadlines.command_seconds({deadlines.COMMAND_VARIABLE: "2.5"}, command) == 2.5


@pytest.mark.parametrize("raw", ["0", "-1", "1e3", "soon", "٣", "86401"])
def test_a_malformed_command_deadline_is_refused(raw: str) -> None:
    with pytest.raises(ConfigError) as caught:
        deadlines.command_seconds({deadlines.COMMAND_VARIABLE: raw}, "verify")
    assert caught.value.exit_code == 3 and deadlines.COMMAND_VARIABLE in caught.value.message
    assert "unset it for 120 s" in caught.value.hint


@pytest.mark.parametrize("name", ["verify", "push", "sign", "kube", "preflight"])
def test_the_help_says_the_command_total(name: str) -> None:
    import click
    from terminai_sandbox.cli import main

    command = main.get_command(click.Context(main), name)
    assert command is not None and command.help is not None
    text = " ".join(command.help.split())
    assert f"{deadlines.COMMAND_SECONDS[name]:g} s" in text and deadlines.COMMAND_VARIABLE in text, text


def test_the_click_group_begins_the_deadline_of_the_command_it_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner
    from terminai_sandbox.cli import main

    begun: list[deadlines.CommandDeadline] = []
    real_begin = deadlines.begin
    monkeypatch.setattr(deadlines, "begin", lambda *a: begun.append(real_begin(*a)) or begun[-1])
    assert CliRunner().invoke(main, ["version"]).exit_code == 0
    [one] = begun
    assert one.command == "version" and one.seconds == deadlines.COMMAND_DEFAULT_SECONDS
    # It ends with the command: a later request of the same process (a test, a program calling
    # the CLI in-process) must not be cut by a deadline that was never its own.
    assert deadlines.active() is None
    refused = CliRunner().invoke(main, ["version"], env={deadlines.COMMAND_VARIABLE: "never"})
    assert refused.exit_code == 3 and "TERMINAI_COMMAND_TIMEOUT='never'" in refused.output
    assert deadlines.active() is None
