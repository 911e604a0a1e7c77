"""The release's persisted state: keyed by digest, steps in order, refusals that name the step to run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from terminai_sandbox.errors import BuildError, ReleaseError
from terminai_sandbox.release import steps
from terminai_sandbox.release.state import STATE_FILE, STEPS, ReleaseState

DIGEST = "sha256:" + "a" * 64
CONFIG = "sha256:" + "b" * 64


def _state() -> ReleaseState:
    return ReleaseState(version="1.2.3", repository="127.0.0.1:5000/t/s", manifest_digest=DIGEST, config_digest=CONFIG)


def test_a_state_round_trips_through_its_file(tmp_path: Path) -> None:
    built = {"manifest_digest": DIGEST, "config_digest": CONFIG}
    passed = {"ok": True, "version": "1.0", "summary": "3 passed, 0 failed"}
    state = _state().record("build", built).record("contracts", passed)
    state.save(tmp_path)
    assert ReleaseState.load(tmp_path) == state
    assert json.loads((tmp_path / STATE_FILE).read_text())["steps"] == {"build": built, "contracts": passed}


@pytest.mark.parametrize("step", STEPS)
def test_recording_a_step_forgets_every_later_one(step: str) -> None:
    full = _state()
    for name in STEPS:
        full = full.record(name, {"n": name})
    again = full.record(step, {"n": "again"})
    position = STEPS.index(step)
    assert list(again.steps) == [*STEPS[:position], step]
    assert again.require(step) == {"n": "again"}


def test_a_step_that_has_not_passed_names_the_command_to_run() -> None:
    with pytest.raises(ReleaseError, match="step 'sign' has not passed") as caught:
        _state().record("build", {}).require("sign")
    assert caught.value.hint == "run 'terminai-sandbox release sign' first"


def test_another_image_starts_a_fresh_state_and_the_same_image_keeps_its_steps() -> None:
    state = _state().record("build", {}).record("contracts", {"ok": True})
    assert state.for_image(DIGEST, CONFIG) is state
    fresh = state.for_image("sha256:" + "c" * 64, CONFIG)
    assert fresh.steps == {} and fresh.manifest_digest == "sha256:" + "c" * 64
    with pytest.raises(ReleaseError, match="the release state is for"):
        state.check_image("sha256:" + "c" * 64)


def test_no_state_says_how_to_start(tmp_path: Path) -> None:
    with pytest.raises(ReleaseError, match="no release state") as caught:
        ReleaseState.load(tmp_path)
    assert "release build" in (caught.value.hint or "")


@pytest.mark.parametrize(
    "body",
    [
        "not json",
        "[]",
        json.dumps({"format": 2}),
        json.dumps({"format": 1, "version": "1", "repository": "r", "manifest_digest": "d", "config_digest": "c"}),
        json.dumps(
            {"format": 1, "version": "", "repository": "r", "manifest_digest": "d", "config_digest": "c", "steps": {}}
        ),
        json.dumps(
            {
                "format": 1,
                "version": "1",
                "repository": "r",
                "manifest_digest": "d",
                "config_digest": "c",
                "steps": {"publish": {}},
            }
        ),
    ],
)
def test_a_malformed_state_is_refused_with_what_to_do(tmp_path: Path, body: str) -> None:
    (tmp_path / STATE_FILE).write_text(body)
    with pytest.raises(ReleaseError, match="release state") as caught:
        ReleaseState.load(tmp_path)
    assert "release build" in (caught.value.hint or "")


def _failing_build() -> None:
    raise BuildError("no image spec: not a checkout")


def test_a_failed_first_build_leaves_no_empty_release_directory(tmp_path: Path) -> None:
    dist = tmp_path / "out" / "dist"
    with pytest.raises(ReleaseError, match="release stopped at step 'build'"):
        steps.build(dist / "1.2.3", version="1.2.3", repository="127.0.0.1:5000/t/s", image=_failing_build)
    assert not (tmp_path / "out").exists()  # neither dist/1.2.3 nor the parents it made


def test_a_failed_rebuild_keeps_the_earlier_release_files(tmp_path: Path) -> None:
    target = tmp_path / "dist" / "1.2.3"
    target.mkdir(parents=True)
    built = {"manifest_digest": DIGEST, "config_digest": CONFIG}
    _state().record("build", built).save(target)
    with pytest.raises(ReleaseError):
        steps.build(target, version="1.2.3", repository="127.0.0.1:5000/t/s", image=_failing_build)
    assert ReleaseState.load(target).passed("build") == built


PLATFORMS = {
    "linux/amd64": {"manifest_digest": "sha256:" + "1" * 64, "config_digest": "sha256:" + "2" * 64},
    "linux/arm64": {"manifest_digest": "sha256:" + "3" * 64, "config_digest": "sha256:" + "4" * 64},
}
_FILE = {"path": "linux-amd64/sbom.cdx.json", "sha256": "sha256:" + "5" * 64}


def _index_state() -> ReleaseState:
    fresh = ReleaseState(version="1.2.3", repository="127.0.0.1:5000/t/s", manifest_digest="", config_digest="")
    return fresh.for_image(DIGEST, "", PLATFORMS)


def test_an_index_state_round_trips_with_its_platforms_and_per_platform_records(tmp_path: Path) -> None:
    state = (
        _index_state()
        .record("build", {"manifest_digest": DIGEST, "platforms": PLATFORMS})
        .record(
            "contracts",
            {
                "ok": True,
                "version": "1.0",
                "summary": "6 passed, 0 failed",
                "platforms": {p: {"ok": True, "summary": "3 passed, 0 failed"} for p in PLATFORMS},
            },
        )
        .record("describe", {"locks": {}, "platforms": {p: {"sbom": _FILE, "provenance": _FILE} for p in PLATFORMS}})
    )
    state.save(tmp_path)
    loaded = ReleaseState.load(tmp_path)
    assert loaded == state and loaded.is_index and loaded.config_digest == ""
    assert list(loaded.platforms) == ["linux/amd64", "linux/arm64"]  # the index's order, kept
    # The same index keeps its steps; another platform set is another release.
    assert loaded.for_image(DIGEST, "", PLATFORMS).steps == loaded.steps
    assert loaded.for_image(DIGEST, "", {"linux/amd64": PLATFORMS["linux/amd64"]}).steps == {}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda raw: raw["steps"]["describe"]["platforms"]["linux/arm64"].pop("provenance"), "has no 'provenance'"),
        (lambda raw: raw["steps"]["describe"].update(platforms={}), "must map each platform to a record"),
        (lambda raw: raw["steps"]["build"].pop("platforms"), "has no 'platforms'"),
        (lambda raw: raw["platforms"].update({"amd64": {}}), "not os/arch with its digests"),
        (lambda raw: raw["platforms"]["linux/amd64"].update(config_digest=""), "'config_digest' must be a non-empty"),
        (lambda raw: raw.update(platforms=[]), "'platforms' must be an object"),
        (lambda raw: raw.update(platforms={}), "the record of step 'build' has no 'config_digest'"),  # one image
    ],
)
def test_a_malformed_index_state_is_refused_naming_what_is_wrong(tmp_path: Path, change: object, message: str) -> None:
    files = {p: {"sbom": _FILE, "provenance": _FILE} for p in PLATFORMS}
    state = (
        _index_state()
        .record("build", {"manifest_digest": DIGEST, "platforms": PLATFORMS})
        .record(
            "contracts",
            {
                "ok": True,
                "version": "1",
                "summary": "s",
                "platforms": {p: {"ok": True, "summary": "s"} for p in PLATFORMS},
            },
        )
        .record("describe", {"locks": {}, "platforms": files})
    )
    state.save(tmp_path)
    raw = json.loads((tmp_path / STATE_FILE).read_text())
    change(raw)  # type: ignore[operator]
    (tmp_path / STATE_FILE).write_text(json.dumps(raw))
    with pytest.raises(ReleaseError, match=message) as caught:
        ReleaseState.load(tmp_path)
    assert caught.value.exit_code == 16
