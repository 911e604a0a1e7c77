"""The run's configuration crosses into the child as JSON and is read back as a SandboxConfig.

``from_json`` is strict: the child never runs with a limit it did not understand (a missing
key left at its default, a string where a number belongs, ``true`` read as 1).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from terminai_apts.errors import UsageError
from terminai_apts.executor.policy import SandboxConfig


def _wire(config: SandboxConfig) -> dict[str, Any]:
    wire: dict[str, Any] = json.loads(json.dumps(config.to_json()))  # exactly what the pipe carries
    return wire


@pytest.mark.parametrize(
    "config",
    [
        SandboxConfig(),
        SandboxConfig(max_memory_mb=64, timeout_seconds=2.5, cpu_seconds=7, security_mode="strict"),
        SandboxConfig(scratch=True, scratch_file_mb=3, max_open_files=9, unprivileged_uid=1000, unprivileged_gid=1001),
        SandboxConfig(timeout_seconds=5, max_output_bytes=1, security_mode="standard"),
    ],
)
def test_the_child_reads_back_what_the_host_wrote(config: SandboxConfig) -> None:
    back = SandboxConfig.from_json(_wire(config))
    assert back.to_json() == config.to_json()
    assert back.effective_cpu_seconds == config.effective_cpu_seconds
    assert back.scratch_file_mb * 1024 * 1024 == config.to_json()["scratch_file_bytes"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"rlimit_nproc": 1}, r"unknown keys \['rlimit_nproc'\]"),
        ({"max_memory_mb": None}, r"max_memory_mb is None, not int"),
        ({"max_memory_mb": "64"}, r"max_memory_mb is '64', not int"),
        ({"cpu_seconds": True}, r"cpu_seconds is True, not int"),
        ({"unprivileged_uid": 0.0}, r"unprivileged_uid is 0\.0, not int"),
        ({"scratch": 1}, r"scratch is 1, not bool"),
        ({"security_mode": ["high"]}, r"security_mode is \['high'\], not str"),
        ({"timeout_seconds": "30"}, r"timeout_seconds is '30', not int"),
        ({"scratch_file_bytes": 1024 * 1024 + 1}, r"scratch_file_bytes is not a whole MiB"),
        ({"security_mode": "none"}, r"unknown security mode 'none'"),
        ({"max_memory_mb": 1}, r"max_memory_mb must be at least 16"),
    ],
)
def test_a_wrong_key_or_type_is_refused(change: dict[str, object], message: str) -> None:
    wire = {**_wire(SandboxConfig()), **change}
    with pytest.raises(UsageError, match=message):
        SandboxConfig.from_json(wire)


@pytest.mark.parametrize("key", sorted(SandboxConfig().to_json()))
def test_a_missing_key_is_refused_not_defaulted(key: str) -> None:
    wire = _wire(SandboxConfig())
    del wire[key]
    with pytest.raises(UsageError, match=rf"missing keys \['{key}'\] and unknown keys \[\]"):
        SandboxConfig.from_json(wire)


@pytest.mark.parametrize("data", [[], "{}", None, 3])
def test_not_an_object_is_refused(data: object) -> None:
    with pytest.raises(UsageError, match="must be a JSON object"):
        SandboxConfig.from_json(data)
