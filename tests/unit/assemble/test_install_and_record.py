"""Wheels install for the image (not the host), and the lock-only layer record."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from terminai_sandbox import layers, wheels
from terminai_sandbox.assemble import record
from terminai_sandbox.errors import BuildError, ConfigError, ReproducibilityError

SITE = "/usr/local/lib/python3.13/dist-packages"
SDE = 1_700_000_000


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _wheel(directory: Path, *, tamper: bool = False) -> Path:
    files = {
        "demo/__init__.py": b"VALUE = 1\n",
        "demo-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n",
        "demo-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        "demo-1.0.dist-info/entry_points.txt": b"[console_scripts]\ndemo = demo:main\n",
    }
    record_rows = [f"{name},sha256={_b64(data)},{len(data)}" for name, data in files.items()]
    if tamper:
        files["demo/__init__.py"] = b"VALUE = 2\n"
    path = directory / "demo-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for name, data in files.items():
            wheel.writestr(name, data)
        wheel.writestr("demo-1.0.dist-info/RECORD", "\n".join([*record_rows, "demo-1.0.dist-info/RECORD,,"]) + "\n")
    return path


def test_scripts_name_the_image_interpreter_and_record_matches_the_files(tmp_path: Path) -> None:
    staging = tmp_path / "root"
    wheels.install([_wheel(tmp_path)], staging, site_packages=SITE)
    script = staging / "usr/local/bin/demo"
    assert script.read_bytes().startswith(b"#!/usr/bin/python3 -I\n")
    assert sys.executable.encode() not in script.read_bytes() and str(tmp_path).encode() not in script.read_bytes()
    site = staging / SITE.lstrip("/")
    rows = list(csv.reader((site / "demo-1.0.dist-info/RECORD").read_text().splitlines()))
    checked = 0
    for name, digest, size in rows:
        if not digest:
            continue
        data = (site / name).resolve().read_bytes()
        assert digest == f"sha256={_b64(data)}" and int(size) == len(data), name
        checked += 1
    assert "../../../bin/demo" in {row[0] for row in rows}  # the script, hashed as written
    assert checked == 6  # module, METADATA, WHEEL, entry_points.txt, INSTALLER, script
    assert (site / "demo-1.0.dist-info/INSTALLER").read_bytes() == b"terminai-sandbox\n"
    assert not list(staging.rglob("*.pyc")) and not list(staging.rglob("direct_url.json"))


def test_install_is_independent_of_umask_and_staging_path(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path)
    wheels.install([wheel], tmp_path / "a", site_packages=SITE)
    old = os.umask(0o077)
    try:
        wheels.install([wheel], tmp_path / "much" / "longer" / "staging" / "path", site_packages=SITE)
    finally:
        os.umask(old)
    one = layers.write_layer(tmp_path / "a", tmp_path / "a.tar", source_date_epoch=SDE)
    two = layers.write_layer(
        tmp_path / "much" / "longer" / "staging" / "path", tmp_path / "b.tar", source_date_epoch=SDE
    )
    assert one.diff_id == two.diff_id


def test_a_wheel_that_does_not_match_its_record_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BuildError, match=r"installing demo-1\.0-py3-none-any\.whl failed"):
        wheels.install([_wheel(tmp_path, tamper=True)], tmp_path / "root", site_packages=SITE)


def _tar(path: Path, entries: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in entries.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), SDE
            tar.addfile(info, io.BytesIO(data))
    return path


def test_record_round_trip_and_first_differing_entry(tmp_path: Path) -> None:
    good = _tar(tmp_path / "good.tar", {"etc/a": b"1", "usr/bin/python3": b"elf", "usr/z": b"z"})
    bad = _tar(tmp_path / "bad.tar", {"etc/a": b"1", "usr/bin/python3": b"ELF", "usr/z": b"z"})
    path = tmp_path / "layers.lock"
    record.write(path, {"base": record.expected("k1", layers.sha256_file(good), good)})
    recorded = record.read(path)
    assert recorded["base"].diff_id == layers.sha256_file(good) and len(recorded["base"].entries) == 3
    record.check("base", path, recorded["base"], "k1", layers.sha256_file(good), good)
    with pytest.raises(ReproducibilityError) as caught:
        record.check("base", path, recorded["base"], "k1", layers.sha256_file(bad), bad)
    assert "first differing tar entry: usr/bin/python3: content" in caught.value.message
    assert caught.value.exit_code == 7 and "--record-layers" in caught.value.hint
    with pytest.raises(ReproducibilityError, match=r"inputs .* changed"):
        record.check("base", path, recorded["base"], "k2", layers.sha256_file(good), good)
    with pytest.raises(ReproducibilityError, match="records no digest for the wheels layer"):
        record.check("wheels", path, recorded.get("wheels"), "k1", layers.sha256_file(good), good)


def test_record_names_extra_missing_and_metadata_differences(tmp_path: Path) -> None:
    a = record.listing(_tar(tmp_path / "a.tar", {"a": b"1", "b": b"2"}))
    b = record.listing(_tar(tmp_path / "b.tar", {"a": b"1", "b": b"2", "c": b"3"}))
    assert record.first_difference(a, b) == "extra entry 'c' (3 entries, recorded 2)"
    assert record.first_difference(b, a) == "missing entry 'c' (2 entries, recorded 3)"
    changed = tuple((*row[:5], str(SDE - 1), *row[6:]) if row[0] == "b" else row for row in a)
    assert record.first_difference(a, changed) == f"b: mtime '{SDE - 1}', recorded '{SDE}'"
    assert "tar encoding differs" in record.first_difference(a, a)


def test_a_malformed_record_is_a_config_error(tmp_path: Path) -> None:
    assert record.read(tmp_path / "absent") == {}
    (tmp_path / "bad").write_text('{"format": 9}')
    with pytest.raises(ConfigError, match="not a valid layer record"):
        record.read(tmp_path / "bad")


def test_source_copy_keeps_build_packages_and_drops_build_outputs(tmp_path: Path) -> None:
    from terminai_sandbox.assemble import copy_sources

    root = tmp_path / "checkout"
    package = root / "packages" / "terminai-sandbox"
    (package / "src" / "terminai_sandbox" / "build").mkdir(parents=True)
    (package / "src" / "terminai_sandbox" / "build" / "__init__.py").write_text("")
    (package / "build" / "lib").mkdir(parents=True)  # a setuptools build output
    (package / "src" / "terminai_sandbox.egg-info").mkdir()
    (package / "src" / "terminai_sandbox" / "__pycache__").mkdir()
    for part in ("images", "contracts", "packages/terminai-apts"):
        (root / part).mkdir(parents=True, exist_ok=True)
    copy = copy_sources(root, tmp_path / "copy")
    copied = copy / "packages" / "terminai-sandbox"
    assert (copied / "src" / "terminai_sandbox" / "build" / "__init__.py").exists()
    assert not (copied / "build").exists() and not (copied / "src" / "terminai_sandbox.egg-info").exists()
    assert not (copied / "src" / "terminai_sandbox" / "__pycache__").exists()


def test_the_committed_record_matches_the_committed_locks() -> None:
    """A lock changed without 'build --record-layers' fails here, before any build."""
    from terminai_sandbox.assemble import BuildOptions, lock_only_inputs, repo_root

    recorded = record.read(repo_root() / "images" / "sandbox" / record.RECORD_NAME)
    assert set(recorded) == {"base", "wheels"}
    inputs = lock_only_inputs(BuildOptions())
    assert {name: e.inputs for name, e in recorded.items()} == inputs
    assert all(e.diff_id.startswith("sha256:") and e.entries for e in recorded.values())
