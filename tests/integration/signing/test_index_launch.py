"""``terminai-sandbox run`` on a multi-platform index: the engine's platform, pulled and run by digest.

The release is the built amd64 image plus an arm64 entry made of the same layers under an
arm64 config. Only the amd64 entry is ever pulled on this host, so what the arm64 layers
hold does not matter; what matters is that the index, both manifests and both configs are
distinct, signed documents, as they are in a real two-platform release.

Proved with the engine's own records (``docker image inspect``'s ``RepoDigests``): after
the session the engine holds the amd64 manifest by its digest, and the index digest names
nothing it holds. An index without the host's platform is refused at preflight step 3
with the platforms it has.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import docker
import pytest
from terminai_sandbox.assemble import BuildResult
from terminai_sandbox.errors import LaunchError, VerificationError
from terminai_sandbox.oci_media import OCI_MANIFEST, sha256_digest
from terminai_sandbox.registry import RegistryClient

from tests.fixtures.registry import RegistryServer
from tests.integration.signing.tiny_index import descriptor, plat, push_index

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CLI = str(Path(sys.executable).with_name("terminai-sandbox"))


def _twin(client: RegistryClient, repo: str, amd64: str, arch: str = "arm64", created: str | None = None) -> str:
    """The amd64 image's layers under a config for ``arch`` (and another ``created``: another
    manifest of the same platform); the new manifest's digest."""
    manifest = json.loads(client.get_manifest(repo, amd64)[0])
    config = json.loads(client.get_blob(repo, manifest["config"]["digest"]))
    config["architecture"] = arch
    if created is not None:
        config["created"] = created
    config_bytes = json.dumps(config, sort_keys=True).encode()
    client.push_blob(repo, sha256_digest(config_bytes), config_bytes)
    manifest["config"] = {**manifest["config"], "digest": sha256_digest(config_bytes), "size": len(config_bytes)}
    body = json.dumps(manifest).encode()
    return client.put_manifest(repo, sha256_digest(body), body, OCI_MANIFEST)


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(cwd.with_name(cwd.name + "-home")),  # beside the working directory, as a user's is
        "TERMINAI_SANDBOX": "docker",
        "COSIGN_PASSWORD": "pw",
    }
    return subprocess.run([CLI, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=600, check=False)


def test_run_picks_the_engines_platform_and_runs_it_by_digest(
    registry: RegistryServer, built_image: BuildResult, tmp_path: Path
) -> None:
    os.chmod(tmp_path, 0o755)
    made = _cli("keygen", "--output-prefix", "ours", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    client = RegistryClient(registry.host)
    repo = "launch/multi"
    amd64 = client.push_layout(built_image.oci_layout, repo).digest
    arm64 = _twin(client, repo, amd64)
    entries = [
        descriptor(client, repo, amd64, plat("linux/amd64")),
        descriptor(client, repo, arm64, plat("linux/arm64")),
    ]
    index = push_index(client, repo, entries, tag="0.1.0")
    only_arm = push_index(client, repo, entries[1:], tag="arm-only")
    for digest in (amd64, arm64, index, only_arm):
        signed = _cli("sign", f"{registry.host}/{repo}@{digest}", "--key", "ours.key", cwd=tmp_path)
        assert signed.returncode == 0, signed.stdout + signed.stderr

    done = _cli("run", "--image", f"{registry.host}/{repo}:0.1.0", "--key", "ours.pub", "--", "true", cwd=tmp_path)
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert f"its linux/amd64 manifest {amd64}" in said
    held = docker.from_env().images.get(f"{registry.host}/{repo}@{amd64}")
    assert f"{registry.host}/{repo}@{amd64}" in held.attrs["RepoDigests"]
    assert f"{registry.host}/{repo}@{index}" not in held.attrs["RepoDigests"]
    assert held.attrs["Architecture"] == "amd64"

    again = _cli("run", "--image", f"{registry.host}/{repo}:0.1.0", "--key", "ours.pub", "--", "true", cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"runs its manifest {amd64} for this platform" in again.stdout + again.stderr  # the cache answered

    refused = _cli(
        "run", "--image", f"{registry.host}/{repo}:arm-only", "--key", "ours.pub", "--", "true", cwd=tmp_path
    )
    assert refused.returncode == VerificationError.exit_code, refused.stdout + refused.stderr
    assert "preflight step 3 (signature) refused" in refused.stderr
    assert "has no manifest for linux/amd64 (it has: linux/arm64)" in refused.stderr

    # A forged index adding an unsigned platform, under the release's tag: refused before any pull.
    extra = _twin(client, repo, amd64, "riscv64")
    forged = push_index(client, repo, [*entries, descriptor(client, repo, extra, plat("linux/riscv64"))], tag="0.1.0")
    refused = _cli("run", "--image", f"{registry.host}/{repo}:0.1.0", "--key", "ours.pub", "--", "true", cwd=tmp_path)
    assert refused.returncode == VerificationError.exit_code, refused.stdout + refused.stderr
    assert forged in refused.stderr
    assert "preflight step 3 (signature) refused" in refused.stderr

    # A signed index whose amd64 manifest is not signed: this host's platform is refused.
    unsigned = _twin(client, repo, amd64, "amd64", created="2000-01-01T00:00:00Z")
    half = push_index(client, repo, [descriptor(client, repo, unsigned, plat("linux/amd64")), entries[1]], tag="half")
    signed = _cli("sign", f"{registry.host}/{repo}@{half}", "--key", "ours.key", cwd=tmp_path)
    assert signed.returncode == 0, signed.stdout + signed.stderr
    refused = _cli("run", "--image", f"{registry.host}/{repo}:half", "--key", "ours.pub", "--", "true", cwd=tmp_path)
    assert refused.returncode == VerificationError.exit_code, refused.stdout + refused.stderr
    assert unsigned in refused.stderr
    assert docker.from_env().images.list(name=f"{registry.host}/{repo}") == [held]  # nothing else was pulled

    # The tag moved from the index to its signed arm64 manifest alone: signed, but not this
    # host's platform; the engine would run it under emulation. Refused after the pull.
    body, media, _ = client.get_manifest(repo, arm64)
    client.put_manifest(repo, "0.1.0", body, media)
    refused = _cli("run", "--image", f"{registry.host}/{repo}:0.1.0", "--key", "ours.pub", "--", "true", cwd=tmp_path)
    assert refused.returncode == LaunchError.exit_code, refused.stdout + refused.stderr
    assert "preflight step 4 (image by digest) refused" in refused.stderr
    assert "is a linux/arm64 image, but the engine runs linux/amd64" in refused.stderr
    # And back to the index: the amd64 manifest again, by its digest.
    body, media, _ = client.get_manifest(repo, index)
    client.put_manifest(repo, "0.1.0", body, media)
    done = _cli("run", "--image", f"{registry.host}/{repo}:0.1.0", "--key", "ours.pub", "--", "true", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"runs its manifest {amd64} for this platform" in done.stdout + done.stderr
