"""The container runtime a session runs on: ``runc`` (the engine's default) or gVisor's ``runsc``.

``runc`` means "the engine's own default runtime" (runc, or crun on some podman hosts):
the session shares the host kernel behind namespaces, capabilities and seccomp. ``runsc``
(alias ``gvisor``) puts gVisor's user-space kernel between the session and the host: the
session's system calls are served by the Sentry, and only a small, filtered set reaches
the host kernel.

How each engine is told, and how preflight knows the engine can do it:

========  =========================================  ==========================================
engine    command line                               present when
========  =========================================  ==========================================
docker    ``--runtime runsc``                        dockerd's ``GET /info`` lists ``runsc`` in
                                                     ``Runtimes`` (``scripts/ensure-engine``
                                                     registers it in daemon.json)
podman    ``--runtime /usr/bin/runsc``               the ``runsc`` binary is on PATH
          ``--runtime-flag network=none``            (``scripts/ensure-host-tools`` installs it)
========  =========================================  ==========================================

``network=none`` keeps gVisor's own network stack out of a session that has no network
anyway (docker gets the same as ``runtimeArgs`` in daemon.json). A required runtime the
engine lacks is a refusal in preflight step 1 with the script that fixes it, never a
fallback to the shared kernel.

Part of the launch kernel: standard library only.
"""

from __future__ import annotations

from terminai_sandbox.common.which import which
from terminai_sandbox.errors import ConfigError, EngineError

TYPE_CHECKING = False  # not `from typing import ...`: a launch never imports typing (~3 ms)
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

RUNTIMES = ("runc", "runsc")
ALIASES = {"gvisor": "runsc"}
DEFAULT = "runc"
RUNSC_ARGS = ("--network=none",)  # what daemon.json passes to runsc; podman gets it as --runtime-flag
# A session with a network policy reaches its proxy through a bind-mounted host Unix socket,
# which gVisor refuses unless told otherwise; dockerd knows that variant as `runsc-egress`.
EGRESS_RUNSC_ARGS = (*RUNSC_ARGS, "--host-uds=open")
EGRESS_SUFFIX = "-egress"
ACCEPTED = "runc (the engine's default), runsc or gvisor"


def runtime_label(runtime: str) -> str:
    """How preflight names the runtime in step 1 (and with it the ledger)."""
    return "runsc (gVisor)" if runtime == "runsc" else "runc (the engine's default, shared kernel)"


def parse_runtime(value: str, variable: str) -> str:
    """``runc`` or ``runsc`` from what the user wrote (``gvisor`` is ``runsc``); anything else refused."""
    low = value.strip().lower()
    name = ALIASES.get(low, low)
    if name not in RUNTIMES:
        raise ConfigError(f"{variable}={value!r} is not a container runtime", hint=f"accepted: {ACCEPTED}")
    return name


def runsc_binary(env: Mapping[str, str]) -> str | None:
    """The absolute path of ``runsc`` on the launcher's PATH, or None."""
    return which("runsc", path=env.get("PATH"))


def session_runtime(runtime: str, *, egress: bool = False) -> str:
    """The engine's name for the runtime a session runs under: with a network policy
    (``egress``), gVisor's variant that may connect to the proxy's mounted socket."""
    return runtime + EGRESS_SUFFIX if egress and runtime != DEFAULT else runtime


def engine_flags(engine: str, runtime: str, *, runsc: str | None, egress: bool = False) -> tuple[str, ...]:
    """The command-line flags that select ``runtime`` on ``engine`` (none for the default runtime).

    Podman takes the runtime as a path, so ``runsc`` is the binary preflight found.
    """
    if runtime == DEFAULT:
        return ()
    if engine == "podman":
        flags = ["--runtime", runsc or "/usr/bin/runsc"]
        for arg in EGRESS_RUNSC_ARGS if egress else RUNSC_ARGS:
            flags += ["--runtime-flag", arg.removeprefix("--")]
        return tuple(flags)
    return ("--runtime", session_runtime(runtime, egress=egress))


def missing_on_docker(runtime: str, registered: Iterable[str]) -> EngineError | None:
    """Why dockerd cannot run ``runtime`` (given the names in its ``Runtimes``), or None when it can."""
    names = sorted(registered)
    if runtime == DEFAULT or runtime in names:
        return None
    return EngineError(
        f"the sandbox runtime is {runtime} (gVisor) but dockerd has no runtime of that name "
        f"(it has: {', '.join(names) or 'none'})",
        hint="as root run scripts/ensure-host-tools (installs runsc) and scripts/ensure-engine (registers it "
        "in /etc/docker/daemon.json and reloads dockerd), or choose TERMINAI_SANDBOX_RUNTIME=runc",
    )


def missing_on_podman(runtime: str, runsc: str | None) -> EngineError | None:
    """Why podman cannot run ``runtime`` (``runsc`` is the binary found on PATH), or None when it can."""
    if runtime == DEFAULT or runsc is not None:
        return None
    return EngineError(
        "the sandbox runtime is runsc (gVisor) but runsc is not on PATH",
        hint="as root run scripts/ensure-host-tools (Debian package runsc), or choose TERMINAI_SANDBOX_RUNTIME=runc",
    )
