"""The podman CLI as a session's engine: preflight, a project layer and the session itself.

One of the two implementations of :class:`~terminai_sandbox.engine.protocol.Engine` (the
other is :mod:`.docker`). Podman needs no daemon, so the image preflight inspects is the
image in the storage ``podman run`` reads (a podman API socket can belong to another user's
storage). The differences from docker are listed in :mod:`.protocol`.

Part of the launch kernel: standard library only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from terminai_sandbox.common import deadlines
from terminai_sandbox.common.reference import ImageRef
from terminai_sandbox.common.which import which
from terminai_sandbox.engine.cli import build_failure, build_words, last_line, saved_layer_members
from terminai_sandbox.engine.protocol import ImageFacts, image_facts
from terminai_sandbox.engine.runtime import missing_on_podman, runsc_binary
from terminai_sandbox.errors import EngineError, LaunchError

TYPE_CHECKING = False  # not `from typing import ...`: a launch never imports typing (~3 ms)
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Callable
    from typing import Any

    from terminai_sandbox.engine.protocol import TagResolver


class PodmanEngine:
    """The podman CLI as the :class:`~.protocol.Engine` of a session: preflight and the session both."""

    name = "podman"
    api = None  # no Docker API: `--deep` is refused (see contract_suite in launch.preflight)

    def __init__(self, binary: str, version: str, *, rootless: bool, env: Mapping[str, str]) -> None:
        self.binary, self.version, self.rootless, self.env = binary, version, rootless, dict(env)

    def _run(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        import subprocess  # noqa: PLC0415  (docker launches never need it)

        try:
            return subprocess.run(
                [self.binary, *args], capture_output=True, text=True, env=self.env, timeout=timeout, check=False
            )
        except OSError as exc:
            raise EngineError(f"cannot start {self.binary}: {exc.strerror}", hint="install podman") from None
        except subprocess.TimeoutExpired:
            raise EngineError(
                f"podman {args[0]} did not finish within {timeout:g} s",
                hint="run 'podman info' to see whether podman or its storage is stuck",
            ) from None

    @classmethod
    def connect(cls, env: Mapping[str, str]) -> PodmanEngine:
        binary = which("podman", path=env.get("PATH"))
        if binary is None:
            raise EngineError("podman is not installed", hint="install podman (Debian/Ubuntu: apt-get install podman)")
        probe = cls(binary, "?", rootless=os.geteuid() != 0, env=env)
        # The podman CLI sets up its storage on a cold start, which takes longer than a ping.
        result = probe._run("version", "--format", "json", timeout=deadlines.engine_probe_seconds(env, 60))
        if result.returncode != 0:
            raise EngineError(
                f"podman does not work: {last_line(result.stderr)}",
                hint="run 'podman info' to see what is wrong with its configuration or storage",
            )
        try:
            version = str(json.loads(result.stdout)["Client"]["Version"])
        except (ValueError, KeyError, TypeError):
            raise EngineError(f"podman version printed something unexpected: {result.stdout[:200]!r}") from None
        return cls(binary, version, rootless=probe.rootless, env=env)

    @property
    def host(self) -> str | None:
        return None  # the podman CLI runs both preflight and the session

    def describe(self) -> str:
        mode = "rootless" if self.rootless else "rootful"
        if self.rootless and not cgroups_v2():
            mode += "; --memory, --cpus and --pids-limit NOT enforced: rootless podman on cgroups v1"
        return f"podman {self.version} ({mode}, {self.binary})"

    def resolve(self, ref: ImageRef, tag: str, registry: Callable[[], TagResolver], *, seconds: float) -> str:
        return registry().resolve(ref.repository, tag)  # the client's own deadline is ``seconds``

    def inspect(self, reference: str) -> ImageFacts | None:
        result = self._run("image", "inspect", reference, timeout=120)
        if result.returncode != 0:
            if "image not known" in result.stderr or "no such image" in result.stderr.lower():
                return None
            raise EngineError(f"podman cannot look up {reference}: {last_line(result.stderr)}")
        try:
            documents = json.loads(result.stdout)
            return image_facts(documents[0])
        except (ValueError, KeyError, IndexError, TypeError):
            raise EngineError(f"podman image inspect printed something unexpected for {reference}") from None

    def pull(self, pinned: ImageRef, *, insecure: bool) -> ImageFacts:
        args = ["pull", "--quiet"]
        if insecure or _is_loopback(pinned.registry):
            # Loopback registries speak plain HTTP; dockerd allows that for 127.0.0.0/8, podman must be told.
            args.append("--tls-verify=false")
        result = self._run(*args, pinned.pinned)
        if result.returncode != 0:
            raise LaunchError(
                f"pulling {pinned.pinned} failed: {last_line(result.stderr)}", hint="check the registry and your login"
            )
        found = self.inspect(pinned.pinned)
        if found is None:
            raise LaunchError(f"podman pulled {pinned.pinned} but cannot find it afterwards")
        return found

    def build(
        self, *, context: Path, dockerfile: str, build_args: Mapping[str, str], tag: str, labels: Mapping[str, str]
    ) -> ImageFacts:
        words = build_words(
            "podman", context=context, dockerfile=dockerfile, build_args=build_args, tag=tag, labels=labels
        )
        result = self._run(*words)
        if result.returncode != 0:
            raise build_failure(dockerfile, result.stdout, result.stderr)
        found = self.inspect(tag)
        if found is None:
            raise LaunchError(f"podman built {tag} but cannot find it afterwards")
        return found

    def image_document(self, reference: str) -> dict[str, Any] | None:
        result = self._run("image", "inspect", reference, timeout=120)
        if result.returncode != 0:
            return None
        try:
            document = json.loads(result.stdout)[0]
        except (ValueError, IndexError, KeyError):
            raise EngineError(f"podman image inspect printed something unexpected for {reference}") from None
        return document if isinstance(document, dict) else None

    def new_layer_members(self, tag: str, skip: int, scratch: Path) -> list[tuple[str, int, str, bool]]:
        return saved_layer_members([self.binary], self.env, tag, skip, scratch)

    def remove(self, tag: str) -> None:
        self._run("rmi", "--force", tag, timeout=120)

    def runtime_problem(self, runtime: str) -> EngineError | None:
        return missing_on_podman(runtime, runsc_binary(self.env))

    def platform(self) -> tuple[str, str]:
        """(os, architecture) of the machine podman runs containers on (``Server.OsArch``
        for a remote podman, else ``Client.OsArch``)."""
        result = self._run("version", "--format", "json", timeout=60)
        try:
            document = json.loads(result.stdout)
            side = document.get("Server") or document["Client"]
            os_name, _, arch = str(side["OsArch"]).partition("/")
        except (ValueError, KeyError, TypeError, AttributeError):
            os_name = arch = ""
        if result.returncode != 0 or not os_name or not arch:
            raise EngineError(
                f"podman did not report its platform: {last_line(result.stderr)}",
                hint="run 'podman version' to see what is wrong",
            )
        return os_name, arch


def cgroups_v2(root: Path = Path("/sys/fs/cgroup")) -> bool:
    """True on a unified (v2) cgroup hierarchy, where rootless podman can apply resource limits."""
    return (root / "cgroup.controllers").exists()


def _is_loopback(registry: str) -> bool:
    from terminai_sandbox.common.registry_auth import is_loopback  # noqa: PLC0415  (podman only)

    return is_loopback(registry)
