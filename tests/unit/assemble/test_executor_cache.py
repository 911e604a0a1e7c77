"""The executor against the content-addressed stage cache: a stage whose key is cached is
not run; a stage whose declared inputs changed is run (and only it), and its output lands
in the cache atomically under its new key."""

from __future__ import annotations

import dataclasses
import tarfile
from pathlib import Path

import pytest
from terminai_sandbox import layers
from terminai_sandbox.assemble import execute
from terminai_sandbox.assemble.cache import StageCache
from terminai_sandbox.assemble.plan import BuildPlan, FileDigest

from tests.fixtures import plan as fx


def _tar(path: Path, name: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    source = path.parent / f"{name}.txt"
    source.write_text(name)
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tar:
        tar.add(source, arcname=name)
    return path


def _fill(cache: StageCache, built: BuildPlan, tmp: Path) -> None:
    for name in ("base", "wheels", "tapts"):
        produced = _tar(tmp / "produced" / f"{name}.tar", name)
        cache.store(built.stage(name), produced)


class Runs:
    """Stands in for the stage bodies (mmdebstrap, pip, the image's python3): records calls."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.calls: list[str] = []

    def stage(self, name: str) -> layers.Layer:
        self.calls.append(name)
        out = _tar(self.tmp / "made" / f"{name}-{len(self.calls)}.tar", f"{name}-rebuilt")
        return layers.Layer(tar=out, diff_id=layers.sha256_file(out), size=out.stat().st_size)


@pytest.fixture
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Runs:
    recorder = Runs(tmp_path)
    monkeypatch.setattr(execute, "_base", lambda *_a, **_k: recorder.stage("base"))
    monkeypatch.setattr(execute, "_wheels", lambda *_a, **_k: recorder.stage("wheels"))
    monkeypatch.setattr(execute, "_tapts", lambda *_a, **_k: recorder.stage("tapts"))

    def no_unpack(*_a: object, **_k: object) -> Path:
        recorder.calls.append("unpack")
        return tmp_path / "root"

    monkeypatch.setattr(execute.python, "unpacked_root", no_unpack)
    return recorder


def test_unchanged_stages_are_cache_hits(tmp_path: Path, runs: Runs) -> None:
    cache = StageCache(tmp_path / "cache")
    built = fx.sample_plan()
    _fill(cache, built, tmp_path)
    result = execute.build_layers(built, tapts=tmp_path, cache=cache, work=tmp_path / "work", progress=print)
    assert result.cached == ("base", "wheels", "tapts")
    assert runs.calls == []  # not even the base is unpacked for compiling
    for name, layer in zip(("base", "wheels", "tapts"), result.ordered(), strict=True):
        entry = cache.entry(built.stage(name))
        assert entry is not None and layer.tar == entry
        assert layer.diff_id == layers.sha256_file(entry)


def test_only_the_stage_whose_inputs_changed_runs_again(tmp_path: Path, runs: Runs) -> None:
    cache = StageCache(tmp_path / "cache")
    _fill(cache, fx.sample_plan(), tmp_path)
    edited = dataclasses.replace(fx.sources(), tapts=FileDigest(path="packages/terminai-apts", sha256="7" * 64))
    changed = fx.sample_plan(sources=edited)
    result = execute.build_layers(changed, tapts=tmp_path, cache=cache, work=tmp_path / "work", progress=print)
    assert result.cached == ("base", "wheels")
    assert runs.calls == ["unpack", "tapts"]
    entry = cache.entry(changed.stage("tapts"))
    assert entry is not None and result.tapts.tar == entry and entry.is_file()
    assert not [p for p in entry.parent.iterdir() if p.name.startswith(".")]  # no temporary left behind
    again = execute.build_layers(changed, tapts=tmp_path, cache=cache, work=tmp_path / "work", progress=print)
    assert again.cached == ("base", "wheels", "tapts") and runs.calls == ["unpack", "tapts"]


def test_without_a_cache_every_stage_runs_and_nothing_is_kept(tmp_path: Path, runs: Runs) -> None:
    cache = StageCache(None)
    result = execute.build_layers(fx.sample_plan(), tapts=tmp_path, cache=cache, work=tmp_path / "work", progress=print)
    assert result.cached == ()
    assert runs.calls == ["base", "unpack", "wheels", "tapts"]
    assert cache.lookup(fx.sample_plan().stage("base")) is None
