"""A registry that cannot serve the image is the registry's exit code (9) whichever step
meets it: resolving a tag (step 2) or pulling the verified digest (step 4, once 13)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

DIGEST = "sha256:" + "ab" * 32


@pytest.mark.parametrize("image", [f"127.0.0.1:1/absent/x@{DIGEST}", "127.0.0.1:1/absent/x:1.0"])
def test_an_unreachable_registry_exits_9_at_either_step(image: str) -> None:
    launcher = str(Path(sys.executable).with_name("terminai-sandbox"))
    done = subprocess.run(
        [launcher, "preflight", "--image", image, "--unsafe-skip-verify"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TERMINAI_SANDBOX": "docker"},
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 9, done.stderr
    assert "Traceback" not in done.stderr
