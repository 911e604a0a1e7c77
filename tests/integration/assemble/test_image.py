from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import docker
import pytest
from terminai_sandbox.assemble import BuildOptions, BuildResult, build_image, check_reproducible, repo_root
from terminai_sandbox.contracts import run_contracts
from terminai_sandbox.engine.client import DockerApi
from terminai_sandbox.errors import ContractError, ReproducibilityError

from tests.fixtures.image import tapts_without_transit

ROOT = repo_root()
NOW = "2026-11-21T12:00:00Z"


def run(engine: DockerApi, image: str, *cmd: str, **kw: object) -> tuple[int, str, str]:
    code, out, err = engine.run(image, list(cmd), network_mode="none", **kw)
    return code, out.decode(), err.decode()


def test_same_inputs_give_the_same_digests(built_image: BuildResult, tmp_path: Path) -> None:
    # A second build with cold caches, another directory and umask 077 (the CLI's --check-reproducible).
    first, second = check_reproducible(BuildOptions(output_dir=tmp_path / "a", load=False))
    assert first.manifest_digest == second.manifest_digest
    assert first.config_digest == built_image.config_digest
    assert first.diff_ids == built_image.diff_ids


def test_engine_image_id_is_the_assembled_config_digest(engine: DockerApi, built_image: BuildResult) -> None:
    image = docker.from_env().images.get(built_image.reference)  # read by the docker SDK, not our client
    assert image.id == built_image.config_digest
    assert built_image.reference.endswith(":0.1.0") and "latest" not in image.tags
    labels = image.labels
    manifest = json.loads((ROOT / "contracts" / "t-apts" / "contract.json").read_text())
    assert labels["dev.terminai.contract.version"] == manifest["contract_version"]
    assert labels["org.opencontainers.image.version"] == "0.1.0"
    index = json.loads((built_image.oci_layout.root / "index.json").read_text())
    assert index["manifests"][0]["digest"] == built_image.manifest_digest


def test_container_runs_as_non_root_without_build_leftovers(engine: DockerApi, built_image: BuildResult) -> None:
    code, out, err = run(
        engine,
        built_image.config_digest,
        "sh",
        "-c",
        "id -u; id -un; ls -A /var/lib/apt/lists /var/cache/apt/archives | grep -c deb || true; "
        "wc -c < /etc/machine-id",
    )
    assert code == 0, err
    assert out.split() == ["10001", "sandbox", "0", "0"]


def test_cleanup_planner_runs_inside_on_a_mounted_fixture(
    engine: DockerApi, built_image: BuildResult, tmp_path: Path
) -> None:
    downloads = tmp_path / "Downloads"
    subprocess.run(
        [sys.executable, str(ROOT / "examples" / "make_sample_downloads.py"), str(downloads), "--now", NOW], check=True
    )
    os.chmod(tmp_path, 0o755)
    code, out, err = run(
        engine,
        built_image.config_digest,
        "python3",
        "-m",
        "apts.action.cleanup",
        "/data",
        "--now",
        NOW,
        volumes={str(downloads): {"bind": "/data", "mode": "ro"}},
        read_only=True,
    )
    assert code == 0, err
    plan = json.loads(out)
    host = json.loads(
        subprocess.run(
            [sys.executable, "-m", "apts.action.cleanup", str(downloads), "--now", NOW],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    assert plan["counts"] == host["counts"] and plan["counts"]["DELETE"] == 6
    assert [e["label"] for e in plan["entries"]] == [e["label"] for e in host["entries"]]


def test_contract_suite_passes_inside_the_image(engine: DockerApi, built_image: BuildResult, tmp_path: Path) -> None:
    report = run_contracts(engine, built_image.config_digest, output_dir=tmp_path)
    assert report.ok and len(report.passed) >= 25 and not report.failed
    assert report.junit is not None and "testcase" in report.junit.read_text()


@pytest.fixture(scope="module")
def broken_image(engine: DockerApi, built_image: BuildResult, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The release recipe with a T-APTS whose model lacks TRANSIT (the original field failure)."""
    work = tmp_path_factory.mktemp("broken")
    source = tapts_without_transit(work)
    tag = "terminai/sandbox-broken:test"
    build_image(BuildOptions(output_dir=work / "out", tapts_source=source, tag=tag))
    yield tag
    engine.remove_image(tag, force=True)


def test_broken_image_fails_contracts_naming_the_missing_member(engine: DockerApi, broken_image: str) -> None:
    with pytest.raises(ContractError) as caught:
        run_contracts(engine, broken_image)
    assert "terminai_apts.model.ObjectTableLabels.TRANSIT" in caught.value.message


def test_broken_image_entrypoint_refuses_before_the_command_runs(engine: DockerApi, broken_image: str) -> None:
    code, out, err = run(engine, broken_image, "sh", "-c", "echo COMMAND-RAN")
    assert code == 70
    assert "COMMAND-RAN" not in out
    assert "ObjectTableLabels.TRANSIT: enum member missing" in err
    assert "image is incompatible" in err


def test_lock_check_reports_a_locked_version_gone_from_the_mirror(tmp_path: Path) -> None:
    from terminai_sandbox.assemble import debian
    from terminai_sandbox.assemble.spec import load_spec

    spec = load_spec(ROOT / "images" / "sandbox" / "image.toml")
    lock = debian.read_lock(spec.debian_lock)
    # One `apt-get update` of the real mirrors (about 14 s) checks both: the lock as it is,
    # with one more entry that locks its first package at a version no mirror ever had.
    first = dataclasses.replace(lock.packages[0], version="0.0.1-never")
    report = debian.drift(spec, dataclasses.replace(lock, packages=(*lock.packages, first)))
    assert [line for line in report if line.startswith("gone:")] == [
        f"gone: {first.name} 0.0.1-never is no longer on the mirrors"
    ]  # every version the real lock names is still on the mirrors
    assert f"newer: {first.name} 0.0.1-never -> " in "\n".join(report)


def test_python_layers_hold_the_image_interpreters_bytecode_and_scripts(
    engine: DockerApi, built_image: BuildResult
) -> None:
    # Every module of our layers has a checked-hash .pyc that the image's own python3 wrote
    # (its magic number, not the host's), and console scripts name the image's interpreter.
    probe = (
        "import importlib.util, pathlib, sys, sysconfig\n"
        "site = pathlib.Path('/usr/local/lib/python%d.%d/dist-packages' % sys.version_info[:2])\n"
        "sources = sorted(site.rglob('*.py'))\n"
        "bad = [str(s) for s in sources if not (\n"
        "    pathlib.Path(importlib.util.cache_from_source(str(s))).is_file()\n"
        "    and pathlib.Path(importlib.util.cache_from_source(str(s))).read_bytes()[:8]\n"
        "    == importlib.util.MAGIC_NUMBER + bytes([3, 0, 0, 0]))]\n"
        "print(len(sources), len(bad), bad[:3])\n"
        "print(open('/usr/local/bin/terminai-apts').readline().strip())\n"
    )
    code, out, err = run(engine, built_image.config_digest, "python3", "-c", probe, read_only=True)
    assert code == 0, err
    counts, shebang = out.splitlines()
    total, bad, _ = counts.split(" ", 2)
    assert int(total) > 50 and bad == "0", counts
    assert shebang == "#!/usr/bin/python3 -I"


def test_a_layer_that_departs_from_layers_lock_fails_naming_the_entry(built_image: BuildResult, tmp_path: Path) -> None:
    # The same locks with a record that expects one different file in the base: the build
    # must refuse (exit 7) and name that entry and field, not just two digests.
    from terminai_sandbox.assemble import record

    spec_dir = tmp_path / "sandbox"
    shutil.copytree(ROOT / "images" / "sandbox", spec_dir)
    path = spec_dir / record.RECORD_NAME
    recorded = record.read(path)
    base = recorded["base"]
    index = next(i for i, row in enumerate(base.entries) if row[0] == "usr/bin/python3.13")
    row = base.entries[index]
    forged = (*row[:8], "0" * 20, row[9])
    recorded["base"] = record.Expected(
        inputs=base.inputs,
        diff_id="sha256:" + "0" * 64,
        entries=(*base.entries[:index], forged, *base.entries[index + 1 :]),
    )
    record.write(path, recorded)
    with pytest.raises(ReproducibilityError) as caught:
        build_image(BuildOptions(spec_path=spec_dir / "image.toml", output_dir=tmp_path / "out", load=False))
    assert caught.value.exit_code == 7
    assert built_image.diff_ids[0] in caught.value.message
    assert "first differing tar entry: usr/bin/python3.13: content" in caught.value.message
    assert "--record-layers" in caught.value.hint
