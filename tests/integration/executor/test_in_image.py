"""The restricted executor inside the built image: non-root, read-only root, no capabilities."""

from __future__ import annotations

import json

from terminai_sandbox.assemble import BuildResult
from terminai_sandbox.engine.client import DockerApi

HARDENED = {
    "network_mode": "none",
    "read_only": True,
    "tmpfs": {"/tmp": "rw,size=64m"},
    "cap_drop": ["ALL"],
    "security_opt": ["no-new-privileges"],
}


def _exec(engine: DockerApi, image: BuildResult, code: str, *args: str) -> tuple[int, dict[str, object]]:
    script = f'printf "%s" "$CODE" | terminai-apts exec --json {" ".join(args)}'
    status, out, _ = engine.run(image.config_digest, ["sh", "-c", script], environment={"CODE": code}, **HARDENED)
    return status, json.loads(out)


def test_executor_runs_and_refuses_as_the_image_user(engine: DockerApi, built_image: BuildResult) -> None:
    status, result = _exec(engine, built_image, "import math\nprint(math.sqrt(16))")
    assert status == 0 and result["success"] is True and result["stdout"] == "4.0\n"
    status, result = _exec(engine, built_image, "import os\nos.system('id')")
    assert status == 1 and result["success"] is False and "not allowed" in str(result["error"])


def test_executor_limits_hold_without_root(engine: DockerApi, built_image: BuildResult) -> None:
    status, result = _exec(engine, built_image, "while True:\n    pass", "--timeout", "1")
    assert status == 1 and result["timed_out"] is True
    status, result = _exec(engine, built_image, "x = 'a' * (200 * 1024 * 1024)", "--memory-mb", "50")
    assert status == 1 and result["memory_exceeded"] is True
