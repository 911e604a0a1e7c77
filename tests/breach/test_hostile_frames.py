"""The host treats the run as hostile: frames are size-capped and schema-checked; a bad
frame ends the run as a failed result (never a traceback, never a second execution); the
deadline and the output cap are the host's, whatever the run says."""

from __future__ import annotations

import json
import time

import pytest
from terminai_apts.executor import SandboxConfig
from terminai_apts.executor.host import channel, run, zygote_client

from tests.breach import harness
from tests.breach.support import PRELUDE, group, proc_stats

# The result pipe is the run's only writable pipe: find it and write to it directly.
FORGE = (
    PRELUDE
    + """
import fcntl, stat, struct, time
res = None
for fd in range(3, 64):
    try:
        if stat.S_ISFIFO(os.fstat(fd).st_mode) and fcntl.fcntl(fd, fcntl.F_GETFL) & 3 == os.O_WRONLY:
            res = fd
    except OSError:
        pass
# An escaped run can read the request it was handed (here: from the frame that holds it),
# so its forged answers carry that cell's number ("seq": 1 below stands for it).
seq, where = None, sys._getframe()
while where is not None and seq is None:
    if isinstance(where.f_locals.get("request"), dict):
        seq = where.f_locals["request"]["seq"]
    where = where.f_back
def frame(payload):
    payload = payload.replace(b'"seq": 1', b'"seq": %d' % seq)
    os.write(res, struct.pack(">I", len(payload)) + payload)
"""
)

VALID = {
    "success": True, "stdout": "", "error": None, "error_type": None, "memory_exceeded": False,
    "violations": [], "refused_by": None, "line": 0, "output_truncated": False, "seq": 1,
}  # fmt: skip


def frame_of(**changes: object) -> str:
    """Raw code that sends a result frame: the valid one with ``changes``."""
    return f"frame({json.dumps({**VALID, **changes})!r}.encode())\n"


def _forged(body: str, config: SandboxConfig = harness.DEFAULT) -> run.ExecutionResult:
    started = time.monotonic()
    result = harness.breach(FORGE + body, config)
    assert time.monotonic() - started < config.timeout_seconds + 2
    return result


@pytest.mark.parametrize(
    "body",
    [
        "os.write(res, struct.pack('>I', 2**31) + b'x')\ntime.sleep(30)\n",  # huge header
        "frame(b'not json at all')\ntime.sleep(30)\n",
        "frame(b'[1, 2, 3]')\ntime.sleep(30)\n",
        frame_of(session_ended=False, timed_out=False) + "time.sleep(30)\n",
        frame_of(success="yes") + "time.sleep(30)\n",
        frame_of(line=2**70) + "time.sleep(30)\n",
        frame_of(violations=[{"rule": "x"}]) + "time.sleep(30)\n",
        "frame(b'{' * 100000)\ntime.sleep(30)\n",  # nesting bomb
    ],
    ids=["huge-header", "not-json", "not-object", "extra-fields", "wrong-type", "huge-int", "violations", "nested"],
)
def test_a_malformed_frame_is_a_clean_failure(body: str) -> None:
    result = _forged(body)
    assert not result.success and result.error_type == "ProtocolError" and result.session_ended, result
    assert "Traceback" not in (result.error or "")


def test_a_second_answer_is_refused() -> None:
    # A run may say what it likes about itself (it could print it), but only once.
    result = _forged(frame_of(stdout="forged") + "print('real')\ntime.sleep(0.2)\n")
    assert result.stdout == "forged" or result.error_type == "ProtocolError"


def test_the_output_cap_is_the_hosts() -> None:
    config = SandboxConfig(timeout_seconds=10, security_mode="standard", max_output_bytes=1000)
    # Within the frame limit but past --max-output: the host truncates.
    result = _forged(frame_of(stdout="x" * 5000) + "time.sleep(30)\n", config)
    assert result.output_truncated and len(result.stdout) == 1000 and result.success
    # Far past it (4 MiB): refused without reading it all.
    result = _forged("frame(b'{\"stdout\": \"' + b'x' * 4194304 + b'\"}')\ntime.sleep(30)\n", config)
    assert result.error_type == "ProtocolError" and result.stdout == ""


def test_a_half_frame_cannot_hold_the_host_past_its_deadline() -> None:
    config = SandboxConfig(timeout_seconds=1, security_mode="standard")
    result = _forged("os.write(res, struct.pack('>I', 100) + b'{')\ntime.sleep(60)\n", config)
    assert result.timed_out and result.session_ended


def test_no_second_execution_after_a_bad_frame() -> None:
    zygote = harness.zygote()
    spawned: list[int] = []
    real_spawn = zygote.spawn

    def counting_spawn(*, sealed_ok: bool = False) -> tuple[int, int, int]:
        found = real_spawn(sealed_ok=sealed_ok)
        spawned.append(found[0])
        return found

    zygote.spawn = counting_spawn  # type: ignore[method-assign]
    try:
        result = _forged("frame(b'garbage')\n")
    finally:
        del zygote.spawn
    assert result.error_type == "ProtocolError" and len(spawned) == 1


def test_a_forged_session_end_leaves_nothing_behind() -> None:
    zygote = harness.zygote()
    spawned: list[int] = []
    real_spawn = zygote.spawn

    def recording_spawn(*, sealed_ok: bool = False) -> tuple[int, int, int]:
        found = real_spawn(sealed_ok=sealed_ok)
        spawned.append(found[0])
        return found

    zygote.spawn = recording_spawn  # type: ignore[method-assign]
    try:
        result = _forged(frame_of(stdout="done") + "time.sleep(60)\n")
    finally:
        del zygote.spawn
    assert result.success and result.stdout == "done"
    # The host ended the run (its whole group) whatever it claimed: nothing of it runs on...
    deadline = time.monotonic() + 10
    while any(state != "Z" for state, _ in group(spawned[0]).values()) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert all(state == "Z" for state, _ in group(spawned[0]).values()), group(spawned[0])
    # ...and the zygote reaps what ended and is its to reap (on SIGCHLD, or its idle sweep;
    # a loaded host delays both). Inside a container a zombie can be parented elsewhere
    # (seen once in the image under load): it is reported with its parent, not waited for.
    deadline = time.monotonic() + 60
    while _zombies_of(zygote.proc.pid, spawned[0]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _zombies_of(zygote.proc.pid, spawned[0]), group(spawned[0])


def _zombies_of(parent: int, pgid: int) -> list[int]:
    """Processes of group ``pgid`` whose parent is ``parent``."""
    return [pid for pid, fields in proc_stats().items() if int(fields[2]) == pgid and int(fields[1]) == parent]


def test_an_answer_for_another_cell_ends_a_session() -> None:
    # The run answers its first cell twice, hoping the spare answer is taken for the next.
    zygote = zygote_client.ZygoteClient(module="tests.breach.zygote")
    try:
        session = channel.RunChannel(zygote, harness.DEFAULT, None)
        first = session.cell(FORGE + frame_of() + "time.sleep(0.2)\n", 10)
        assert first["success"], first
        second = session.cell("print('two')", 10)
        assert second["error_type"] == "ProtocolError" and second["session_ended"], second
        assert session.cell("print('three')", 10)["error_type"] == "SessionClosed"
    finally:
        zygote.close()


def test_the_cli_reports_a_dead_run_without_a_traceback() -> None:
    result = _forged("os.close(res)\nos.kill(os.getpid(), 9) if False else os._exit(3)\n")
    assert not result.success and result.error_type == "ChildCrashed"
    assert json.dumps(result.to_json())  # serialisable as the CLI prints it
