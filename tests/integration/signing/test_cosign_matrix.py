"""cosign parity, both ways, both majors, with Debian's real cosign binaries.

* cosign signs and attests (2.x; 3.x default, bundles as referrers through the fallback
  tag; 3.x legacy tags) a CycloneDX SBOM and a SLSA v1 provenance, and
  ``terminai-sandbox verify`` accepts the image with both attestations.
* ``terminai-sandbox`` signs and attests, and cosign 2.x and 3.x ``verify`` and
  ``verify-attestation`` accept.
* Both refuse a wrong key, and a replay: the signature and attestation artifacts of one
  image copied onto another image of the same repository.

Debian's docker-registry has no referrers API, so cosign 3's bundles are found through the
fallback index. Keyless signing needs Fulcio and Rekor, which a test cannot reach; keyless
bundles are covered with production data (test_bundles.py) and a local Sigstore
(tests/unit/signing/test_legacy_keyless.py).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner
from terminai_sandbox.cli import main
from terminai_sandbox.errors import VerificationError
from terminai_sandbox.registry import RegistryClient
from terminai_sandbox.signing.formats import dsse

from tests.fixtures.registry import RegistryServer
from tests.integration.signing.cosign_tools import FLAVOURS, cosign
from tests.integration.signing.tiny_image import push_tiny

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SBOM = {
    "bomFormat": "CycloneDX",
    "specVersion": "1.6",
    "version": 1,
    "metadata": {"component": {"type": "container", "name": "matrix"}},
    "components": [
        {
            "type": "library",
            "name": "bash",
            "version": "5.2.15-2+b7",
            "purl": "pkg:deb/debian/bash@5.2.15-2%2Bb7?arch=amd64&distro=debian-12",
        }
    ],
}
PROVENANCE = {
    "buildDefinition": {
        "buildType": "https://terminai.example/sandbox-build/v1",
        "externalParameters": {"source": "git+https://example.com/sandbox@refs/tags/v1"},
        "resolvedDependencies": [],
    },
    "runDetails": {"builder": {"id": "https://example.com/builder"}},
}
KINDS = ("cyclonedx", "slsaprovenance1")


@dataclass(frozen=True, slots=True)
class World:
    client: RegistryClient
    host: str
    work: Path
    runner: CliRunner

    def pair(self, repo: str) -> tuple[str, str]:
        """Two images of ``repo``: the one signed, and the one a replay targets."""
        a = push_tiny(self.client, repo, self.work, content=b"signed image")
        b = push_tiny(self.client, repo, self.work, content=b"another image")
        return f"{self.host}/{repo}@{a}", f"{self.host}/{repo}@{b}"

    def ours(self, *args: str) -> tuple[int, str]:
        out = self.runner.invoke(main, list(args))
        return out.exit_code, out.output

    def replay(self, source: str, target: str) -> list[str]:
        """Copy every cosign artifact tag of image ``source`` onto image ``target`` (same repository)."""
        repo = source.split("/", 1)[1].split("@", maxsplit=1)[0]
        src, dst = (ref.split("@")[1].replace(":", "-") for ref in (source, target))
        tags = self.client.request("GET", repo, "tags/list").json()["tags"]
        copied = []
        for tag in tags:
            if tag.startswith(src):
                body, media, _ = self.client.get_manifest(repo, tag)
                self.client.put_manifest(repo, dst + tag[len(src) :], body, media)
                copied.append(tag[len(src) :] or "(fallback index)")
        assert copied, f"nothing stored for {source}: {tags}"
        return copied


@pytest.fixture()
def world(registry: RegistryServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    monkeypatch.setenv("COSIGN_PASSWORD", "pw")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sbom.json").write_text(json.dumps(SBOM))
    (tmp_path / "provenance.json").write_text(json.dumps(PROVENANCE))
    keymaker = cosign("cosign3", tmp_path / "home")
    for prefix in ("cosign", "stranger"):
        made = keymaker.run("generate-key-pair", "--output-key-prefix", prefix, cwd=tmp_path)
        assert made.returncode == 0, made.stderr
    runner = CliRunner()
    made_ours = runner.invoke(main, ["keygen", "--output-prefix", "ours"])
    assert made_ours.exit_code == 0, made_ours.output
    return World(RegistryClient(registry.host), registry.host, tmp_path, runner)


def _ok(done: object) -> None:
    assert done.returncode == 0, f"{done.args}: {done.stderr}"


@pytest.mark.parametrize("flavour", list(FLAVOURS))
def test_cosign_signs_and_attests_and_we_verify(world: World, flavour: str) -> None:
    tool = cosign(flavour, world.work / "home")
    signed, other = world.pair(f"matrix/{flavour}")
    _ok(tool.sign(signed, "cosign.key", world.work))
    _ok(tool.attest(signed, "cosign.key", "cyclonedx", world.work / "sbom.json", world.work))
    _ok(tool.attest(signed, "cosign.key", "slsaprovenance1", world.work / "provenance.json", world.work))
    stored = world.client.request("GET", f"matrix/{flavour}", "tags/list").json()["tags"]
    digest_tag = signed.split("@")[1].replace(":", "-")
    if flavour == "cosign3":  # bundles as referrers: only the fallback index, no .sig/.att
        assert stored == [digest_tag]
    else:
        assert sorted(stored) == sorted([f"{digest_tag}.sig", f"{digest_tag}.att"])

    code, output = world.ours(
        "verify", signed, "--key", "cosign.pub", "--attestation", "cyclonedx", "--attestation", "slsaprovenance1"
    )
    assert code == 0, output
    assert output.startswith(f"verified {signed} signed by sha256:")
    assert "verified attestation https://cyclonedx.org/bom" in output
    assert "verified attestation https://slsa.dev/provenance/v1" in output
    _ok(tool.verify(signed, "cosign.pub", world.work))  # the reference agrees

    # A wrong key: refused by both.
    code, output = world.ours("verify", signed, "--key", "stranger.pub")
    assert code == VerificationError.exit_code, output
    assert tool.verify(signed, "stranger.pub", world.work).returncode != 0
    for kind in KINDS:
        code, output = world.ours("verify", signed, "--key", "cosign.pub", "--attestation", kind)
        assert code == 0, output
        assert tool.verify_attestation(signed, "stranger.pub", kind, world.work).returncode != 0

    # A replay: the signed image's artifacts copied onto another image. Refused by both.
    world.replay(signed, other)
    code, output = world.ours("verify", other, "--key", "cosign.pub")
    assert code == VerificationError.exit_code, output
    assert tool.verify(other, "cosign.pub", world.work).returncode != 0
    for kind in KINDS:
        assert tool.verify_attestation(other, "cosign.pub", kind, world.work).returncode != 0


@pytest.mark.parametrize("major", [2, 3])
def test_we_sign_and_attest_and_cosign_verifies(world: World, major: int) -> None:
    tool = cosign("cosign2" if major == 2 else "cosign3", world.work / "home")
    signed, other = world.pair(f"ours/for-cosign{major}")
    code, output = world.ours("sign", signed, "--key", "ours.key", "--bundle-format")
    assert code == 0, output
    for kind, predicate in zip(KINDS, ("sbom.json", "provenance.json"), strict=True):
        code, output = world.ours(
            "attest", signed, "--key", "ours.key", "--type", kind, "--predicate", predicate, "--bundle-format"
        )
        assert code == 0, output

    _ok(tool.verify(signed, "ours.pub", world.work))
    for kind in KINDS:
        done = tool.verify_attestation(signed, "ours.pub", kind, world.work)
        _ok(done)
        envelope = json.loads(done.stdout.splitlines()[0])
        assert json.loads(base64.b64decode(envelope["payload"]))["predicateType"] == dsse.predicate_type(kind)

    # A wrong key: refused by both.
    assert tool.verify(signed, "stranger.pub", world.work).returncode != 0
    for kind in KINDS:
        assert tool.verify_attestation(signed, "stranger.pub", kind, world.work).returncode != 0
    code, _ = world.ours("verify", signed, "--key", "stranger.pub")
    assert code == VerificationError.exit_code
    code, output = world.ours("verify", signed, "--key", "ours.pub", *(f"--attestation={kind}" for kind in KINDS))
    assert code == 0, output
    assert output.count("verified attestation https://cyclonedx.org/bom\n") == 1  # .att and bundle: one claim

    # A replay onto another image: refused by both.
    world.replay(signed, other)
    assert tool.verify(other, "ours.pub", world.work).returncode != 0
    for kind in KINDS:
        assert tool.verify_attestation(other, "ours.pub", kind, world.work).returncode != 0
    code, output = world.ours("verify", other, "--key", "ours.pub")
    assert code == VerificationError.exit_code, output
