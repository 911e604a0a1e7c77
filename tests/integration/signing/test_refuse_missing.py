"""sign, attest and verify refuse a digest the registry does not hold.

A registry accepts a ``sha256-<hex>.sig`` tag (or a referrer) for any digest: without the
existence check, signing a digest nobody pushed succeeds, and verifying it then reports
"verified" for an image that does not exist. The companion test switches the check off
and shows exactly that.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from terminai_sandbox.cli import main
from terminai_sandbox.errors import RegistryError, VerificationError
from terminai_sandbox.registry import RegistryClient
from terminai_sandbox.signing.store import RegistryStore

from tests.fixtures.registry import RegistryServer
from tests.integration.signing.tiny_image import push_tiny

pytestmark = pytest.mark.integration
ABSENT = "sha256:" + "0" * 64


def _tags(client: RegistryClient, repo: str) -> list[str]:
    response = client.request("GET", repo, "tags/list")
    return list(response.json().get("tags") or []) if response.status_code == 200 else []


@pytest.fixture()
def keyed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("COSIGN_PASSWORD", "pw")
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    assert runner.invoke(main, ["keygen"]).exit_code == 0
    (tmp_path / "sbom.json").write_text(json.dumps({"bomFormat": "CycloneDX", "specVersion": "1.6"}))
    return runner


def test_sign_attest_and_verify_refuse_a_missing_manifest(
    registry: RegistryServer, tmp_path: Path, keyed: CliRunner
) -> None:
    client = RegistryClient(registry.host)
    push_tiny(client, "missing/img", tmp_path)  # the repository exists; the digest does not
    ref = f"{registry.host}/missing/img@{ABSENT}"
    before = _tags(client, "missing/img")
    for args in (
        ["sign", ref, "--key", "cosign.key"],
        ["sign", ref, "--key", "cosign.key", "--bundle-format"],
        ["attest", ref, "--key", "cosign.key", "--predicate", "sbom.json"],
    ):
        out = keyed.invoke(main, args)
        assert out.exit_code == RegistryError.exit_code, out.output
        assert f"missing/img@{ABSENT} does not exist: refusing to" in out.output
        assert "push the image first" in out.output
    assert _tags(client, "missing/img") == before  # no .sig, .att or fallback tag was written
    out = keyed.invoke(main, ["verify", ref, "--key", "cosign.pub"])
    assert out.exit_code == VerificationError.exit_code, out.output
    assert f"step 1: {registry.host}/missing/img@{ABSENT} does not exist" in out.output


def test_without_the_check_a_missing_image_is_signed_and_then_verified(
    registry: RegistryServer, tmp_path: Path, keyed: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The attack the check stops: a signature for nothing, read back as "verified".
    monkeypatch.setattr(RegistryStore, "require_image", lambda self, digest, doing: (b"{}", "x"))
    client = RegistryClient(registry.host)
    push_tiny(client, "missing/img", tmp_path)
    ref = f"{registry.host}/missing/img@{ABSENT}"
    assert keyed.invoke(main, ["sign", ref, "--key", "cosign.key"]).exit_code == 0
    assert f"sha256-{'0' * 64}.sig" in _tags(client, "missing/img")
    out = keyed.invoke(main, ["verify", ref, "--key", "cosign.pub"])
    assert out.exit_code == 0
    assert out.output.startswith(f"verified {registry.host}/missing/img@{ABSENT}")


def test_an_existing_image_is_still_signed_attested_and_verified(
    registry: RegistryServer, tmp_path: Path, keyed: CliRunner
) -> None:
    client = RegistryClient(registry.host)
    digest = push_tiny(client, "present/img", tmp_path)
    ref = f"{registry.host}/present/img@{digest}"
    assert keyed.invoke(main, ["sign", ref, "--key", "cosign.key"]).exit_code == 0
    assert keyed.invoke(main, ["attest", ref, "--key", "cosign.key", "--predicate", "sbom.json"]).exit_code == 0
    out = keyed.invoke(main, ["verify", ref, "--key", "cosign.pub", "--attestation", "cyclonedx"])
    assert out.exit_code == 0, out.output
