"""Settings, cleanup plans and release states that are not what they claim are refused alike.

- ``~/.terminai/settings.json`` as a directory, a FIFO, a device, garbage, not UTF-8 or not an
  object: ``engine status``, ``preflight`` and ``run`` each refuse it with exit 3 and the path.
  ``DOCKER_HOST`` names a socket nobody listens on, so a command that ignored the file would
  end with 4 (no engine) instead; a FIFO read like a file would hang past the time bound.
- A cleanup plan entry outside its folder (``..``, absolute, through a symbolic link, a link
  pointing out): the whole plan is refused (exit 20) naming the entry, nothing is moved and
  no journal is written. The control applies the same plan unedited.
- ``release manifest`` over a state whose step records are ``{}``: exit 16 naming the state
  file, the step and the key; every key of every record is left out in turn on load.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from terminai_sandbox._version import __version__
from terminai_sandbox.errors import ReleaseError
from terminai_sandbox.release.state import RECORDS, STATE_FILE, STEPS, ReleaseState

from tests.unit.cli.refusals import APTS, SANDBOX, assert_refused, make_device, make_directory, make_fifo, run

# -- settings ----------------------------------------------------------------------------------


def _text(body: bytes) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        path.write_bytes(body)

    return make


SETTINGS: list[tuple[str, Callable[[Path], None], str]] = [
    ("directory", make_directory, "cannot be read (Is a directory)"),
    ("fifo", make_fifo, "cannot be read (a FIFO, not a regular file)"),
    ("device", make_device, "cannot be read (a device, not a regular file)"),
    ("garbage", _text(b"<html>not settings</html>"), "is not valid JSON"),
    ("not UTF-8", _text('{"tools": {"sandbox": "d\xf6cker"}}'.encode("latin-1")), "is not UTF-8 text"),
    ("an array", _text(b"[1, 2]"), "holds an array, not a JSON object"),
    ("tools not an object", _text(b'{"tools": 3}'), "tools is the number 3"),
    ("runtime not a name", _text(b'{"tools": {"sandboxRuntime": 1}}'), "tools.sandboxRuntime is the number 1"),
]
COMMANDS = [("engine", "status"), ("preflight",), ("run", "--", "true")]


@pytest.mark.parametrize("command", COMMANDS, ids=[c[0] for c in COMMANDS])
@pytest.mark.parametrize(("kind", "make", "says"), SETTINGS, ids=[s[0] for s in SETTINGS])
def test_every_command_refuses_a_broken_settings_file_alike(
    tmp_path: Path, command: tuple[str, ...], kind: str, make: Callable[[Path], None], says: str
) -> None:
    folder = tmp_path / ".terminai"
    folder.mkdir()
    make(folder / "settings.json")
    env = {
        "HOME": str(tmp_path),
        "DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock",
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }
    proc = run(SANDBOX, *command, env=env)
    assert_refused(proc, 3, str(folder / "settings.json"), says)


@pytest.fixture(autouse=True)
def _no_engine_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("TERMINAI_SANDBOX", "GEMINI_SANDBOX", "TERMINAI_SANDBOX_RUNTIME", "TERMINAI_SANDBOX_IMAGE"):
        monkeypatch.delenv(variable, raising=False)


def test_engine_status_honours_the_settings_file_as_run_does(tmp_path: Path) -> None:
    """The control: a readable file saying false turns the sandbox off, as it does for 'run'."""
    (tmp_path / ".terminai").mkdir()
    (tmp_path / ".terminai" / "settings.json").write_text('{"tools": {"sandbox": false}} // off')
    proc = run(SANDBOX, "engine", "status", env={"HOME": str(tmp_path), "DOCKER_HOST": f"unix://{tmp_path}/x.sock"})
    assert proc.returncode == 0 and "turns the sandbox off" in proc.stdout, proc.stderr


# -- cleanup plans -----------------------------------------------------------------------------

OLD = 1577836800  # 2020-01-01: old enough to be archived
NOW = "2030-01-01T00:00:00Z"


def _folder(tmp_path: Path) -> tuple[Path, Path, dict[str, Any]]:
    """A downloads folder with one old file, a precious file outside it, and the folder's plan."""
    folder, outside = tmp_path / "downloads", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    for path in (folder / "old.txt", outside / "passwd"):
        path.write_bytes(b"seven b")  # same size and time: an edited plan entry matches both
        os.utime(path, (OLD, OLD))
    planned = run(APTS, "cleanup", str(folder), "--now", NOW)
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    assert [e["path"] for e in plan["entries"] if e["label"] == "ARCHIVE"] == ["old.txt"]
    return folder, outside, plan


def _link_folder(folder: Path, outside: Path) -> str:
    (folder / "link").symlink_to(outside)
    return "link/passwd"


def _link_file(folder: Path, outside: Path) -> str:
    (folder / "pw").symlink_to(outside / "passwd")
    return "pw"


def _link_chain(folder: Path, outside: Path) -> str:
    (folder / "inner").mkdir()
    (folder / "inner" / "up").symlink_to("../../outside")
    return "inner/up/passwd"


ESCAPES: list[tuple[str, Callable[[Path, Path], str], str]] = [
    ("dot-dot", lambda f, o: "../../../../" + str(o / "passwd").lstrip("/"), "outside the planned folder"),
    ("dot-dot to the sibling", lambda f, o: "../outside/passwd", "outside the planned folder"),
    ("absolute", lambda f, o: str(o / "passwd"), "outside the planned folder"),
    ("through a linked folder", _link_folder, "passes through the symbolic link 'link'"),
    ("through a nested link", _link_chain, "passes through the symbolic link 'inner/up'"),
    ("a link pointing out", _link_file, "is a symbolic link to"),
]


@pytest.mark.parametrize(("kind", "edit", "says"), ESCAPES, ids=[e[0] for e in ESCAPES])
def test_a_plan_entry_leading_out_of_its_folder_is_refused_before_anything_moves(
    tmp_path: Path, kind: str, edit: Callable[[Path, Path], str], says: str
) -> None:
    folder, outside, plan = _folder(tmp_path)
    entry = edit(folder, outside)
    for item in plan["entries"]:
        if item["path"] == "old.txt":
            item["path"] = entry
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    proc = run(APTS, "cleanup", str(folder), "--plan", str(tmp_path / "plan.json"), "--apply", "--approved-by", "me")
    line = assert_refused(proc, 20, repr(entry), says)
    assert "nothing was moved" in line
    assert (outside / "passwd").read_bytes() == b"seven b" and (folder / "old.txt").exists()
    assert not (folder / ".terminai-cleanup").exists(), "a journal was written for a refused plan"


def test_the_unedited_plan_applies(tmp_path: Path) -> None:
    """The control: the same plan, unedited, moves the old file into the archive."""
    folder, outside, plan = _folder(tmp_path)
    _link_folder(folder, outside)  # a link the plan does not name changes nothing
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    proc = run(APTS, "cleanup", str(folder), "--plan", str(tmp_path / "plan.json"), "--apply", "--approved-by", "me")
    assert proc.returncode == 0 and "moved: 1" in proc.stderr, proc.stderr
    assert (
        not (folder / "old.txt").exists()
        and (folder / ".terminai-cleanup" / "archive" / "2020-01" / "old.txt").exists()
    )
    assert (outside / "passwd").exists()


# -- release states ----------------------------------------------------------------------------

DIGEST = "sha256:" + "a" * 64
CONFIG = "sha256:" + "b" * 64
FILE = {"path": "sbom.cdx.json", "sha256": "c" * 64}
VALID: dict[str, dict[str, Any]] = {
    "build": {"manifest_digest": DIGEST, "config_digest": CONFIG},
    "contracts": {"ok": True, "version": "1.0", "summary": "3 passed, 0 failed"},
    "describe": {"sbom": FILE, "provenance": {**FILE, "path": "provenance.slsa.json"}, "locks": {}},
    "push": {"reference": f"127.0.0.1:5000/t/s@{DIGEST}"},
    "sign": {"key_id": "k"},
    "verify": {"verified": {"digest": DIGEST}},
    "tag": {"tag": f"127.0.0.1:5000/t/s:{__version__}"},
}


def test_the_valid_records_cover_every_step_before_the_manifest() -> None:
    assert list(VALID) == list(STEPS[:-1])


def _state(dist: Path, steps: dict[str, Any]) -> Path:
    target = dist / __version__
    target.mkdir(parents=True)
    body = {
        "format": 1,
        "version": __version__,
        "repository": "127.0.0.1:5000/t/s",
        "manifest_digest": DIGEST,
        "config_digest": CONFIG,
        "steps": steps,
    }
    (target / STATE_FILE).write_text(json.dumps(body))
    return target / STATE_FILE


def _manifest(dist: Path) -> Any:
    return run(SANDBOX, "release", "manifest", "--dist", str(dist))


@pytest.mark.slow  # the release commands import the signing stack: ~2.5 s of CPU a run
def test_release_manifest_over_empty_step_records_names_the_state_and_the_record(tmp_path: Path) -> None:
    state = _state(tmp_path / "dist", {key: {} for key in VALID})
    assert_refused(_manifest(tmp_path / "dist"), 16, str(state), "the record of step 'build' has no 'manifest_digest'")
    assert not (state.parent / "release.json").exists()


def _missing_keys() -> list[tuple[str, str]]:
    cases = []
    for step, shape in RECORDS.items():
        cases += [(step, key) for key in shape if step in VALID]
        cases += [(step, f"{key}.{inner}") for key, want in shape.items() if isinstance(want, dict) for inner in want]
    return cases


MISSING = _missing_keys()


def _without(step: str, key: str) -> tuple[dict[str, Any], str, str]:
    """VALID without ``key`` (dotted for a nested one) in ``step``; where and what is missing."""
    steps = json.loads(json.dumps(VALID))
    holder = steps[step]
    *outer, last = key.split(".")
    for part in outer:
        holder = holder[part]
    del holder[last]
    return steps, f"the record of step '{step}'" + "".join(f".{part}" for part in outer), last


@pytest.mark.parametrize(("step", "key"), MISSING, ids=[f"{s}-{k}" for s, k in MISSING])
def test_a_state_whose_record_lacks_any_key_is_refused_on_load(tmp_path: Path, step: str, key: str) -> None:
    """Every key of every record, through the loader every release step uses (in-process: one
    'release manifest' run costs seconds of imports; the console script is driven above)."""
    steps, where, last = _without(step, key)
    state = _state(tmp_path / "dist", steps)
    with pytest.raises(ReleaseError) as caught:
        ReleaseState.load(state.parent)
    assert str(state) in caught.value.message and f"{where} has no {last!r}" in caught.value.message
    assert caught.value.hint and caught.value.exit_code == 16


@pytest.mark.slow  # the release commands import the signing stack: ~2.5 s of CPU a run
def test_release_manifest_over_valid_records_gets_past_the_state(tmp_path: Path) -> None:
    """The control: the same records, complete, pass the state's check (the run then stops at
    the missing OCI layout, which is another error than the state's shape)."""
    _state(tmp_path / "dist", VALID)
    assert_refused(_manifest(tmp_path / "dist"), 16, "is not an OCI image layout")
