"""SBOM licences are SPDX: DEP-5 names mapped, free-text files read, image-derived timestamp."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from pathlib import Path

import pytest
from license_expression import get_spdx_licensing
from terminai_sandbox import licenses
from terminai_sandbox.artifacts.image_locks import ImageLocks
from terminai_sandbox.artifacts.oci_layout import OciLayout
from terminai_sandbox.errors import SbomError
from terminai_sandbox.sbom import SbomOptions, copyright_licenses, generate, os_release_distro

from tests.fixtures.oci import write_layout

DEP5_HEADER = "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\n"


@pytest.mark.parametrize(
    ("dep5", "spdx"),
    [
        ("GPL-2+", "GPL-2.0-or-later"),
        ("GPL-2", "GPL-2.0-only"),
        ("LGPL-2.1+", "LGPL-2.1-or-later"),
        ("GPL-2.0+", "GPL-2.0-or-later"),  # SPDX's deprecated alias
        ("GPL", "GPL-1.0-or-later"),  # no version: any version
        ("LGPL", "LGPL-2.0-or-later"),
        ("Apache-2", "Apache-2.0"),
        ("BSD-3-clause", "BSD-3-Clause"),
        ("Expat", "MIT"),
        ("Artistic", "Artistic-1.0-Perl"),
        ("GFDL-NIV-1.3+", "GFDL-1.3-no-invariants-or-later"),
        ("zlib", "Zlib"),
        ("public-domain", "LicenseRef-Debian-public-domain"),
        ("GPLv3+", "LicenseRef-Debian-GPLv3-or-later"),
        ("GPL-3+ with Bison exception", "GPL-3.0-or-later WITH Bison-exception-2.2"),
        ("GPL-2 with Linux-syscall-note exception", "GPL-2.0-only WITH Linux-syscall-note"),
        ("GPL-2+ with Autoconf-data exception", "GPL-2.0-or-later"),  # unknown exception: the base licence
        ("Artistic or GPL-1+", "Artistic-1.0-Perl OR GPL-1.0-or-later"),
        ("BSD-3-clause and/or GPL-3+", "BSD-3-Clause OR GPL-3.0-or-later"),
        ("Sleepycat and BSD-3-clause", "BSD-3-Clause AND Sleepycat"),
        ("GPL-1+ or Artistic, and Expat", "(Artistic-1.0-Perl OR GPL-1.0-or-later) AND MIT"),
        ("Permission is hereby granted, free of charge, to any person", None),  # free text, not a name
    ],
)
def test_dep5_names_become_spdx_expressions(dep5: str, spdx: str | None) -> None:
    found = licenses.dep5_expression(dep5)
    assert found == spdx
    if found is not None:
        parsed = get_spdx_licensing().parse(found, validate=False)
        unknown = get_spdx_licensing().unknown_license_keys(parsed)
        assert all(key.startswith("LicenseRef-") for key in unknown)


def test_a_dep5_file_gives_every_license_field_joined_with_and() -> None:
    text = DEP5_HEADER + (
        "Files: *\nCopyright: x\nLicense: GPL-2+\n\nFiles: lib/*\nCopyright: y\nLicense: LGPL-2.1+ or BSD-3-clause\n\n"
        "License: GPL-2+\n On Debian systems see /usr/share/common-licenses/GPL-2.\n"
    )
    names, expression = copyright_licenses(text)
    assert names == ("GPL-2+", "LGPL-2.1+ or BSD-3-clause")
    # the pointer to the GPL-2 text inside a DEP-5 licence paragraph is not a second licence
    assert expression == "(BSD-3-Clause OR LGPL-2.1-or-later) AND GPL-2.0-or-later"


def test_a_free_text_file_gives_the_common_licenses_it_points_to() -> None:
    text = (
        "This is the Debian prepackaged version of the GNU C Library.\n"
        "License: the whole text below is not a name\n"
        "can be found in `/usr/share/common-licenses/LGPL-2.1'.\n"
        "can be found in /usr/share/common-licenses/GPL-2.\n"
    )
    assert copyright_licenses(text) == (("GPL-2", "LGPL-2.1"), "GPL-2.0-only AND LGPL-2.1-only")
    assert copyright_licenses("no licence named here\n") == ((), None)


def test_python_licences() -> None:
    assert licenses.python_expression("Apache-2.0", None, []) == "Apache-2.0"
    assert licenses.python_expression(None, "ZPL 2.1", []) == "ZPL-2.1"
    assert licenses.python_expression(None, None, ["MIT License"]) == "MIT"
    assert licenses.python_expression(None, "Some Custom Licence", []) == "LicenseRef-Python-Some-Custom-Licence"
    assert licenses.python_expression(None, None, []) is None
    assert licenses.is_single_id("MIT") and not licenses.is_single_id("MIT OR ISC")
    assert not licenses.is_single_id("LicenseRef-Debian-public-domain")


def test_os_release_gives_the_purl_distro() -> None:
    assert os_release_distro('PRETTY_NAME="Debian GNU/Linux 13 (trixie)"\nID=debian\nVERSION_ID="13"\n') == "debian-13"


STATUS = """Package: libstdc++6
Status: install ok installed
Architecture: amd64
Source: gcc-12
Version: 12.2.0-14

Package: gcc-12-base
Status: install ok installed
Architecture: amd64
Source: gcc-12
Version: 12.2.0-14

Package: tzdata
Status: install ok installed
Architecture: all
Version: 2024a-0+deb12u1
"""


def _tar(entries: list[tarfile.TarInfo], data: dict[str, bytes]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for info in entries:
            tar.addfile(info, io.BytesIO(data[info.name]) if info.isfile() else None)
    return gzip.compress(raw.getvalue(), mtime=0)


def _image(root: Path, *, created: str | None) -> Path:
    files = {
        "var/lib/dpkg/status": STATUS.encode(),
        "usr/lib/os-release": b'ID=debian\nVERSION_ID="13"\n',
        "usr/share/doc/gcc-12-base/copyright": b"GCC.\nThe GPL is in `/usr/share/common-licenses/GPL-3'.\n",
        "usr/share/doc/tzdata/copyright": f"{DEP5_HEADER}Files: *\nCopyright: none\nLicense: public-domain\n".encode(),
    }
    entries = []
    for name, data in files.items():
        info = tarfile.TarInfo(name)
        info.size = len(data)
        entries.append(info)
    for name, target in (("etc/os-release", "../usr/lib/os-release"), ("usr/share/doc/libstdc++6", "gcc-12-base")):
        link = tarfile.TarInfo(name)
        link.type, link.linkname = tarfile.SYMTYPE, target
        entries.append(link)
    config = json.dumps({"created": created} if created else {}).encode()
    write_layout(root, config=config, layers=[_tar(entries, files)])
    return root


def test_sbom_licences_symlinked_docs_distro_and_image_timestamp(tmp_path: Path) -> None:
    layout = _image(tmp_path / "oci", created="2026-11-20T02:11:10Z")
    options = SbomOptions(
        layout=OciLayout.open(layout), repository="r.example/t/s", version="1", locks=ImageLocks.read(tmp_path)
    )
    first = generate(options)
    assert first == generate(options)  # deterministic
    # Imported here, not with the module: the validator's jsonschema builds rfc3987-syntax's
    # grammar on import (about 1.5 s), which every xdist worker would pay while collecting.
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(first) is None
    doc = json.loads(first)
    assert doc["metadata"]["timestamp"] == "2026-11-20T02:11:10+00:00"  # the image's created time, not 1970
    by_name = {c["name"]: c for c in doc["components"]}
    # libstdc++6 has no copyright file of its own: its doc directory links to gcc-12-base
    assert by_name["libstdc++6"]["licenses"] == [{"license": {"id": "GPL-3.0-only"}}]
    assert by_name["gcc-12-base"]["licenses"] == [{"license": {"id": "GPL-3.0-only"}}]
    assert by_name["tzdata"]["licenses"] == [{"expression": "LicenseRef-Debian-public-domain"}]
    assert {"name": "terminai:deb:licenses", "value": "public-domain"} in by_name["tzdata"]["properties"]
    assert by_name["tzdata"]["purl"] == "pkg:deb/debian/tzdata@2024a-0%2Bdeb12u1?arch=all&distro=debian-13"
    explicit = generate(
        SbomOptions(
            layout=OciLayout.open(layout),
            repository="r.example/t/s",
            version="1",
            locks=ImageLocks.read(tmp_path),
            source_date_epoch=86400,
        )
    )
    assert json.loads(explicit)["metadata"]["timestamp"] == "1970-01-02T00:00:00+00:00"


def test_sbom_without_a_created_time_asks_for_one(tmp_path: Path) -> None:
    layout = _image(tmp_path / "oci", created=None)
    with pytest.raises(SbomError, match="created") as caught:
        generate(
            SbomOptions(layout=OciLayout.open(layout), repository="r/t", version="1", locks=ImageLocks.read(tmp_path))
        )
    assert "--source-date-epoch" in (caught.value.hint or "")


def test_cli_sbom_takes_the_image_created_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner
    from terminai_sandbox.cli import main

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")  # a stale environment does not override the image
    layout = _image(tmp_path / "oci", created="2026-11-20T02:11:10Z")
    out = tmp_path / "sbom.json"
    result = CliRunner().invoke(main, ["sbom", str(layout), "-o", str(out), "--image-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["metadata"]["timestamp"] == "2026-11-20T02:11:10+00:00"
    bare = _image(tmp_path / "bare", created=None)
    refused = CliRunner().invoke(main, ["sbom", str(bare), "-o", str(out), "--image-dir", str(tmp_path)])
    assert refused.exit_code == 12 and "created" in refused.output
