"""scripts/ensure-engine: the one place that starts dockerd, and it refuses where it must.

With DOCKER_HOST pointing elsewhere the script never installs or starts anything: it says
why no engine answered and that it starts dockerd only without DOCKER_HOST. The package's
own engine code starts nothing and names the script instead.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from terminai_sandbox.assemble import repo_root
from terminai_sandbox.engine.client import connect
from terminai_sandbox.errors import EngineError

SCRIPT = repo_root() / "scripts" / "ensure-engine"


def test_with_docker_host_set_the_script_refuses_without_starting_anything(tmp_path: Path) -> None:
    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/absent.sock"}
    done = subprocess.run(
        [sys.executable, str(SCRIPT)], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == EngineError.exit_code, done.stdout + done.stderr
    assert done.stderr.startswith("error: the container engine is not running"), done.stderr
    assert "starts dockerd only as root on Debian/Ubuntu without DOCKER_HOST" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_the_engine_client_names_the_script_when_no_engine_answers(tmp_path: Path) -> None:
    with pytest.raises(EngineError) as caught:
        connect({"DOCKER_HOST": f"unix://{tmp_path}/absent.sock"})
    assert "not running" in caught.value.message or "no container engine" in caught.value.message
    assert "scripts/ensure-engine" in caught.value.hint
