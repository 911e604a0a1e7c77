"""Importing the kube room loads no launcher module: a Pod's hardening comes from the same
values a session's does (``terminai_sandbox.common.hardening``), not from ``launch``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "module", ["terminai_sandbox.kube", "terminai_sandbox.kube.hardening", "terminai_sandbox.kube.render"]
)
def test_importing_kube_loads_no_launch_or_engine_module(module: str) -> None:
    code = f"import json, sys, {module}; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=60, check=True)
    loaded = json.loads(done.stdout)
    assert module in loaded
    assert not [m for m in loaded if m.startswith(("terminai_sandbox.launch", "terminai_sandbox.engine"))]


def test_a_pod_and_a_session_are_hardened_from_the_same_values() -> None:
    from terminai_sandbox.common import hardening
    from terminai_sandbox.kube.hardening import container_security_context

    context = container_security_context()
    assert context["capabilities"]["drop"] == list(hardening.DROPPED_CAPABILITIES)
    assert context["runAsUser"] == hardening.IMAGE_UID and context["allowPrivilegeEscalation"] is False
