"""Host side of the harness: run raw code through the production host client."""

from __future__ import annotations

import json
from collections.abc import Iterable

from terminai_apts.executor.host import run, zygote_client
from terminai_apts.executor.policy import ApiSpec, SandboxConfig

DEFAULT = SandboxConfig(timeout_seconds=10, security_mode="standard")


_ZYGOTES: dict[frozenset[str], zygote_client.ZygoteClient] = {}


def zygote(skip: frozenset[str] = frozenset()) -> zygote_client.ZygoteClient:
    """The harness zygote with ``skip`` switched off (one per set, restarted if dead)."""
    current = _ZYGOTES.get(skip)
    if current is None or not current.alive():
        current = _ZYGOTES[skip] = zygote_client.ZygoteClient(
            module="tests.breach.zygote", args=(",".join(sorted(skip)),)
        )
    return current


def breach(
    code: str, config: SandboxConfig = DEFAULT, *, api: ApiSpec | None = None, skip: Iterable[str] = ()
) -> run.ExecutionResult:
    """Run unrestricted ``code`` in a hardened run (with ``skip`` steps switched off)."""
    frozen = frozenset(skip)
    # No host-side validation: the layers above the OS boundary are assumed fallen.
    return run._run_fresh(code, config, api.to_json() if api else None, lambda: zygote(frozen))


def report(code: str, **kwargs: object) -> dict[str, object]:
    """Run ``code``, which must print one JSON object as its last line; that object."""
    result = breach(code, **kwargs)  # type: ignore[arg-type]
    assert result.success, f"{result.error_type}: {result.error}"
    data: dict[str, object] = json.loads(result.stdout.splitlines()[-1])
    return data


def close_all() -> None:
    """End every harness zygote (each test module's own are ended after it)."""
    while _ZYGOTES:
        _, client = _ZYGOTES.popitem()
        client.close()
