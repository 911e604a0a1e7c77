"""cosign signs, the launcher runs: ``terminai-sandbox run --key`` accepts the project's image
signed by Debian's cosign 2.x (``.sig``) and 3.x (default: a Sigstore bundle referrer found
through the fallback index), and refuses it at preflight under another key."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from terminai_sandbox.assemble import BuildResult
from terminai_sandbox.errors import VerificationError
from terminai_sandbox.registry import RegistryClient

from tests.fixtures.registry import RegistryServer
from tests.integration.signing.cosign_tools import FLAVOURS, cosign

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CLI = str(Path(sys.executable).with_name("terminai-sandbox"))


@pytest.mark.parametrize("flavour", ["cosign2", "cosign3"])
def test_an_image_cosign_signed_is_launched(
    registry: RegistryServer, built_image: BuildResult, tmp_path: Path, flavour: str
) -> None:
    assert flavour in FLAVOURS
    os.chmod(tmp_path, 0o755)
    tool = cosign(flavour, tmp_path / "home")
    for prefix in ("cosign", "stranger"):
        made = tool.run("generate-key-pair", "--output-key-prefix", prefix, cwd=tmp_path)
        assert made.returncode == 0, made.stderr
    repo = f"launch/{flavour}"
    digest = RegistryClient(registry.host).push_layout(built_image.oci_layout, repo, tag="0.1.0").digest
    signed = tool.sign(f"{registry.host}/{repo}@{digest}", "cosign.key", tmp_path)
    assert signed.returncode == 0, signed.stderr

    def run(pub: str) -> subprocess.CompletedProcess[str]:
        home = tmp_path.with_name(tmp_path.name + "-home")  # beside the working directory, as a user's is
        env = {"PATH": os.environ["PATH"], "HOME": str(home), "TERMINAI_SANDBOX": "docker"}
        image = f"{registry.host}/{repo}:0.1.0"
        return subprocess.run(
            [CLI, "run", "--image", image, "--key", str(tmp_path / pub), "--", "true"],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=300,
            check=False,
        )

    refused = run("stranger.pub")
    assert refused.returncode == VerificationError.exit_code, refused.stdout + refused.stderr
    done = run("cosign.pub")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3. signature: signed by sha256:" in done.stdout + done.stderr
    assert "preflight step 3 (signature) refused" in refused.stderr
