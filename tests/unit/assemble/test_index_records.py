"""The archive index lookup reads only the blocks that can hold a wanted package, and finds
exactly what parsing every paragraph with python-debian finds."""

from __future__ import annotations

from pathlib import Path

import pytest
from terminai_sandbox.assemble.debian import Collected, _index_records, paragraphs

PACKAGES = """Package: libc6
Version: 2.41-12
SHA256: aaaa
Description: GNU C Library
 Package: python3 (a continuation line, not a field)

Package: python3
Version: 3.13.5-1
SHA256: bbbb
\t
Package: python3
Version: 3.13.5-2
SHA256: cccc

Package: perl-base  \n\
Version: 5.40.1-6
SHA256: dddd

Package: zlib1g
Version: 1:1.3.dfsg+really1.3.1-1+b1
SHA256: eeee
"""


def _full_parse(text: str, wanted: dict[str, str]) -> dict[tuple[str, str], dict[str, str]]:
    found = {}
    for fields in paragraphs(text):
        if wanted.get(fields.get("Package", "")) == fields.get("Version"):
            found[(fields["Package"], fields["Version"])] = fields
    return found


@pytest.mark.parametrize(
    "wanted",
    [
        {"python3": "3.13.5-2"},  # the second paragraph of a block split by a whitespace-only line
        {"python3": "3.13.5-1", "perl-base": "5.40.1-6", "zlib1g": "1:1.3.dfsg+really1.3.1-1+b1"},
        {"libc6": "2.41-12"},
        {"libc6": "2.41-13"},  # not in the index
        {},
    ],
)
def test_the_filtered_lookup_finds_what_a_full_parse_finds(tmp_path: Path, wanted: dict[str, str]) -> None:
    index = tmp_path / "Packages"
    index.write_text(PACKAGES)
    found = _index_records(Collected(status="", packages_files=(index,), release_dates=()), wanted)
    assert found == _full_parse(PACKAGES, wanted)
    assert {key for key in found} == {
        (n, v) for n, v in wanted.items() if f"Package: {n}" in PACKAGES and v != "2.41-13"
    }
