#!/usr/bin/env python3
"""`make demo`: the main job end to end on a bundled sample downloads folder.

Creates the sample folder (examples/make_sample_downloads.py), plans its cleanup with
the T-APTS planner and prints a summary of the plan. Nothing is changed on disk.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOW = "2026-11-21T12:00:00Z"


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="sandbox-demo-") as tmp:
        downloads = Path(tmp) / "Downloads"
        subprocess.run(
            [sys.executable, str(ROOT / "examples" / "make_sample_downloads.py"), str(downloads), "--now", NOW],
            check=True,
        )
        out = subprocess.run(
            [sys.executable, "-m", "apts.action.cleanup", str(downloads), "--now", NOW],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    plan = json.loads(out)
    print(f"cleanup plan for the sample downloads folder ({plan['scanned']} objects):")
    for entry in plan["entries"]:
        print(f"  {entry['label']:8} {entry['path']:40} {entry['reason']}")
    print("counts: " + ", ".join(f"{k}={v}" for k, v in sorted(plan["counts"].items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
