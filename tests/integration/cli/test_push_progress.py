"""`terminai-sandbox push` against a real loopback registry: byte counts on a terminal, silence elsewhere.

The console script runs as a subprocess with its stderr on a pseudo-terminal (the ``pty``
module), as a person at a shell would see it, then with stderr on a pipe and with ``-q``.
What the registry stored is read back with skopeo, which shares no code with the client.
"""

from __future__ import annotations

import hashlib
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fixtures.oci import write_layout
from tests.fixtures.registry import RegistryServer

pytestmark = pytest.mark.integration

SANDBOX = str(Path(sys.executable).parent / "terminai-sandbox")
LAYER = os.urandom(3 << 20)  # 3 MiB: several chunks of 1 MiB, read by the HTTP layer in blocks
LAYER_DIGEST = hashlib.sha256(LAYER).hexdigest()
ENV = {"PATH": os.environ["PATH"], "LC_ALL": "C.UTF-8"}


def _on_terminal(args: list[str], cwd: Path) -> tuple[int, str, str]:
    """Run with stderr on a pseudo-terminal; (exit code, stdout, what the terminal showed)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [SANDBOX, *args], cwd=cwd, env={**ENV, "HOME": str(cwd)}, stdout=subprocess.PIPE, stderr=slave
    )
    os.close(slave)
    shown = bytearray()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                block = os.read(master, 65536)
            except OSError:  # EIO: every writer of the terminal is gone
                break
            if not block:
                break
            shown += block
        elif proc.poll() is not None:
            break
    os.close(master)
    out, _ = proc.communicate(timeout=30)
    return proc.returncode, out.decode(), shown.decode().replace("\r\n", "\n")


def _piped(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SANDBOX, *args],
        check=False,
        cwd=cwd,
        env={**ENV, "HOME": str(cwd)},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_push_shows_each_blob_with_byte_counts_on_a_terminal(registry: RegistryServer, tmp_path: Path) -> None:
    write_layout(tmp_path / "layout", config=b'{"architecture":"amd64","os":"linux"}', layers=[LAYER])
    layer = LAYER_DIGEST[:12]
    ref = f"{registry.host}/progress/sandbox:1"

    code, out, shown = _on_terminal(["push", "layout", ref, "--chunk-size", str(1 << 20)], tmp_path)
    assert code == 0, shown
    assert out.startswith(f"{registry.host}/progress/sandbox@sha256:"), out
    # Stage lines with the elapsed time, then the layer's byte counts as it goes out, then its end.
    assert re.search(r"\[\s*\d+\.\d s\] pushing 2 blobs", shown), shown
    counts = [
        (float(done), float(total))
        for done, total in re.findall(rf"blob {layer}: (\d+\.\d) MiB of (\d+\.\d) MiB", shown)
    ]
    assert counts, shown
    assert counts == sorted(counts) and counts[-1] == (3.0, 3.0), counts
    assert f"blob {layer}: sent 3.0 MiB" in shown, shown
    assert "already there" not in shown, shown

    # Pushed again: every blob is already there, and the terminal says so with its size.
    code, _, shown = _on_terminal(["push", "layout", ref], tmp_path)
    assert code == 0, shown
    assert f"blob {layer}: already there (3.0 MiB)" in shown, shown
    assert " of " not in shown, shown

    # The registry holds the layer the lines counted (read by skopeo, not by this client).
    skopeo = shutil.which("skopeo")
    assert skopeo, "skopeo is a host tool of this project"
    inspected = subprocess.run(
        [skopeo, "inspect", "--tls-verify=false", f"docker://{ref}"],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert inspected.returncode == 0, inspected.stderr
    assert f"sha256:{LAYER_DIGEST}" in inspected.stdout


def test_push_is_quiet_when_stderr_is_not_a_terminal_or_under_q(registry: RegistryServer, tmp_path: Path) -> None:
    write_layout(tmp_path / "layout", config=b'{"architecture":"amd64","os":"linux"}', layers=[LAYER])
    piped = _piped(["push", "layout", f"{registry.host}/quiet/piped:1"], tmp_path)
    assert piped.returncode == 0, piped.stderr
    assert piped.stderr == "", piped.stderr

    code, out, shown = _on_terminal(["-q", "push", "layout", f"{registry.host}/quiet/terminal:1"], tmp_path)
    assert code == 0, shown
    assert "sha256:" in out
    assert shown == "", shown
