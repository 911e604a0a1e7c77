from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from terminai_sandbox.artifacts.image_locks import ImageLocks
from terminai_sandbox.assemble import BuildResult
from terminai_sandbox.cli import main
from terminai_sandbox.engine import Engine
from terminai_sandbox.errors import ReleaseError, VerificationError
from terminai_sandbox.launch.reference import ImageRef
from terminai_sandbox.registry import RegistryClient
from terminai_sandbox.release import ContractOutcome, ReleaseOptions, release
from terminai_sandbox.sbom import SbomOptions, generate
from terminai_sandbox.signing import sign
from terminai_sandbox.signing.formats import dsse, keys
from terminai_sandbox.signing.verify.image import verify_image
from terminai_sandbox.signing.verify.trust import VerificationPolicy

from tests.fixtures.registry import RegistryServer

ROOT = Path(__file__).resolve().parents[3]
REPO = "terminai/release-test"


def _options(registry: RegistryServer, dist: Path) -> ReleaseOptions:
    return ReleaseOptions(
        repository=f"{registry.host}/{REPO}", version="9.9.9", dist_root=dist, image_dir=ROOT / "images" / "sandbox"
    )


def test_failing_contracts_stop_the_release_before_anything_is_pushed(
    registry: RegistryServer, built_image: BuildResult, tmp_path: Path
) -> None:
    client = RegistryClient(registry.host)
    with pytest.raises(ReleaseError, match="contracts"):
        release(
            _options(registry, tmp_path),
            build=lambda: built_image,
            contracts=lambda _: ContractOutcome(ok=False, version="1.0.0", summary="1 failed"),
            key=keys.generate(),
            client=client,
        )
    assert not client.manifest_exists(REPO, "9.9.9")
    assert not client.manifest_exists(REPO, built_image.manifest_digest)


def test_release_then_air_gapped_verify(registry: RegistryServer, built_image: BuildResult, tmp_path: Path) -> None:
    client = RegistryClient(registry.host)
    key = keys.generate()
    manifest = release(
        _options(registry, tmp_path),
        build=lambda: built_image,
        contracts=lambda _: ContractOutcome(ok=True, version="1.0.0", summary="all passed"),
        key=key,
        client=client,
    )
    target = tmp_path / "9.9.9"
    assert json.loads((target / "release.json").read_text()) == manifest
    assert manifest["manifest_digest"] == built_image.manifest_digest
    assert client.resolve(REPO, "9.9.9") == built_image.manifest_digest
    assert set(manifest["locks"]) >= {"debian.lock", "requirements.lock"}
    # the provenance next to the SBOM names the release's inputs and the SBOM as a byproduct
    slsa = json.loads((target / "provenance.slsa.json").read_text())
    assert manifest["provenance"]["path"] == "provenance.slsa.json"
    assert slsa["runDetails"]["byproducts"][0]["digest"]["sha256"] == manifest["sbom"]["sha256"].removeprefix("sha256:")
    # openssl verifies the exported payload with the exported public key
    proc = subprocess.run(
        [
            "openssl",
            "dgst",
            "-sha256",
            "-verify",
            str(target / "cosign.pub"),
            "-signature",
            str(target / "payload.sig"),
            str(target / "payload.json"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0 and "Verified OK" in proc.stdout
    # air-gapped: no registry, just the release directory
    ref = ImageRef.parse(f"{registry.host}/{REPO}@{built_image.manifest_digest}")
    policy = VerificationPolicy.single_key(target / "cosign.pub")
    result = verify_image(ref, policy, client=None, offline_dir=target, attestation="cyclonedx")
    offline_slsa = verify_image(ref, policy, client=None, offline_dir=target, attestations=("slsaprovenance1",))
    assert offline_slsa.claims[0]["predicate"] == slsa
    assert result.claims[0]["predicate"]["metadata"]["component"]["purl"].endswith(
        f"@{built_image.manifest_digest.replace(':', '%3A')}?repository_url={registry.host}/{REPO}"
    ) or built_image.manifest_digest in json.dumps(result.claims[0]["predicate"]["metadata"])
    cli = CliRunner().invoke(
        main,
        [
            "verify",
            f"{registry.host}/{REPO}",
            "--key",
            str(target / "cosign.pub"),
            "--offline",
            str(target),
            "--attestation",
            "cyclonedx",
            "--json",
        ],
    )
    assert cli.exit_code == 0, cli.output
    # a stranger's key and a corrupted offline copy are refused
    (tmp_path / "stranger.pub").write_bytes(keys.public_pem(keys.generate()))
    with pytest.raises(VerificationError, match="does not verify"):
        verify_image(ref, VerificationPolicy.single_key(tmp_path / "stranger.pub"), client=None, offline_dir=target)
    broken = tmp_path / "broken"
    shutil.copytree(target, broken)
    blob = broken / "oci" / "blobs" / "sha256" / built_image.manifest_digest.removeprefix("sha256:")
    blob.unlink()
    blob.write_bytes(blob.parent.joinpath(next(p.name for p in blob.parent.iterdir())).read_bytes() + b" ")
    with pytest.raises(VerificationError, match="corrupted"):
        verify_image(ref, policy, client=None, offline_dir=broken)
    # the registry copy verifies too, with the attestation; an unreachable registry is a clear error
    assert verify_image(ref, policy, client=client, attestation="cyclonedx").claims
    with pytest.raises(VerificationError, match="unreachable"):
        verify_image(ref, policy, client=RegistryClient("127.0.0.1:9", retries=0))


def test_attestation_refusals_against_registry(
    registry: RegistryServer, built_image: BuildResult, tmp_path: Path
) -> None:
    client = RegistryClient(registry.host)
    digest = client.push_layout(built_image.oci_layout, REPO).digest
    ref = ImageRef.parse(f"{registry.host}/{REPO}@{digest}")
    signer = keys.generate()

    sign.sign(client, REPO, digest, signer, docker_reference=ref.name)
    (tmp_path / "k.pub").write_bytes(keys.public_pem(signer))
    policy = VerificationPolicy.single_key(tmp_path / "k.pub")
    with pytest.raises(VerificationError, match="step 6"):
        verify_image(ref, policy, client=client, attestation="cyclonedx")
    # an attestation for another digest, stored under this digest's .att tag, is refused
    other = "sha256:" + "e" * 64
    env = dsse.envelope(dsse.statement(ref.name, other, dsse.PREDICATE_TYPES["cyclonedx"], {}), signer)
    from terminai_sandbox.signing.formats.sig import SIGNATURE_ANNOTATION
    from terminai_sandbox.signing.store import RegistryStore

    RegistryStore(client, REPO).append_layer(
        dsse.attestation_tag(digest),
        blob=env,
        media_type=dsse.DSSE_MEDIA_TYPE,
        annotations={SIGNATURE_ANNOTATION: ""},
        is_duplicate=lambda *_: False,
    )
    with pytest.raises(VerificationError, match="another image"):
        verify_image(ref, policy, client=client, attestation="cyclonedx")

    def attach() -> bool:
        predicate_uri = dsse.PREDICATE_TYPES["cyclonedx"]
        return sign.attest(
            client, REPO, digest, signer, subject_name=ref.name, predicate_uri=predicate_uri, predicate={"ok": 1}
        )[1]

    assert attach()
    assert not attach()  # the same attestation again is not added twice
    assert verify_image(ref, policy, client=client, attestation="cyclonedx").claims[0]["predicate"] == {"ok": 1}


def test_sbom_is_complete_against_the_running_container(
    built_image: BuildResult, engine: Engine, tmp_path: Path
) -> None:
    doc = json.loads(
        generate(
            SbomOptions(
                layout=built_image.oci_layout,
                repository="localhost/terminai/sandbox",
                version="0.1.0",
                source_date_epoch=built_image.source_date_epoch,
                locks=ImageLocks.read(ROOT / "images" / "sandbox"),
            )
        )
    )
    debs = {(c["name"], c["version"]) for c in doc["components"] if c["purl"].startswith("pkg:deb/")}
    pys = {(c["name"], c["version"]) for c in doc["components"] if c["purl"].startswith("pkg:pypi/")}
    code, out, err = engine.run(
        built_image.config_digest,
        ["dpkg-query", "-W", "-f", "${Package} ${Version}\\n"],
        network_mode="none",
        user="0",
        entrypoint=[],
    )
    assert code == 0, err
    assert debs == {tuple(line.split(" ", 1)) for line in out.decode().splitlines() if line}
    script = (
        "import importlib.metadata as m, re\n"
        "for d in m.distributions(): print(re.sub(r'[-_.]+', '-', d.metadata['Name']).lower(), d.version)"
    )
    code, out, err = engine.run(
        built_image.config_digest, ["python3", "-c", script], network_mode="none", entrypoint=[]
    )
    assert code == 0, err
    assert pys == {tuple(line.split(" ", 1)) for line in out.decode().splitlines() if line}


def test_cli_sbom_is_byte_identical_across_runs(built_image: BuildResult, tmp_path: Path) -> None:
    runner = CliRunner()
    outputs = []
    for name in ("a.json", "b.json"):
        result = runner.invoke(
            main,
            [
                "sbom",
                str(built_image.oci_layout.root),
                "-o",
                str(tmp_path / name),
                "--source-date-epoch",
                str(built_image.source_date_epoch),
                "--image-dir",
                str(ROOT / "images" / "sandbox"),
            ],
        )
        assert result.exit_code == 0, result.output
        outputs.append((tmp_path / name).read_bytes())
    assert outputs[0] == outputs[1]
    doc = json.loads(outputs[0])
    assert doc["metadata"]["component"]["hashes"][0]["content"] == built_image.manifest_digest.removeprefix("sha256:")
    assert any(c["name"] == "terminai-apts" for c in doc["components"])
