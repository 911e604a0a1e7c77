"""docs/VERIFYING.md sections 2 and 2b run literally, with Debian's cosign 2.x and 3.x.

The fenced ``sh`` blocks are run by bash as written, with only the placeholders replaced:
``IMAGE@sha256:...`` by an image on a loopback registry, ``MIRROR`` by the repository a
``cosign copy`` goes to, ``cosign`` by each binary and ``.venv/bin/terminai-sandbox`` by this
checkout's. A block whose first line is ``# cosign 2.x`` (or ``3.x``) runs with that major
only. The ``json`` block of section 2b is the mirror policy the last block reads.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from terminai_sandbox.assemble import repo_root
from terminai_sandbox.cli import main
from terminai_sandbox.registry import RegistryClient

from tests.fixtures.registry import RegistryServer
from tests.integration.signing.cosign_tools import TOOLS
from tests.integration.signing.test_cosign_matrix import PROVENANCE, SBOM
from tests.integration.signing.tiny_image import push_tiny

pytestmark = [pytest.mark.integration, pytest.mark.slow]

DOC = repo_root() / "docs" / "VERIFYING.md"
CLI = Path(sys.executable).parent / "terminai-sandbox"


def _section(text: str, start: str, end: str) -> str:
    return text[text.index(start) : text.index(end)]


def _blocks(section: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", section, flags=re.MULTILINE | re.DOTALL)


def _shell_blocks() -> list[str]:
    text = DOC.read_text()
    sections = _section(text, "## 2. With cosign", "## 2b.") + _section(text, "## 2b.", "## 2a.")
    return _blocks(sections, "sh")


def _runs() -> list[tuple[str, int]]:
    runs = []
    for index, block in enumerate(_shell_blocks()):
        first = block.splitlines()[0]
        majors = [int(first[len("# cosign ")])] if first.startswith("# cosign ") else [2, 3]
        runs += [(f"block{index}-cosign{major}", major) for major in majors]
    return runs


def test_the_sections_still_hold_the_blocks_this_test_runs() -> None:
    blocks = _shell_blocks()
    assert len(blocks) == 4, blocks
    assert [b.splitlines()[0] for b in blocks[1:3]] == ["# cosign 2.x", "# cosign 3.x"]
    assert all("--insecure-ignore-tlog=true" in line for line in blocks[0].splitlines())
    assert "cosign copy" in blocks[3]


@pytest.mark.parametrize(("run", "major"), _runs())
def test_a_documented_block_runs_literally(
    registry: RegistryServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: str, major: int
) -> None:
    index = int(run.removeprefix("block").split("-")[0])
    block = _shell_blocks()[index]
    monkeypatch.setenv("COSIGN_PASSWORD", "pw")
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    assert runner.invoke(main, ["keygen"]).exit_code == 0  # cosign.key, cosign.pub: cosign reads them too
    (tmp_path / "sbom.cdx.json").write_text(json.dumps(SBOM))
    (tmp_path / "provenance.slsa.json").write_text(json.dumps(PROVENANCE))
    host = registry.host
    text = DOC.read_text()
    [policy] = _blocks(_section(text, "## 2b.", "## 2a."), "json")
    (tmp_path / "mirror-policy.json").write_text(
        policy.replace("registry.example.com", host).replace("mirror.corp.example", f"{host}/mirror")
    )
    image, mirror = f"{host}/terminai/sandbox", f"{host}/mirror/terminai/sandbox"
    digest = push_tiny(RegistryClient(host), "terminai/sandbox", tmp_path, content=run.encode())
    if "cosign sign" not in block and "cosign attest" not in block:
        # The blocks that only verify read what we signed and attested.
        for args in (
            ["sign", f"{image}@{digest}", "--key", "cosign.key"],
            ["attest", f"{image}@{digest}", "--key", "cosign.key", "--predicate", "sbom.cdx.json"],
            [
                "attest",
                f"{image}@{digest}",
                "--key",
                "cosign.key",
                "--type",
                "slsaprovenance1",
                "--predicate",
                "provenance.slsa.json",
            ],
        ):
            out = runner.invoke(main, args)
            assert out.exit_code == 0, out.output
    script = (
        block.replace("IMAGE@sha256:...", f"{image}@{digest}")
        .replace("MIRROR@sha256:...", f"{mirror}@{digest}")
        .replace("MIRROR", mirror)
        .replace(".venv/bin/terminai-sandbox", str(CLI))
    )
    script = re.sub(r"(?m)^cosign ", f"{TOOLS}/cosign-{major}/bin/cosign ", script)
    assert "..." not in script and "IMAGE" not in script, script
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path / "home"), "COSIGN_PASSWORD": "pw"}
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"{script}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    if "verify MIRROR" in block:
        assert f"verified {mirror}@{digest}" in done.stdout
        assert "step 5: signed for repository" in done.stderr + done.stdout
