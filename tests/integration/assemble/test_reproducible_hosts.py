"""The same commit gives the same image from any checkout, with any host Python.

Two ``git clone``s of this checkout at paths of different lengths, cloned and built under
different umasks, each built from its own fresh virtual environment: one made by the
interpreter running the tests (third-party libraries inherited), one by a second host
Python (``TERMINAI_SECOND_PYTHON``, default Debian's ``/usr/bin/python3``) with the
pinned tools installed from the clone's ``requirements-dev.lock``. Both must give the
manifest digest the session build gave, and the lock-only layers must carry the digests
recorded in ``layers.lock``.

The same holds for the multi-platform index (marker ``multiarch``): two clones give the
session's index digest and, platform by platform, its manifests.

Cost control: both builds reuse the session's cached Debian base (it reads neither the
host's Python nor the checkout, and every build checks it against ``layers.lock``, which
the cold second build of ``--check-reproducible`` proves); every Python stage is cold.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from terminai_sandbox._version import __version__
from terminai_sandbox.assemble import BuildOptions, BuildResult, cached_base, independent_build, repo_root
from terminai_sandbox.assemble.platforms import IndexResult

ROOT = repo_root()
SECOND_PYTHON = Path(os.environ.get("TERMINAI_SECOND_PYTHON", "/usr/bin/python3"))

pytestmark = [pytest.mark.slow]


def _clone(destination: Path, umask: int) -> Path:
    old = os.umask(umask)
    try:
        subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(destination)], check=True)
    finally:
        os.umask(old)
    return destination


def _head() -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()


def _dirty() -> bool:
    status = subprocess.run(
        ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return bool(status.strip())


def _python_version(python: Path) -> str:
    return subprocess.run(
        [str(python), "-c", "import sys; print(sys.version.split()[0])"], capture_output=True, text=True, check=True
    ).stdout.strip()


def _layer_bytes(result: dict[str, object], index: int) -> bytes:
    layout = Path(str(result["oci_layout"]))
    diff_id = str(list(result["diff_ids"])[index])  # type: ignore[call-overload]
    # The docker archive holds the uncompressed layers by diff_id.
    with tarfile.open(Path(str(result["archive"]))) as archive:
        member = archive.extractfile(f"blobs/sha256/{diff_id.removeprefix('sha256:')}")
        assert member is not None, f"{diff_id} not in {layout}"
        return member.read()


def test_two_clones_and_two_host_pythons_give_one_digest(built_image: BuildResult, tmp_path: Path) -> None:
    if _dirty():
        pytest.fail("commit the checkout first: the clones build HEAD, the session image builds the work tree")
    assert SECOND_PYTHON.exists(), f"no second host Python at {SECOND_PYTHON} (set TERMINAI_SECOND_PYTHON)"
    base = cached_base(BuildOptions())
    assert base.exists(), "the session build caches the Debian base"
    short = _clone(tmp_path / "a", 0o022)
    long = _clone(tmp_path / "a-much-longer-directory-name" / "with" / "another-checkout-of-the-same-commit", 0o077)
    revision = _head()
    first = independent_build(
        short,
        tmp_path / "wa",
        python=Path(sys.executable),
        inherit=True,
        revision=revision,
        umask=0o022,
        seed_base=base,
    )
    second = independent_build(
        long,
        tmp_path / "wb-longer-work-directory",
        python=SECOND_PYTHON,
        inherit=False,
        requirements=long / "requirements-dev.lock",
        revision=revision,
        umask=0o077,
        seed_base=base,
    )
    print(
        f"host pythons: {sys.executable} {_python_version(Path(sys.executable))},",
        f"{SECOND_PYTHON} {_python_version(SECOND_PYTHON)}",
    )
    assert first["diff_ids"] == second["diff_ids"]
    assert first["config_digest"] == second["config_digest"]
    assert first["manifest_digest"] == second["manifest_digest"]
    # The session build (editable install, the repository's own paths) agrees too.
    assert first["diff_ids"] == list(built_image.diff_ids)
    recorded = json.loads((ROOT / "images" / "sandbox" / "layers.lock").read_text())["layers"]
    assert first["diff_ids"][:2] == [recorded["base"]["diff_id"], recorded["wheels"]["diff_id"]]
    # Nothing of either host reaches the Python layers: no checkout, venv or interpreter path.
    for index in (1, 2):
        data = _layer_bytes(first, index)
        for leak in (str(short), str(long), str(tmp_path), sys.prefix, sys.executable):
            assert leak.encode() not in data, f"{leak} in layer {index}"
        assert b"#!/usr/bin/python3 -I\n" in data or index == 1


@pytest.mark.multiarch
def test_two_clones_and_two_host_pythons_give_one_index(multiarch_index: IndexResult, tmp_path: Path) -> None:
    """The index and each platform's manifest repeat from two clones (arm64 under qemu-user).

    Not in `make test` (marker ``multiarch``; `make image-multiarch` runs it): every Python
    stage of both platforms is built cold in each clone, the arm64 ones under emulation.
    """
    if _dirty():
        pytest.fail("commit the checkout first: the clones build HEAD, the session index builds the work tree")
    assert SECOND_PYTHON.exists(), f"no second host Python at {SECOND_PYTHON} (set TERMINAI_SECOND_PYTHON)"
    platforms = tuple(result.platform for result in multiarch_index.platforms)
    bases = [cached_base(BuildOptions(platform=platform)) for platform in platforms]
    assert all(base.exists() for base in bases), "the session's index build caches each platform's Debian base"
    short = _clone(tmp_path / "a", 0o022)
    long = _clone(tmp_path / "a-much-longer-directory-name" / "with" / "another-checkout-of-the-same-commit", 0o077)
    revision = _head()
    builds = [
        independent_build(
            short,
            tmp_path / "wa",
            python=Path(sys.executable),
            inherit=True,
            revision=revision,
            umask=0o022,
            seed_bases=bases,
            platforms=platforms,
        ),
        independent_build(
            long,
            tmp_path / "wb-longer-work-directory",
            python=SECOND_PYTHON,
            inherit=False,
            requirements=long / "requirements-dev.lock",
            revision=revision,
            umask=0o077,
            seed_bases=bases,
            platforms=platforms,
        ),
    ]
    session = multiarch_index.by_platform()
    for built in builds:
        assert built["index_digest"] == multiarch_index.index_digest
        for platform, result in built["platforms"].items():
            assert result["manifest_digest"] == session[platform].manifest_digest, platform
            assert result["config_digest"] == session[platform].config_digest, platform
            assert result["diff_ids"] == list(session[platform].diff_ids), platform
    # skopeo (containers/image) reads the same index bytes from both clones' layouts.
    raws = [
        subprocess.run(
            ["skopeo", "inspect", "--raw", f"oci:{built['oci_index']}:{__version__}"],
            capture_output=True,
            check=True,
            timeout=120,
        ).stdout
        for built in builds
    ]
    assert (
        raws[0]
        == raws[1]
        == (multiarch_index.layout / "blobs" / "sha256")
        .joinpath(multiarch_index.index_digest.removeprefix("sha256:"))
        .read_bytes()
    )
