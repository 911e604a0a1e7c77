"""Mirrors by policy: ``cosign copy`` (the real binary) of a signed image to another repository.

The signature names the repository it was made for (``docker-reference``). In the copy's
repository that is a signature for another repository (step 5) unless the trust policy
names the copy's repository as a mirror of the signed one. The launcher reads the same
policy file through ``load_policy``, so ``run --policy`` decides as ``verify`` does.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from terminai_sandbox.cli import main
from terminai_sandbox.common.reference import ImageRef
from terminai_sandbox.errors import VerificationError
from terminai_sandbox.launch.trust import policy_file
from terminai_sandbox.registry import RegistryClient
from terminai_sandbox.signing.verify.image import verify_image

from tests.fixtures.registry import RegistryServer
from tests.integration.signing.cosign_tools import cosign
from tests.integration.signing.tiny_image import push_tiny

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _policy(path: Path, mirrors: list[dict[str, object]] | None) -> Path:
    data: dict[str, object] = {"version": 1, "keys": [{"path": "cosign.pub"}]}
    if mirrors is not None:
        data["mirrors"] = mirrors
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("flavour", ["cosign2", "cosign3-legacy"])
def test_a_cosign_copy_verifies_only_under_a_policy_naming_the_mirror(
    registry: RegistryServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flavour: str
) -> None:
    monkeypatch.chdir(tmp_path)
    tool = cosign(flavour, tmp_path / "home")
    assert tool.run("generate-key-pair", cwd=tmp_path).returncode == 0
    client = RegistryClient(registry.host)
    digest = push_tiny(client, "upstream/sandbox", tmp_path)
    upstream, mirror = f"{registry.host}/upstream/sandbox", f"{registry.host}/corp/mirror/sandbox"
    signed = tool.sign(f"{upstream}@{digest}", "cosign.key", tmp_path)
    assert signed.returncode == 0, signed.stderr
    copied = tool.run("copy", f"{upstream}@{digest}", mirror, cwd=tmp_path)
    assert copied.returncode == 0, copied.stderr
    assert tool.verify(f"{mirror}@{digest}", "cosign.pub", tmp_path).returncode == 0  # cosign ignores the identity

    runner = CliRunner()

    def verify(policy: Path) -> tuple[int, str]:
        out = runner.invoke(main, ["verify", f"{mirror}@{digest}", "--policy", str(policy)])
        return out.exit_code, out.output

    # No mirror entry: the signature is for another repository.
    code, output = verify(_policy(tmp_path / "plain.json", None))
    assert code == VerificationError.exit_code
    assert f"step 5: signed for repository '{upstream}', not '{mirror}'" in output
    assert '"mirrors": [{"identity": ' in output  # the hint shows the entry to add
    # A policy naming other mirrors (another repository, another registry, another identity) still refuses.
    for mirrors in (
        [{"identity": upstream, "repositories": [f"{registry.host}/corp/other/sandbox"]}],
        [{"identity": upstream, "repositories": ["registry.corp.example/corp/mirror/sandbox"]}],
        [{"identity": f"{registry.host}/upstream/other", "repositories": [mirror]}],
        [{"identity": upstream, "repositories": [f"{registry.host}/*/sandbox"]}],  # '*' is one segment
    ):
        code, output = verify(_policy(tmp_path / "other.json", mirrors))
        assert code == VerificationError.exit_code, (mirrors, output)
        assert "step 5" in output
    # Named exactly, or by a pattern: verified.
    for pattern in (mirror, f"{registry.host}/corp/*/sandbox", f"{registry.host}/**/sandbox"):
        code, output = verify(_policy(tmp_path / "mirror.json", [{"identity": upstream, "repositories": [pattern]}]))
        assert code == 0, (pattern, output)
        assert output.startswith(f"verified {mirror}@{digest} signed by sha256:")
    # The launcher's trust source (run --policy) loads the same policy object and decides the same.
    pinned = ImageRef.parse(f"{mirror}@{digest}")
    assert verify_image(pinned, policy_file(tmp_path / "mirror.json").load(), client=client).digest == digest
    with pytest.raises(VerificationError, match="step 5"):
        verify_image(pinned, policy_file(tmp_path / "plain.json").load(), client=client)
    # The original repository still verifies under the mirror policy.
    out = runner.invoke(main, ["verify", f"{upstream}@{digest}", "--policy", str(tmp_path / "mirror.json")])
    assert out.exit_code == 0, out.output
