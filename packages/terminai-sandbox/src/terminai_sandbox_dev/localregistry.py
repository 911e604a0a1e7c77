"""A throwaway OCI registry on loopback (Debian's ``docker-registry``) for demos, benchmarks and tests.

Storage lives in a directory the caller owns; the server listens on 127.0.0.1 only, on a
free port, and is stopped when the context ends.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from terminai_sandbox.errors import RegistryError


@dataclass(frozen=True, slots=True)
class LoopbackRegistry:
    host: str  # 127.0.0.1:PORT
    storage: Path

    @property
    def url(self) -> str:
        return f"http://{self.host}"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def loopback_registry(workdir: Path, *, start_timeout: float = 20) -> Iterator[LoopbackRegistry]:
    """Run ``docker-registry`` on 127.0.0.1 with storage under ``workdir``; stop it afterwards."""
    binary = shutil.which("docker-registry")
    if binary is None:
        raise RegistryError("docker-registry is not installed", hint="run 'make host-tools' (Debian: docker-registry)")
    workdir.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    storage = workdir / "registry-data"
    config = workdir / "registry.yml"
    config.write_text(
        "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: "
        f"{storage}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n"
    )
    log_path = workdir / "registry.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen([binary, "serve", str(config)], stdout=log, stderr=log)
        try:
            host = f"127.0.0.1:{port}"
            deadline = time.monotonic() + start_timeout
            while True:
                try:
                    with urllib.request.urlopen(f"http://{host}/v2/", timeout=1):
                        break
                except OSError:
                    if time.monotonic() > deadline or proc.poll() is not None:
                        raise RegistryError(
                            f"docker-registry did not start: {log_path.read_text(errors='replace')[-400:]}"
                        ) from None
                    time.sleep(0.1)
            yield LoopbackRegistry(host=host, storage=storage)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
