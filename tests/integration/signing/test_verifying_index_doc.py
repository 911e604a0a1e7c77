"""docs/VERIFYING.md section 9 runs literally, with Debian's cosign 2.x and 3.x and skopeo.

(Up to its SBOM part, which needs a built image: ``test_sbom_platforms.py`` covers it.)

The section's fenced ``sh`` blocks are one script (later blocks read the digests the first
one resolves); bash runs them as written, with only the placeholders replaced: ``IMAGE``
by a two-platform release on a loopback registry, ``MIRROR`` by another repository there,
``X.Y.Z`` by its tag, ``cosign`` by each binary and ``.venv/bin/terminai-sandbox`` by this
checkout's, and skopeo is given the plain-HTTP flags a loopback registry needs
(``--tls-verify=false``; skopeo 1.9 running as root reads no per-test registries.conf):
transport only, nothing that changes what is compared.
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

from tests.fixtures.oci import write_index_layout
from tests.fixtures.registry import RegistryServer
from tests.integration.signing.cosign_tools import TOOLS
from tests.integration.signing.test_cosign_matrix import PROVENANCE, SBOM
from tests.integration.signing.tiny_index import config

pytestmark = [pytest.mark.integration, pytest.mark.slow]

DOC = repo_root() / "docs" / "VERIFYING.md"
CLI = Path(sys.executable).parent / "terminai-sandbox"


def _script() -> str:
    text = DOC.read_text()
    # Up to the SBOM part, which needs a built image (test_sbom_platforms.py runs it).
    section = text[text.index("## 9. A multi-platform release") : text.index("Each platform's SBOM is read")]
    return "\n".join(re.findall(r"^```sh\n(.*?)^```$", section, flags=re.MULTILINE | re.DOTALL))


def test_the_section_holds_what_this_test_runs() -> None:
    script = _script()
    for needed in ("skopeo inspect --raw", "cosign verify --key", "verify-attestation", "skopeo copy --all", "cmp "):
        assert needed in script, needed


@pytest.mark.parametrize("major", [2, 3])
def test_section_9_runs_literally(
    registry: RegistryServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, major: int
) -> None:
    monkeypatch.setenv("COSIGN_PASSWORD", "pw")
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()

    def ours(*args: str) -> str:
        out = runner.invoke(main, list(args))
        assert out.exit_code == 0, out.output
        return out.output

    ours("keygen")  # cosign.key, cosign.pub
    (tmp_path / "sbom.cdx.json").write_text(json.dumps(SBOM))
    (tmp_path / "provenance.slsa.json").write_text(json.dumps(PROVENANCE))
    image, mirror = f"{registry.host}/terminai/sandbox", f"{registry.host}/mirror/sandbox"
    index, children = write_index_layout(
        tmp_path / "oci",
        {f"linux/{a}": (config("linux", a), [f"{a} {major}".encode()]) for a in ("amd64", "arm64")},
    )
    ours("push", str(tmp_path / "oci"), f"{image}:1.0")
    for digest in children.values():
        ours("sign", f"{image}@{digest}", "--key", "cosign.key", "--bundle-format")
        for kind, predicate in (("cyclonedx", "sbom.cdx.json"), ("slsaprovenance1", "provenance.slsa.json")):
            ours(
                "attest",
                f"{image}@{digest}",
                "--key",
                "cosign.key",
                "--type",
                kind,
                "--predicate",
                predicate,
                "--bundle-format",
            )
    ours("sign", f"{image}@{index}", "--key", "cosign.key", "--bundle-format")

    script = (
        _script()
        .replace("IMAGE", image)
        .replace("MIRROR", mirror)
        .replace("X.Y.Z", "1.0")
        .replace(".venv/bin/terminai-sandbox", str(CLI))
        .replace("skopeo inspect ", "skopeo inspect --tls-verify=false ")
        .replace("skopeo copy ", "skopeo copy --src-tls-verify=false --dest-tls-verify=false ")
    )
    script = re.sub(r"(?m)^(\s*)cosign ", rf"\g<1>{TOOLS}/cosign-{major}/bin/cosign ", script)
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path / "home"),
        "COSIGN_PASSWORD": "pw",
    }
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, f"{script}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    assert f"verified index {image}@{index}" in done.stdout
    for platform, digest in children.items():
        assert f"verified {platform} {image}@{digest}" in done.stdout
