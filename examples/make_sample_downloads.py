#!/usr/bin/env python3
"""Create a realistic sample downloads folder that exercises every cleanup rule.

Git does not keep modification times, so the sample is generated with times relative
to ``--now`` (default: 2026-11-21T12:00:00Z, the time the demo plans with):

    python3 examples/make_sample_downloads.py DIR [--now ISO8601]
    python3 -m apts.action.cleanup DIR --now 2026-11-21T12:00:00Z

Uses only the standard library, so it also runs inside the sandbox image.
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

DEFAULT_NOW = "2026-11-21T12:00:00Z"
DAY = 86400

# (relative path, content, age in seconds)
SAMPLE: tuple[tuple[str, bytes, int], ...] = (
    ("report-q3.pdf", b"%PDF-1.7 quarterly report\n", 20 * DAY),
    ("report-q3 (1).pdf", b"%PDF-1.7 quarterly report\n", 19 * DAY),
    ("report-q3 (2).pdf", b"%PDF-1.7 quarterly report\n", 2 * DAY),
    ("photos/holiday.jpg", b"\xff\xd8\xff\xe0 jpeg bytes", 40 * DAY),
    ("photos/holiday-copy.jpg", b"\xff\xd8\xff\xe0 jpeg bytes", 39 * DAY),
    ("photos/2019/beach.png", b"\x89PNG old picture", 5 * 365 * DAY),
    ("notes.txt", b"", 3 * DAY),
    ("ubuntu-24.04-desktop-amd64.iso", b"ISO9660 image bytes", 90 * DAY),
    ("setup-tool-1.2.exe", b"MZ installer", 60 * DAY),
    ("fresh-installer.msi", b"MSI new", 5 * DAY),
    ("movie.mkv.crdownload", b"partial", 10 * DAY),
    ("dataset.tar.gz", b"still downloading", 1 * DAY),
    ("dataset.tar.gz.aria2", b"aria2 control", 1 * DAY),
    ("thesis-final.docx", b"PK thesis", 400 * DAY),
    ("just-saved.csv", b"a,b\n1,2\n", 60),
    ("invoice-2026-11.pdf", b"%PDF-1.7 invoice\n", 4 * DAY),
)


def make(root: Path, now: datetime) -> None:
    base = now.timestamp()
    for rel, content, age in SAMPLE:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        os.utime(path, (base - age, base - age))
    link = root / "shortcut-to-report.pdf"
    if not link.is_symlink():
        link.symlink_to("report-q3.pdf")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--now", default=DEFAULT_NOW, help=f"reference time (default {DEFAULT_NOW})")
    args = parser.parse_args()
    now = datetime.fromisoformat(args.now)
    now = now if now.tzinfo else now.replace(tzinfo=UTC)
    args.directory.mkdir(parents=True, exist_ok=True)
    make(args.directory, now)
    print(f"sample downloads folder written to {args.directory}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
