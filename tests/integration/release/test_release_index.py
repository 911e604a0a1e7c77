"""``release --platforms`` of an image index, end to end on a loopback registry, at the cost of `make test`.

The installed command releases ``--platforms linux/amd64``: an index of one platform,
whose build finds every stage cached by the session's (the index must be the one the
multi-platform build's index writer makes over the session image). That runs every index
path of the release (the index layout, the contract suite per platform, an SBOM and a
provenance per platform, each platform signed and attested and then the index signed,
verification under the index rule, the offline export of every signature, the tag on the
index's bytes, release.json, resumption) without building anything new. The arm64 image
costs minutes under emulation, so the two-platform release lives beside its build in
``test_release_multiarch.py`` (marker ``multiarch``, ``make image-multiarch``).

What we did not write checks the result: skopeo reads back the exact bytes, Debian's
cosign 2.x and 3.x verify the index, the platform and both attestations (whose predicates
must be the release's files), openssl the platform's signed payload; and the air-gapped
release directory is attacked with forged indexes adding an unsigned platform.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from terminai_sandbox._version import __version__
from terminai_sandbox.artifacts.oci_layout import IndexLayout
from terminai_sandbox.assemble import BuildResult
from terminai_sandbox.assemble.index import write_index_layout
from terminai_sandbox.assemble.platforms import IndexResult
from terminai_sandbox.cli import main
from terminai_sandbox.common.reference import ImageRef
from terminai_sandbox.errors import ReleaseError, SbomError, VerificationError
from terminai_sandbox.oci_media import OCI_INDEX, OCI_MANIFEST, sha256_digest
from terminai_sandbox.registry import RegistryClient
from terminai_sandbox.release import Describe, ReleaseState, steps
from terminai_sandbox.secret import Secret
from terminai_sandbox.signing import sign
from terminai_sandbox.signing.formats import keys
from terminai_sandbox.signing.store import RegistryStore, export_offline
from terminai_sandbox.signing.verify.image import verify_image
from terminai_sandbox.signing.verify.trust import VerificationPolicy

from tests.fixtures.registry import RegistryServer
from tests.integration.release.index_release import (
    check_each_blob_stored_once,
    check_registry_bytes,
    check_with_cosign,
    release_through_the_command,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]
REPO = "terminai/release-index"
VERSION = __version__


def _one_platform_index(built_image: BuildResult, where: Path) -> IndexResult:
    digest = write_index_layout(where, [built_image.oci_layout], ref_name=VERSION)
    return IndexResult(index_digest=digest, layout=where, platforms=(built_image,), seconds=0.0)


def _forge(target: Path, forged: Path, extra: dict[str, object]) -> str:
    """A copy of the release directory whose index also lists an unsigned platform; its digest."""
    shutil.copytree(target, forged)
    blobs = forged / "oci" / "blobs" / "sha256"
    config = json.dumps(extra).encode()
    layer = b"not the release's layer"
    image = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": sha256_digest(config),
                "size": len(config),
            },
            "layers": [
                {
                    "mediaType": "application/vnd.oci.image.layer.v1.tar",
                    "digest": sha256_digest(layer),
                    "size": len(layer),
                }
            ],
        }
    ).encode()
    for blob in (config, layer, image):
        (blobs / sha256_digest(blob).removeprefix("sha256:")).write_bytes(blob)
    top = json.loads((forged / "oci" / "index.json").read_text())
    genuine = json.loads((blobs / top["manifests"][0]["digest"].removeprefix("sha256:")).read_bytes())
    genuine["manifests"].append(
        {
            "mediaType": OCI_MANIFEST,
            "digest": sha256_digest(image),
            "size": len(image),
            "platform": {"os": extra["os"], "architecture": extra["architecture"]},
        }
    )
    index = json.dumps(genuine).encode()
    digest = sha256_digest(index)
    (blobs / digest.removeprefix("sha256:")).write_bytes(index)
    top["manifests"][0].update(digest=digest, size=len(index), mediaType=OCI_INDEX)
    (forged / "oci" / "index.json").write_text(json.dumps(top))
    signatures = json.loads((forged / "signatures.json").read_text())
    signatures["digest"] = digest  # the genuine index's signatures, now claimed for the forgery
    (forged / "signatures.json").write_text(json.dumps(signatures))
    return digest


def test_an_index_is_released_signed_per_platform_and_verifies_online_and_air_gapped(
    registry: RegistryServer, built_image: BuildResult, tmp_path: Path
) -> None:
    client = RegistryClient(registry.host)
    # The installed command, from the checkout: its own build finds every stage cached by
    # the session's and must give the index the session image makes.
    target, manifest, stdout = release_through_the_command(registry.host, REPO, ("linux/amd64",), tmp_path)
    index = _one_platform_index(built_image, tmp_path / "oci-index")
    key = keys.load_private((tmp_path / "release.key").read_bytes(), Secret(b"pw"))
    assert f"released {registry.host}/{REPO}:{VERSION} = {registry.host}/{REPO}@{index.index_digest}" in stdout
    assert f"linux/amd64    {registry.host}/{REPO}@{built_image.manifest_digest}" in stdout

    # release.json names the index and each platform; the tag is on the index.
    assert json.loads((target / "release.json").read_text()) == manifest
    assert manifest["index_digest"] == manifest["manifest_digest"] == index.index_digest
    assert manifest["reference"] == f"{registry.host}/{REPO}@{index.index_digest}"
    (amd64,) = manifest["platforms"].values()
    assert list(manifest["platforms"]) == ["linux/amd64"]
    assert amd64["manifest_digest"] == built_image.manifest_digest
    assert amd64["config_digest"] == built_image.config_digest
    assert amd64["contracts"]["ok"] is True and int(amd64["contracts"]["summary"].split()[0]) > 10
    assert amd64["contracts"]["emulation"]["emulated"] is False
    assert client.resolve(REPO, VERSION) == index.index_digest
    assert set(manifest["locks"]) >= {"debian.lock", "requirements.lock"}
    assert manifest["signatures"]["key_id"] == keys.key_id(key.public_key())
    assert amd64["signatures"]["key_id"] == keys.key_id(key.public_key())

    # Each platform's files: its SBOM describes its own manifest; its provenance records the SBOM.
    sbom = json.loads((target / amd64["sbom"]["path"]).read_text())
    assert built_image.manifest_digest in sbom["metadata"]["component"]["purl"]
    slsa = json.loads((target / amd64["provenance"]["path"]).read_text())
    assert slsa["runDetails"]["byproducts"][0]["digest"]["sha256"] == amd64["sbom"]["sha256"].removeprefix("sha256:")
    assert amd64["sbom"]["path"] == "linux-amd64/sbom.cdx.json"

    # `provenance --platform` of the released index gives the release's bytes exactly; a
    # platform the index lacks is refused, naming those it has.
    runner = CliRunner()
    made = tmp_path / "provenance-amd64.json"
    common = ["--image-dir", str(ROOT / "images" / "sandbox"), "--repository", f"{registry.host}/{REPO}"]
    done = runner.invoke(
        main,
        ["provenance", str(target / "oci"), "--platform", "linux/amd64", *common, "--version", VERSION,
         "--sbom", str(target / amd64["sbom"]["path"]), "-o", str(made)],
        env={"GITHUB_ACTIONS": ""},
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    assert made.read_bytes() == (target / amd64["provenance"]["path"]).read_bytes()
    for platform, why in (("linux/arm64", "has no image for linux/arm64 (it has: linux/amd64)"), (None, "index")):
        flag = ["--platform", platform] if platform else []
        refused = runner.invoke(main, ["provenance", str(target / "oci"), *flag, *common, "-o", str(tmp_path / "x")])
        assert refused.exit_code == SbomError.exit_code, refused.output
        assert why in refused.output and "Traceback" not in refused.output

    check_registry_bytes(registry.host, REPO, target, manifest)
    for major in (2, 3):
        check_with_cosign(major, registry.host, REPO, target, manifest, tmp_path / f"cosign{major}-home")

    # Each blob is on disk once: the build's platform layout (dist/X.Y.Z/build/linux-amd64/oci)
    # and the release's oci/ share its inode; the registry's bytes are the layout's (above)
    # and every layer still hashes to its digest.
    released = IndexLayout.open(target / "oci")
    for image in released.images:
        image.verify()
    stored = check_each_blob_stored_once(target)
    built = built_image.oci_layout
    assert stored == sum(path.stat().st_size for path in built.root.joinpath("blobs", "sha256").iterdir()) + len(
        released.index_bytes
    )

    # Air-gapped: the release directory alone, under the index rule and with both attestations.
    ref = ImageRef.parse(f"{registry.host}/{REPO}@{index.index_digest}")
    policy = VerificationPolicy.single_key(target / "cosign.pub")
    result = verify_image(ref, policy, client=None, offline_dir=target, attestations=("cyclonedx", "slsaprovenance1"))
    assert result.digest == index.index_digest and result.signatures
    (child,) = result.platforms
    assert (child.platform, child.digest) == ("linux/amd64", built_image.manifest_digest)
    assert [c["predicate"] for c in child.claims] == [sbom, slsa]
    cli = runner.invoke(
        main, ["verify", f"{registry.host}/{REPO}", "--key", str(target / "cosign.pub"), "--offline", str(target)]
    )
    assert cli.exit_code == 0, cli.output
    assert f"verified index {registry.host}/{REPO}@{index.index_digest}" in cli.output
    assert f"verified linux/amd64 {registry.host}/{REPO}@{built_image.manifest_digest}" in cli.output
    kube = runner.invoke(
        main, ["kube", f"{registry.host}/{REPO}", "--key", str(target / "cosign.pub"), "--offline", str(target)]
    )
    assert kube.exit_code == 0, kube.output
    (pod,) = [doc for doc in yaml.safe_load_all(kube.output) if doc and doc["kind"] == "Pod"]
    assert pod["spec"]["containers"][0]["image"] == f"{registry.host}/{REPO}@{index.index_digest}"
    (term,) = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]} in term["matchExpressions"]

    # docs/VERIFYING.md section 9a's block runs literally on this release directory.
    doc = (ROOT / "docs" / "VERIFYING.md").read_text()
    section = doc[doc.index("### 9a.") : doc.index("A directory whose index was replaced")]
    (block,) = re.findall(r"^```sh\n(.*?)^```$", section, flags=re.MULTILINE | re.DOTALL)
    script = (
        block.replace(".venv/bin/terminai-sandbox", str(Path(sys.executable).parent / "terminai-sandbox"))
        .replace("REGISTRY/REPO", f"{registry.host}/{REPO}")
        .replace("dist/X.Y.Z", str(target))
    )
    ran = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script], capture_output=True, text=True, timeout=300, check=False
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert f"verified index {registry.host}/{REPO}@{index.index_digest}" in ran.stdout
    assert ran.stdout.count("verified attestation ") == 2 and "Verified OK" in ran.stdout
    assert f"image: {registry.host}/{REPO}@{index.index_digest}" in ran.stdout  # the kube block's pod

    # Forged offline, assuming the layers above fell: an index that adds an unsigned arm64
    # platform, (a) carrying the genuine index's signatures, (b) signed by the trusted key
    # itself (the index rule alone must refuse it: the added platform is not signed).
    stranger = {"architecture": "arm64", "os": "linux", "rootfs": {"type": "layers", "diff_ids": []}}
    replayed = _forge(target, tmp_path / "replayed", stranger)
    with pytest.raises(VerificationError, match="step 4: signature is for another image digest"):
        verify_image(ref.with_digest(replayed), policy, client=None, offline_dir=tmp_path / "replayed")
    resigned = _forge(target, tmp_path / "resigned", stranger)
    forged_layout = IndexLayout.open(tmp_path / "resigned" / "oci")
    client.push_index_layout(forged_layout, REPO)
    sign.sign(client, REPO, resigned, key, docker_reference=f"{registry.host}/{REPO}")
    children = tuple(image.manifest_digest for image in forged_layout.images)
    export_offline(RegistryStore(client, REPO), resigned, tmp_path / "resigned", children=children)
    added = children[1]
    refusals = {
        "replayed": "step 4: signature is for another image digest",
        "resigned": f"step 2: no signature found for {registry.host}/{REPO}@{added}",
    }
    for where, why in refusals.items():
        out = runner.invoke(
            main,
            [
                "verify",
                f"{registry.host}/{REPO}",
                "--key",
                str(target / "cosign.pub"),
                "--offline",
                str(tmp_path / where),
            ],
        )
        assert out.exit_code == VerificationError.exit_code, out.output
        assert why in out.output and "Traceback" not in out.output
    # The genuine index, but the platform's exported signatures removed: refused, naming it.
    unsigned = tmp_path / "unsigned"
    shutil.copytree(target, unsigned)
    signatures = json.loads((unsigned / "signatures.json").read_text())
    signatures["platforms"] = {}
    (unsigned / "signatures.json").write_text(json.dumps(signatures))
    with pytest.raises(VerificationError, match=built_image.manifest_digest):
        verify_image(ref, policy, client=None, offline_dir=unsigned)
    # The platform's signature moved onto the index does not verify the index.
    swapped = tmp_path / "swapped"
    shutil.copytree(target, swapped)
    signatures = json.loads((swapped / "signatures.json").read_text())
    signatures["signatures"] = signatures["platforms"][built_image.manifest_digest]["signatures"]
    (swapped / "signatures.json").write_text(json.dumps(signatures))
    with pytest.raises(VerificationError, match="step 4: signature is for another image digest"):
        verify_image(ref, policy, client=None, offline_dir=swapped)

    # Resumable: the same index again keeps every step that passed for it (the suite does
    # not run again); a step out of order names the one to run; another image in
    # dist/X.Y.Z/oci is refused by every later step.
    state = ReleaseState.load(target)
    assert state.is_index and dict(state.platforms) == {
        "linux/amd64": {"manifest_digest": built_image.manifest_digest, "config_digest": built_image.config_digest}
    }
    again = steps.build(target, version=VERSION, repository=f"{registry.host}/{REPO}", image=lambda: index)
    assert again.steps == state.steps
    state.record("contracts", state.require("contracts")).save(target)  # as if the release stopped there
    with pytest.raises(ReleaseError, match="step 'describe' has not passed"):
        steps.push(target, client)
    shutil.rmtree(target / "oci")
    shutil.copytree(built_image.oci_layout.root, target / "oci")
    with pytest.raises(ReleaseError, match="cannot be read"):
        steps.describe(target, Describe(image_dir=ROOT / "images" / "sandbox"))
