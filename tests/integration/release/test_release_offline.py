from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from packageurl import PackageURL
from terminai_sandbox import resources
from terminai_sandbox._version import __version__
from terminai_sandbox.artifacts.image_locks import ImageLocks
from terminai_sandbox.assemble import BuildResult
from terminai_sandbox.cli import main
from terminai_sandbox.common.reference import ImageRef
from terminai_sandbox.engine.client import DockerApi
from terminai_sandbox.errors import ReleaseError, VerificationError
from terminai_sandbox.registry import RegistryClient
from terminai_sandbox.release import Describe, KeySigner, ReleaseOptions, ReleaseState, release, steps
from terminai_sandbox.sbom import SbomOptions, generate
from terminai_sandbox.secret import Secret
from terminai_sandbox.signing import sign
from terminai_sandbox.signing.formats import dsse, keys
from terminai_sandbox.signing.verify.image import verify_image
from terminai_sandbox.signing.verify.trust import VerificationPolicy

from tests.fixtures.registry import RegistryServer, has_manifest

ROOT = Path(__file__).resolve().parents[3]
REPO = "terminai/release-test"


def _options(registry: RegistryServer, dist: Path) -> ReleaseOptions:
    return ReleaseOptions(
        repository=f"{registry.host}/{REPO}",
        version="9.9.9",
        dist_root=dist,
        describe=Describe(image_dir=ROOT / "images" / "sandbox"),
    )


def _suite_with_a_failing_contract(tmp_path: Path) -> Path:
    """The shipped contract suite plus one contract the image cannot satisfy."""
    suite = tmp_path / "suite"
    shutil.copytree(resources.contract_suite(), suite)
    (suite / "tests" / "test_release_gate.py").write_text(
        "import terminai_apts.model as model\n\n\n"
        "def test_the_model_has_a_label_it_never_had():\n"
        "    assert hasattr(model.ObjectTableLabels, 'NEVER_SHIPPED')\n"
    )
    return suite


def test_failing_contracts_stop_the_release_before_anything_is_pushed(
    registry: RegistryServer, built_image: BuildResult, engine: DockerApi, tmp_path: Path
) -> None:
    # The real suite runs in the real image; only the suite's content differs.
    client = RegistryClient(registry.host)
    with pytest.raises(ReleaseError, match="step 'contracts'"):
        release(
            _options(registry, tmp_path),
            build=lambda: built_image,
            engine=engine,
            signer=KeySigner(keys.generate()),
            client=client,
            suite=_suite_with_a_failing_contract(tmp_path),
        )
    assert not has_manifest(registry.host, REPO, "9.9.9")
    assert not has_manifest(registry.host, REPO, built_image.manifest_digest)
    state = ReleaseState.load(tmp_path / "9.9.9")
    assert state.passed("build") is not None and state.passed("contracts") is None
    assert not (tmp_path / "9.9.9" / "release.json").exists()


def test_release_then_air_gapped_verify(
    registry: RegistryServer, built_image: BuildResult, engine: DockerApi, tmp_path: Path
) -> None:
    client = RegistryClient(registry.host)
    key = keys.generate()
    manifest = release(
        _options(registry, tmp_path), build=lambda: built_image, engine=engine, signer=KeySigner(key), client=client
    )
    assert manifest["contracts"]["ok"] is True
    assert manifest["contracts"]["summary"].endswith(" passed, 0 failed")
    assert int(manifest["contracts"]["summary"].split()[0]) > 10  # the shipped suite really ran
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
    # Compared as the purl spec decodes it (a ':' in the version may or may not be escaped).
    purl = PackageURL.from_string(result.claims[0]["predicate"]["metadata"]["component"]["purl"])
    assert (purl.type, purl.name, purl.version) == ("oci", REPO.rsplit("/", 1)[-1], built_image.manifest_digest)
    assert purl.qualifiers == {"repository_url": f"{registry.host}/{REPO}"}
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


def test_the_steps_one_by_one_as_the_workflow_runs_them(
    registry: RegistryServer, built_image: BuildResult, engine: DockerApi, tmp_path: Path
) -> None:
    dist = tmp_path / "dist"
    target = dist / __version__
    steps.build(target, version=__version__, repository=f"{registry.host}/{REPO}", image=lambda: built_image)
    key = keys.generate()
    (tmp_path / "k.key").write_bytes(keys.encrypt_private(key, Secret(b"pw")))
    (tmp_path / "k.pub").write_bytes(keys.public_pem(key))
    runner = CliRunner()

    def step(*args: str) -> str:
        done = runner.invoke(main, ["release", *args, "--dist", str(dist)], env={"COSIGN_PASSWORD": "pw"})
        assert done.exit_code == 0, done.output
        return done.output

    # out of order: refused, naming the step that must pass first, and nothing is tagged
    early = runner.invoke(main, ["release", "tag", "--dist", str(dist)])
    assert early.exit_code == 16 and "step 'verify' has not passed" in early.output
    step("contracts")
    step("describe", "--image-dir", str(ROOT / "images" / "sandbox"))
    assert not has_manifest(registry.host, REPO, built_image.manifest_digest)
    step("push")
    step("sign", "--key", str(tmp_path / "k.key"))
    step("verify", "--key", str(tmp_path / "k.pub"))
    assert not has_manifest(registry.host, REPO, __version__)
    step("tag")
    printed = json.loads(step("manifest"))
    assert json.loads((target / "release.json").read_text()) == printed
    assert printed["manifest_digest"] == built_image.manifest_digest
    assert RegistryClient(registry.host).resolve(REPO, __version__) == built_image.manifest_digest
    assert printed["signatures"]["key_id"] == keys.key_id(key.public_key())
    # a file changed after the describe step recorded it is refused when the manifest is written
    (target / "sbom.cdx.json").write_text("{}")
    changed = runner.invoke(main, ["release", "manifest", "--dist", str(dist)])
    assert changed.exit_code == 16 and "changed since the describe step" in changed.output


def test_a_stopped_release_resumes_without_testing_the_same_digest_again(
    registry: RegistryServer, built_image: BuildResult, engine: DockerApi, tmp_path: Path
) -> None:
    options = _options(registry, tmp_path)
    target = options.target
    steps.build(target, version=options.version, repository=options.repository, image=lambda: built_image)
    steps.contracts(target, engine)
    passed = ReleaseState.load(target).require("contracts")
    # Resumed with a suite the image would fail: the digest already passed, so it is not run.
    manifest = release(
        options,
        build=lambda: built_image,
        engine=engine,
        signer=KeySigner(keys.generate()),
        client=RegistryClient(registry.host),
        suite=_suite_with_a_failing_contract(tmp_path),
    )
    assert manifest["contracts"]["summary"] == passed["summary"]
    # Another image is another release: its steps start again (the failing suite now runs).
    ReleaseState(
        version=options.version,
        repository=options.repository,
        manifest_digest="sha256:" + "0" * 64,
        config_digest="sha256:" + "1" * 64,
        steps={"build": {}, "contracts": {"ok": True}},
    ).save(target)
    with pytest.raises(ReleaseError, match="step 'contracts'"):
        release(
            options,
            build=lambda: built_image,
            engine=engine,
            signer=KeySigner(keys.generate()),
            client=RegistryClient(registry.host),
            suite=_suite_with_a_failing_contract(tmp_path / "again"),
        )


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
    built_image: BuildResult, engine: DockerApi, tmp_path: Path
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
