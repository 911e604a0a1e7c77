"""The deb822 readers (python-debian) against dpkg's own answer for this machine's status file."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from terminai_sandbox.assemble.debian import installed, paragraphs
from terminai_sandbox.sbom import parse_dpkg_status

STATUS = Path("/var/lib/dpkg/status")
pytestmark = pytest.mark.skipif(
    not STATUS.is_file() or shutil.which("dpkg-query") is None, reason="needs a Debian host (dpkg)"
)


def _dpkg_installed() -> dict[str, tuple[str, str]]:
    """What dpkg-query, an independent reader of the same file, says is installed."""
    out = subprocess.run(
        ["dpkg-query", "-W", "-f", "${db:Status-Status} ${Package} ${Version} ${Architecture}\\n"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = [line.split(" ") for line in out.splitlines()]
    return {name: (version, arch) for status, name, version, arch in rows if status == "installed"}


def test_installed_packages_agree_with_dpkg_query() -> None:
    expected = _dpkg_installed()
    text = STATUS.read_text(errors="replace")
    build_side = {name: (f["Version"], f["Architecture"]) for name, f in installed(text).items()}
    sbom_side = {name: (p.version, p.architecture) for name, p in parse_dpkg_status(text).items()}
    assert build_side == expected
    assert sbom_side == expected


def test_paragraphs_read_a_signed_release_and_continuation_lines() -> None:
    signed = (
        "-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA512\n\nOrigin: Debian\n"
        "Date: Sat, 15 Nov 2025 09:00:00 UTC\nSHA256:\n abc 123 main/binary-amd64/Packages\n"
        "-----BEGIN PGP SIGNATURE-----\n\niQIzBAEBCgAdFiEE\n=abcd\n-----END PGP SIGNATURE-----\n"
    )
    assert list(paragraphs(signed)) == [{"Origin": "Debian", "Date": "Sat, 15 Nov 2025 09:00:00 UTC", "SHA256": ""}]
