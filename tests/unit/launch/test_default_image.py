"""The default image a release bakes into the launcher: reading it, refusing it, baking it."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest
from terminai_sandbox import __version__
from terminai_sandbox.errors import ConfigError, ReleaseError
from terminai_sandbox.launch.config import load_launch_config
from terminai_sandbox.launch.default_image import FILE_NAME, builtin_default, default_image_path

from tests.unit.workflows import rules

ROOT = Path(__file__).resolve().parents[3]
BAKE = ROOT / "scripts" / "bake-default-image"
PACKAGE = ROOT / "packages" / "terminai-sandbox"
DIGEST = "sha256:" + "ab" * 32
GOOD = f"ghcr.io/acme/sandbox:1.2.3@{DIGEST}"


def _write(tmp_path: Path, content: str | bytes) -> Path:
    path = tmp_path / FILE_NAME
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


# --- reading ---------------------------------------------------------------------------


def test_an_absent_file_means_no_default(tmp_path: Path) -> None:
    assert builtin_default(tmp_path / FILE_NAME, version="1.2.3") is None


def test_a_checkout_carries_no_default() -> None:
    # The file is written only into release builds; a development install has no default.
    assert not default_image_path().exists(), "a baked default-image.txt is in the source tree; delete it"
    assert builtin_default() is None
    assert default_image_path().parent.name == "terminai_sandbox"


@pytest.mark.parametrize(
    "content",
    [
        GOOD,
        GOOD + "\n",
        f"  \n{GOOD}\r\n\n",
        f"127.0.0.1:5000/terminai/sandbox:1.2.3@{DIGEST}",
        f"localhost/terminai/sandbox:1.2.3@{DIGEST}",
    ],
)
def test_one_pinned_reference_of_this_version_is_the_default(tmp_path: Path, content: str) -> None:
    assert builtin_default(_write(tmp_path, content), version="1.2.3") == content.strip()


def test_the_version_defaults_to_the_launchers_own(tmp_path: Path) -> None:
    path = _write(tmp_path, f"ghcr.io/acme/sandbox:{__version__}@{DIGEST}\n")
    assert builtin_default(path) == f"ghcr.io/acme/sandbox:{__version__}@{DIGEST}"
    with pytest.raises(ConfigError, match=f"this launcher is version {__version__}"):
        builtin_default(_write(tmp_path, f"ghcr.io/acme/sandbox:{__version__}9@{DIGEST}"))


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("", "is empty"),
        ("  \n\n", "is empty"),
        ("ghcr.io/acme/sandbox:1.2.3", "not pinned to a digest"),
        (f"ghcr.io/acme/sandbox@{DIGEST}", "has no version tag"),
        (f"ghcr.io/acme/sandbox:1.2.4@{DIGEST}", "is tagged 1.2.4, but this launcher is version 1.2.3"),
        (f"ghcr.io/acme/sandbox:latest@{DIGEST}", "is tagged latest"),
        (f"acme/sandbox:1.2.3@{DIGEST}", "names no registry host"),
        (f"sandbox:1.2.3@{DIGEST}", "names no registry host"),
        (f"{GOOD}\n{GOOD}\n", "holds 2 lines"),
        (f"{GOOD}\n# comment", "holds 2 lines"),
        (f"{GOOD} {GOOD}", "malformed: .*white space"),
        ("ghcr.io/acme/sandbox:1.2.3@sha256:abc", "malformed: .*malformed digest"),
        (f"ghcr.io/Acme/sandbox:1.2.3@{DIGEST}", "malformed: .*repository name"),
        (f"ghcr.io/acme/sandbox:1.2.3@{DIGEST.upper()}", "malformed: .*digest"),
    ],
)
def test_anything_else_is_refused_naming_the_file(tmp_path: Path, content: str, problem: str) -> None:
    path = _write(tmp_path, content)
    with pytest.raises(ConfigError, match=problem) as caught:
        builtin_default(path, version="1.2.3")
    assert str(path) in caught.value.message
    assert "REGISTRY/REPOSITORY:X.Y.Z@sha256:" in caught.value.message
    assert "reinstall terminai-sandbox" in caught.value.hint and "TERMINAI_SANDBOX_IMAGE" in caught.value.hint
    assert caught.value.exit_code == 3


def test_bytes_that_are_not_utf8_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not UTF-8"):
        builtin_default(_write(tmp_path, b"\xff\xfe" + GOOD.encode()), version="1.2.3")


def test_an_unreadable_file_is_refused_not_ignored(tmp_path: Path) -> None:
    (tmp_path / FILE_NAME).mkdir()  # reading a directory fails for root too, unlike chmod 000
    with pytest.raises(ConfigError, match="cannot be read"):
        builtin_default(tmp_path / FILE_NAME, version="1.2.3")


def test_the_default_is_read_only_when_nothing_else_names_an_image(tmp_path: Path) -> None:
    path = _write(tmp_path, GOOD)
    base = {
        "available": ["docker"],
        "default_image": lambda: builtin_default(path, version="1.2.3"),
    }
    cfg = load_launch_config({}, **base)  # type: ignore[arg-type]
    assert str(cfg.image) == GOOD and cfg.image_from == "the built-in default"
    cfg = load_launch_config({"TERMINAI_SANDBOX_IMAGE": "r.example/x:1"}, **base)  # type: ignore[arg-type]
    assert str(cfg.image) == "r.example/x:1" and cfg.image_from == "TERMINAI_SANDBOX_IMAGE"
    # A damaged default stops only the launches that would use it.
    path.write_text("r.example/x:latest\n")
    cfg = load_launch_config({}, image_flag="r.example/y:2", **base)  # type: ignore[arg-type]
    assert str(cfg.image) == "r.example/y:2"
    with pytest.raises(ConfigError, match=FILE_NAME):
        load_launch_config({}, **base)  # type: ignore[arg-type]


# --- baking ----------------------------------------------------------------------------


def _bake_module() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("bake_default_image", str(BAKE))
    spec = importlib.util.spec_from_loader("bake_default_image", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def _release(version: str = "1.2.3", **overrides: object) -> dict[str, object]:
    manifest: dict[str, object] = {
        "version": version,
        "tag": f"ghcr.io/acme/sandbox:{version}",
        "reference": f"ghcr.io/acme/sandbox@{DIGEST}",
        "manifest_digest": DIGEST,
    }
    manifest.update(overrides)
    return manifest


def test_bake_writes_tag_at_digest_and_reads_it_back(tmp_path: Path) -> None:
    bake = _bake_module()
    release = tmp_path / "release.json"
    release.write_text(json.dumps(_release()))
    out = tmp_path / FILE_NAME
    assert bake.bake(release, out, version="1.2.3") == GOOD
    assert out.read_text() == GOOD + "\n"
    assert builtin_default(out, version="1.2.3") == GOOD
    assert sorted(p.name for p in tmp_path.iterdir()) == [FILE_NAME, "release.json"]  # no partial file left


@pytest.mark.parametrize(
    ("manifest", "problem"),
    [
        (_release("1.2.4"), "release.json is for version 1.2.4, but this checkout's packages are 1.2.3"),
        (_release(reference="ghcr.io/acme/sandbox:1.2.3"), "not pinned to a digest"),
        (_release(reference=f"ghcr.io/acme/other@{DIGEST}"), "name different repositories"),
        (_release(tag="ghcr.io/acme/sandbox:latest"), "is not REGISTRY/REPO:1.2.3"),
        (_release(manifest_digest="sha256:" + "cd" * 32), "disagrees with its manifest_digest"),
        (_release(tag=None), "no 'tag' string"),
        (_release(reference=""), "no 'reference' string"),
        ([], "not a JSON object"),
    ],
)
def test_bake_refuses_a_release_that_does_not_fit(tmp_path: Path, manifest: object, problem: str) -> None:
    bake = _bake_module()
    release = tmp_path / "release.json"
    release.write_text(json.dumps(manifest))
    out = tmp_path / FILE_NAME
    out.write_text("previous\n")
    with pytest.raises(ReleaseError, match=problem):
        bake.bake(release, out, version="1.2.3")
    assert out.read_text() == "previous\n"  # nothing replaced


def test_bake_refuses_a_malformed_reference(tmp_path: Path) -> None:
    bake = _bake_module()
    release = tmp_path / "release.json"
    release.write_text(json.dumps(_release(reference="ghcr.io/acme/sandbox@sha256:12")))
    with pytest.raises(ConfigError, match=r"release\.json reference .* malformed digest"):
        bake.bake(release, tmp_path / FILE_NAME, version="1.2.3")
    assert not (tmp_path / FILE_NAME).exists()


def _run_bake(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(BAKE), *args], capture_output=True, text=True, check=False)


def test_the_script_exits_non_zero_with_the_reason(tmp_path: Path) -> None:
    release = tmp_path / "release.json"
    release.write_text(json.dumps(_release(f"{__version__}.9")))
    result = _run_bake(str(release), "--output", str(tmp_path / FILE_NAME))
    assert result.returncode == ReleaseError.exit_code
    assert f"is for version {__version__}.9" in result.stderr and "hint:" in result.stderr
    assert not (tmp_path / FILE_NAME).exists()
    result = _run_bake(str(tmp_path / "missing.json"), "--output", str(tmp_path / FILE_NAME))
    assert result.returncode == ConfigError.exit_code and "cannot read" in result.stderr


def test_the_release_workflow_bakes_before_it_builds_and_attaches_the_wheels() -> None:
    jobs = rules.load(ROOT / ".github" / "workflows" / "release.yml")["jobs"]
    launcher = jobs["launcher"]
    assert {"verify", "tag"} <= set(launcher["needs"])  # only a verified, tagged digest becomes the default
    assert launcher["permissions"] == {"contents": "read"}
    runs = [str(step.get("run", "")) for step in launcher["steps"]]
    bake = next(i for i, run in enumerate(runs) if 'scripts/bake-default-image "dist/${VERSION}/release.json"' in run)
    wheels = next(i for i, run in enumerate(runs) if "pip wheel" in run)
    written = next(i for i, run in enumerate(runs) if "terminai-sandbox release manifest" in run)
    assert written < bake < wheels
    assert "packages/terminai-sandbox" in runs[wheels]
    assert "launcher" in jobs["publish"]["needs"]
    assert any("dist/wheels/*.whl" in str(step.get("run", "")) for step in jobs["publish"]["steps"])


@pytest.mark.slow
def test_a_wheel_built_after_baking_carries_the_default(tmp_path: Path) -> None:
    # Built from a copy: the real source tree must never hold a baked file.
    source = tmp_path / "terminai-sandbox"
    shutil.copytree(
        PACKAGE,
        source,
        symlinks=False,  # _version.py links into terminai-apts, outside the copy
        ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "*.pyc", FILE_NAME),
    )
    release = tmp_path / "release.json"
    release.write_text(json.dumps(_release(__version__)))
    baked = source / "src" / "terminai_sandbox" / FILE_NAME
    result = _run_bake(str(release), "--output", str(baked))
    assert result.returncode == 0, result.stderr
    expected = f"ghcr.io/acme/sandbox:{__version__}@{DIGEST}"
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation"]
    subprocess.run([*pip_wheel, "-w", str(tmp_path / "wheels"), str(source)], check=True, capture_output=True)
    (wheel,) = (tmp_path / "wheels").glob("terminai_sandbox-*.whl")
    assert wheel.name.startswith(f"terminai_sandbox-{__version__}-")
    with zipfile.ZipFile(wheel) as archive:
        text = archive.read(f"terminai_sandbox/{FILE_NAME}").decode()
        archive.extract(f"terminai_sandbox/{FILE_NAME}", tmp_path / "unpacked")
    assert text == expected + "\n"
    assert builtin_default(tmp_path / "unpacked" / "terminai_sandbox" / FILE_NAME) == expected
    assert not default_image_path().exists()
