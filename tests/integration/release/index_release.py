"""Checks of a released image index that the cheap and the two-platform release tests share.

Each check asks a tool we did not write where one exists: skopeo (containers/image) reads
back the registry's bytes, Debian's cosign 2.x and 3.x verify every signature and
attestation, and the attested predicates cosign decodes must be the files the release wrote.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from terminai_sandbox._version import __version__
from terminai_sandbox.artifacts.oci_layout import IndexLayout
from terminai_sandbox.assemble import repo_root
from terminai_sandbox.cli import main

from tests.integration.signing.cosign_tools import cosign

KINDS = {"cyclonedx": "sbom", "slsaprovenance1": "provenance"}


def skopeo_raw(reference: str) -> bytes:
    done = subprocess.run(
        ["skopeo", "inspect", "--raw", "--tls-verify=false", f"docker://{reference}"],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def check_registry_bytes(host: str, repo: str, target: Path, manifest: dict[str, Any]) -> None:
    """The tag, the index digest and each platform digest serve the layout's bytes exactly."""
    layout = IndexLayout.open(target / "oci")
    assert skopeo_raw(f"{host}/{repo}:{manifest['version']}") == layout.index_bytes
    assert skopeo_raw(f"{host}/{repo}@{manifest['index_digest']}") == layout.index_bytes
    for image in layout.images:
        assert skopeo_raw(f"{host}/{repo}@{image.manifest_digest}") == image.manifest_bytes
    listed = {entry["digest"] for entry in json.loads(layout.index_bytes)["manifests"]}
    assert listed == {entry["manifest_digest"] for entry in manifest["platforms"].values()}


def _payloads(stdout: str) -> list[dict[str, Any]]:
    """The in-toto statements cosign verify-attestation prints (one DSSE envelope a line)."""
    out = []
    for line in stdout.splitlines():
        if line.strip().startswith("{"):
            envelope = json.loads(line)
            out.append(json.loads(base64.b64decode(envelope["payload"])))
    return out


def check_with_cosign(major: int, host: str, repo: str, target: Path, manifest: dict[str, Any], home: Path) -> None:
    """cosign ``major``.x verifies the index, each platform, and each platform's two attestations."""
    tool = cosign(f"cosign{major}", home)
    pub = str(target / "cosign.pub")
    index_ref = f"{host}/{repo}@{manifest['index_digest']}"
    done = tool.verify(index_ref, pub, target)
    assert done.returncode == 0, done.stderr
    for platform, entry in manifest["platforms"].items():
        ref = f"{host}/{repo}@{entry['manifest_digest']}"
        done = tool.verify(ref, pub, target)
        assert done.returncode == 0, f"{platform}: {done.stderr}"
        for kind, record in KINDS.items():
            done = tool.verify_attestation(ref, pub, kind, target)
            assert done.returncode == 0, f"{platform} {kind}: {done.stderr}"
            statements = _payloads(done.stdout)
            assert statements, done.stdout
            written = json.loads((target / entry[record]["path"]).read_text())
            assert all(s["subject"][0]["digest"]["sha256"] == entry["manifest_digest"][7:] for s in statements)
            assert written in [s["predicate"] for s in statements], f"{platform} {kind}: not the release's file"


def release_through_the_command(
    host: str, repo: str, platforms: Sequence[str], work: Path
) -> tuple[Path, dict[str, Any], str]:
    """Run the installed ``terminai-sandbox release --platforms`` in the checkout: dist/X.Y.Z, release.json, stdout."""
    keygen = CliRunner().invoke(
        main, ["keygen", "--output-prefix", str(work / "release")], env={"COSIGN_PASSWORD": "pw"}
    )
    assert keygen.exit_code == 0, keygen.output
    dist = work / "dist"
    done = subprocess.run(
        [str(Path(sys.executable).parent / "terminai-sandbox"), "release", "--push", f"{host}/{repo}",
         "--key", str(work / "release.key"), "--platforms", ",".join(platforms), "--dist", str(dist)],
        cwd=repo_root(),
        env={**os.environ, "COSIGN_PASSWORD": "pw"},
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    target = dist / __version__
    return target, json.loads((target / "release.json").read_text()), done.stdout


def check_each_blob_stored_once(target: Path) -> int:
    """Every OCI blob under the release directory ``target`` is one file on disk; its bytes.

    The build's per-platform layouts, its index layout and the release's ``oci/`` name the
    same content-addressed blobs: they must be hard links of one inode each (what ``du``
    counts once), not copies, so the on-disk bytes of all of them are those of ``oci/`` alone.
    """
    inodes: dict[str, set[tuple[int, int]]] = {}
    on_disk: dict[tuple[int, int], int] = {}
    for path in target.rglob("blobs/sha256/*"):
        found = path.stat()
        inode = (found.st_dev, found.st_ino)
        inodes.setdefault(path.name, set()).add(inode)
        on_disk[inode] = found.st_size
    assert inodes, f"no OCI blob under {target}"
    copied = {name[:12]: len(found) for name, found in inodes.items() if len(found) > 1}
    assert not copied, f"blobs stored in more than one file (digest prefix: files): {copied}"
    release = target / "oci" / "blobs" / "sha256"
    held = sum(path.stat().st_size for path in release.iterdir())
    assert sum(on_disk.values()) == held, "the blobs outside oci/ take bytes of their own"
    return held


def check_offline(host: str, repo: str, target: Path, manifest: dict[str, Any]) -> None:
    """``verify --offline`` of the release directory: the index and every platform with both attestations."""
    offline = CliRunner().invoke(
        main,
        ["verify", f"{host}/{repo}", "--key", str(target / "cosign.pub"), "--offline", str(target),
         "--attestation", "cyclonedx", "--attestation", "slsaprovenance1", "--json"],
    )  # fmt: skip
    assert offline.exit_code == 0, offline.output
    result = json.loads(offline.output)
    assert result["digest"] == manifest["index_digest"]
    assert {p["platform"]: p["digest"] for p in result["platforms"]} == {
        name: entry["manifest_digest"] for name, entry in manifest["platforms"].items()
    }
    assert all(len(p["claims"]) == 2 for p in result["platforms"])
