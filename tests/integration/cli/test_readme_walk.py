"""The README's everyday commands, run as a new user would type them, against a loopback registry.

The lines are read from README.md, not copied here, and run through ``sh`` with only what a
reader substitutes: the registry's address (the README starts ``registry:2`` on port 5000;
here Debian's docker-registry on a free port) and the password ``keygen`` asks for. The
image is a small OCI layout in ``dist/0.1.0/oci`` (the build and the launch need the
engine and a cold Debian stage; other suites run those). What the commands leave in the
registry is checked with skopeo and the signature with ``verify``, as docs/VERIFYING.md
writes it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.oci import write_layout
from tests.fixtures.registry import RegistryServer

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
README_REGISTRY = "127.0.0.1:5000"


def _block(markdown: str, heading: str) -> list[str]:
    """The commands of the first ``sh`` block after ``heading``, continuation lines joined."""
    section = markdown.split(heading, 1)[1]
    body = re.search(r"```sh\n(.*?)```", section, re.S)
    assert body, f"no sh block under {heading}"
    joined = body.group(1).replace("\\\n", " ")
    return [line.split("  #", 1)[0].strip() for line in joined.splitlines() if line.strip()]


def _sh(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": f"{BIN}:{os.environ['PATH']}",
        "HOME": str(cwd),
        "COSIGN_PASSWORD": "readme-walk",  # what keygen would ask for at the prompt
        "LC_ALL": "C.UTF-8",
    }
    return subprocess.run(
        ["sh", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_readme_push_keygen_sign_then_verify_as_written(registry: RegistryServer, tmp_path: Path) -> None:
    lines = _block((ROOT / "README.md").read_text(), "## Everyday commands")
    push = next(line for line in lines if line.startswith("terminai-sandbox push "))
    sign = next(line for line in lines if line.startswith("terminai-sandbox keygen"))
    assert README_REGISTRY in push and README_REGISTRY in sign
    write_layout(tmp_path / "dist" / "0.1.0" / "oci", config=b'{"architecture":"amd64","os":"linux"}', layers=[b"x"])

    for line in (push, sign):
        done = _sh(line.replace(README_REGISTRY, registry.host), tmp_path)
        assert done.returncode == 0, (line, done.stderr)
        assert "error" not in done.stderr, done.stderr
    assert (tmp_path / "cosign.key").is_file() and (tmp_path / "cosign.pub").is_file()

    image = f"{registry.host}/terminai/sandbox"
    skopeo = shutil.which("skopeo")
    assert skopeo, "skopeo is a host tool of this project"
    tags = subprocess.run(
        [skopeo, "list-tags", "--tls-verify=false", f"docker://{image}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert tags.returncode == 0, tags.stderr
    assert '"0.1.0"' in tags.stdout and '.sig"' in tags.stdout, tags.stdout  # the image and cosign's signature tag

    # docs/VERIFYING.md, section 1, key-based; the attestations it asks for come from `attest`
    # (not part of the README's everyday commands), so that flag is left out here.
    verifying = _block((ROOT / "docs" / "VERIFYING.md").read_text(), "Key-based")
    verify = next(line for line in verifying if "terminai-sandbox verify IMAGE:X.Y.Z --key cosign.pub" in line)
    verify = re.sub(r"\s--attestation \S+", "", verify).replace(".venv/bin/", "")
    done = _sh(verify.replace("IMAGE", image).replace("X.Y.Z", "0.1.0"), tmp_path)
    assert done.returncode == 0, (verify, done.stderr)
    assert '"digest": "sha256:' in done.stdout, done.stdout

    # And the form without a tag, which a reader may try: refused with the fix in the hint.
    done = _sh(f"terminai-sandbox verify {image} --key cosign.pub", tmp_path)
    assert done.returncode == 3, done.stderr
    assert "has neither tag nor digest" in done.stderr and f"hint: name the release: {image}:X.Y.Z" in done.stderr
