"""One SBOM per platform of a multi-platform layout, each from that platform's own package
database, and syft (reading each platform's image on its own) agrees with each.

The arm64 image is the built amd64 image plus one layer that replaces
``/var/lib/dpkg/status`` with the same database re-labelled ``Architecture: arm64`` (and
an arm64 config). It stands in for a real arm64 build's database: what is tested is that
the SBOM of a platform is read from that platform's layers, not from another platform's or
from the locks, and two independent readers of those layers agree. With the amd64 image
in the same layout, a mix-up of platforms shows as an ``arch=`` difference in every purl.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import shutil
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from terminai_sandbox.assemble import BuildResult
from terminai_sandbox.cli import main
from terminai_sandbox.errors import SbomError

from tests.integration.release.test_sbom_syft import _key, _syft

pytestmark = [pytest.mark.integration, pytest.mark.slow]

STATUS = "var/lib/dpkg/status"
INDEX_TYPE = "application/vnd.oci.image.index.v1+json"


def _status(built: BuildResult) -> bytes:
    found = b""
    for blob in built.oci_layout.layer_paths():
        with gzip.open(blob) as stream, tarfile.open(fileobj=stream, mode="r|") as tar:
            for member in tar:
                if member.name.lstrip("./") == STATUS:
                    handle = tar.extractfile(member)
                    assert handle is not None
                    found = handle.read()
    assert found, "the built image has no dpkg status"
    return found


def _put(blobs: Path, data: bytes) -> str:
    digest = hashlib.sha256(data).hexdigest()
    (blobs / digest).write_bytes(data)
    return f"sha256:{digest}"


def _arm64_layout(built: BuildResult, root: Path) -> dict[str, tuple[str, Path]]:
    """A two-platform layout at ``root`` and a single-image layout per platform (for syft)."""
    source = built.oci_layout
    shutil.copytree(source.root / "blobs", root / "blobs")
    blobs = root / "blobs" / "sha256"
    status = _status(built).replace(b"\nArchitecture: amd64\n", b"\nArchitecture: arm64\n")
    assert b"Architecture: arm64" in status
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for directory in ("var", "var/lib", "var/lib/dpkg"):
            info = tarfile.TarInfo(directory)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        info = tarfile.TarInfo(STATUS)
        info.size, info.mode = len(status), 0o644
        tar.addfile(info, io.BytesIO(status))
    layer = gzip.compress(raw.getvalue(), mtime=0)
    config = json.loads(source.read_blob(source.config_digest))
    config["architecture"] = "arm64"
    config["rootfs"]["diff_ids"].append("sha256:" + hashlib.sha256(raw.getvalue()).hexdigest())
    config_bytes = json.dumps(config).encode()
    manifest = json.loads(source.manifest_bytes)
    manifest["config"] = {**manifest["config"], "digest": _put(blobs, config_bytes), "size": len(config_bytes)}
    manifest["layers"].append({**manifest["layers"][-1], "digest": _put(blobs, layer), "size": len(layer)})
    arm_bytes = json.dumps(manifest).encode()
    arm = _put(blobs, arm_bytes)
    entries = [
        {
            "mediaType": source.manifest.media_type,
            "digest": d,
            "size": n,
            "platform": {"architecture": a, "os": "linux"},
        }
        for a, d, n in (("amd64", source.manifest_digest, source.manifest.size), ("arm64", arm, len(arm_bytes)))
    ]
    index = json.dumps({"schemaVersion": 2, "mediaType": INDEX_TYPE, "manifests": entries}).encode()
    top = {
        "schemaVersion": 2,
        "manifests": [{"mediaType": INDEX_TYPE, "digest": _put(blobs, index), "size": len(index)}],
    }
    (root / "index.json").write_text(json.dumps(top))
    (root / "oci-layout").write_text(json.dumps({"imageLayoutVersion": "1.0.0"}))
    singles = {}
    for platform, entry in zip(("linux/amd64", "linux/arm64"), entries, strict=True):
        single = root.parent / platform.replace("/", "-")
        shutil.copytree(root, single)
        (single / "index.json").write_text(json.dumps({"schemaVersion": 2, "manifests": [entry]}))
        singles[platform] = (entry["digest"], single)
    return singles


def test_each_platform_has_its_own_sbom_and_syft_agrees(built_image: BuildResult, tmp_path: Path) -> None:
    layout = tmp_path / "multi" / "oci"
    layout.parent.mkdir()
    singles = _arm64_layout(built_image, layout)
    runner = CliRunner()
    for platform, (digest, single) in singles.items():
        arch = platform.split("/")[1]
        out = tmp_path / f"sbom-{arch}.json"
        done = runner.invoke(main, ["sbom", str(layout), "--platform", platform, "-o", str(out)])
        assert done.exit_code == 0, done.output
        ours = json.loads(out.read_text())
        assert digest.removeprefix("sha256:") in json.dumps(ours["metadata"]["component"])
        ours_keys = {_key(c["purl"]) for c in ours["components"]}
        debs = {k for k in ours_keys if k[0] == "deb"}
        assert debs and {k[3] for k in debs} <= {arch, "all"}, sorted({k[3] for k in debs})
        assert arch in {k[3] for k in debs}
        found = _syft(single, tmp_path / arch)
        # syft also reads the package notes compiled into ELF files. The stand-in's binaries
        # are amd64, and syft says so: on the arm64 stand-in those (and only those) are
        # packages no dpkg database entry owns, each noted as amd64. A real arm64 build's
        # notes would name arm64 packages its database owns, as the amd64 image's do.
        notes = [a for a in found if a.get("foundBy") == "elf-binary-package-cataloger"]
        theirs = {_key(a["purl"]) for a in found if a["type"] in ("deb", "python") and a not in notes}
        assert ours_keys == theirs, (arch, sorted(ours_keys ^ theirs)[:10])
        orphans = [a for a in notes if _key(a["purl"]) not in ours_keys]
        if arch == "amd64":
            assert orphans == []
        else:
            assert orphans and {a["metadata"]["architecture"] for a in orphans} == {"amd64"}

    refused = runner.invoke(main, ["sbom", str(layout), "--platform", "linux/riscv64", "-o", str(tmp_path / "x")])
    assert refused.exit_code == SbomError.exit_code
    assert "no image for linux/riscv64 (it has: linux/amd64, linux/arm64)" in refused.output
