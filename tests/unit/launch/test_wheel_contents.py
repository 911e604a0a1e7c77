"""The launcher's wheel holds the launcher, not the checkout's dev tools.

``terminai_sandbox_dev`` (the loopback registry of tests and ``make demo``, registering
runsc with dockerd for ``scripts/ensure-engine``) sits next to the package in ``src/`` and is
left out by the package list in ``packages/terminai-sandbox/pyproject.toml``. The wheel is
built by pip, as a release builds it, from a copy of the package.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "packages" / "terminai-sandbox"
INCLUDE = 'include = ["terminai_sandbox", "terminai_sandbox.*"]\n'


def _wheel_names(tmp_path: Path, *, keep_package_list: bool = True) -> list[str]:
    source = tmp_path / "terminai-sandbox"
    shutil.copytree(
        PACKAGE,
        source,
        symlinks=False,  # _version.py links into terminai-apts, outside the copy
        ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "*.pyc", "default-image.txt"),
    )
    if not keep_package_list:
        pyproject = source / "pyproject.toml"
        text = pyproject.read_text()
        assert INCLUDE in text
        pyproject.write_text(text.replace(INCLUDE, ""))
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation"]
    subprocess.run([*pip_wheel, "-w", str(tmp_path / "wheels"), str(source)], check=True, capture_output=True)
    (wheel,) = (tmp_path / "wheels").glob("terminai_sandbox-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


def _dev_tools(names: list[str]) -> list[str]:
    return [
        n
        for n in names
        if n.startswith("terminai_sandbox_dev/") or n.endswith(("/localregistry.py", "/daemon_config.py"))
    ]


@pytest.mark.slow
def test_the_wheel_holds_the_launcher_and_none_of_the_dev_tools(tmp_path: Path) -> None:
    names = _wheel_names(tmp_path)
    assert _dev_tools(names) == []
    for shipped in (
        "console.py",
        "contracts.py",
        "wheels.py",
        "layers.py",
        "common/trust_options.py",
        "launch/entry.py",
    ):
        assert f"terminai_sandbox/{shipped}" in names
    assert not any(name.startswith("terminai_sandbox_dev") for name in names)


@pytest.mark.slow
def test_without_the_package_list_the_dev_tools_would_ship(tmp_path: Path) -> None:
    # The package list is what keeps them out: drop it and the same build carries them.
    names = _wheel_names(tmp_path, keep_package_list=False)
    assert "terminai_sandbox_dev/localregistry.py" in _dev_tools(names)
    assert "terminai_sandbox_dev/daemon_config.py" in _dev_tools(names)


def test_the_dev_tools_still_import_in_a_checkout() -> None:
    from terminai_sandbox_dev import daemon_config, localregistry

    assert callable(localregistry.loopback_registry) and callable(daemon_config.ensure_runsc)
