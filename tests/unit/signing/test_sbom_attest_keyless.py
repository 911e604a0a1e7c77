from __future__ import annotations

import base64
import gzip
import io
import json
import tarfile
from pathlib import Path

import pytest
from terminai_sandbox.artifacts.contract import Contract
from terminai_sandbox.artifacts.image_locks import ImageLocks
from terminai_sandbox.artifacts.oci_layout import OciLayout
from terminai_sandbox.errors import SbomError, VerificationError
from terminai_sandbox.sbom import SbomOptions, generate, parse_dpkg_status, parse_metadata
from terminai_sandbox.signing import keyless
from terminai_sandbox.signing.formats import dsse, keys
from terminai_sandbox.signing.verify import sigstore_bundle
from terminai_sandbox.signing.verify.trust import KeylessIdentity

from tests.fixtures.locks import deb_sha256, write_debian_lock
from tests.fixtures.oci import write_layout

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures/sigstore"
BUNDLE = FIXTURES / "cosign-oci-attestation.sigstore.json"
BUNDLE_DIGEST = "sha256:732112270d7e59418a8c080b134b24cabd67d250d0d0147a97ed95ba5c280aa4"
CODY = KeylessIdentity(identity="cody@soyland.com", issuer="https://github.com/login/oauth")

STATUS = """Package: libfoo1
Status: install ok installed
Architecture: amd64
Source: foo (1.0-1)
Version: 1.0-1
Depends: libc6 (>= 2.36), libbar | libbaz

Package: libc6
Status: install ok installed
Architecture: amd64
Source: glibc
Version: 2.36-9
Description: GNU C Library
 continued line: with a colon

Package: removed
Status: deinstall ok config-files
Architecture: amd64
Version: 1
"""

METADATA = b"""Metadata-Version: 2.1
Name: Restricted_Python
Version: 9.0
License: ZPL 2.1
Classifier: License :: OSI Approved :: Zope Public License
Requires-Dist: setuptools
Requires-Dist: pytest ; extra == 'test'
"""


def _layer(files: dict[str, bytes]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), mtime=0)


def _layout(root: Path, layers: list[dict[str, bytes]]) -> OciLayout:
    write_layout(root, config=b"{}", layers=[_layer(files) for files in layers])
    return OciLayout.open(root)


def test_dpkg_status_and_metadata_parsing() -> None:
    debs = parse_dpkg_status(STATUS)
    assert set(debs) == {"libfoo1", "libc6"}  # config-files only is not installed
    assert debs["libfoo1"].source == "foo" and debs["libfoo1"].depends == ("libbar", "libbaz", "libc6")
    dist = parse_metadata(METADATA)
    assert dist.name == "Restricted_Python" and dist.requires == ("setuptools",)
    assert dist.license == "ZPL-2.1"  # the trove classifier, as an SPDX identifier


def test_sbom_from_layers_with_whiteouts_is_deterministic_and_valid(tmp_path: Path) -> None:
    site = "usr/local/lib/python3.11/dist-packages"
    layout = _layout(
        tmp_path / "oci",
        [
            {
                "var/lib/dpkg/status": STATUS.encode(),
                f"{site}/gone-1.0.dist-info/METADATA": b"Name: gone\nVersion: 1\n",
            },
            {f"{site}/.wh.gone-1.0.dist-info": b"", f"{site}/restricted_python-9.0.dist-info/METADATA": METADATA},
        ],
    )
    images = tmp_path / "images"
    images.mkdir()
    write_debian_lock(images / "debian.lock", ("libc6", "2.36-9"))
    (images / "requirements.lock").write_text(f"restricted-python==9.0 \\\n    --hash=sha256:{'b' * 64}\n")
    options = SbomOptions(
        layout=layout, repository="r.example/t/s", version="1.2.3", source_date_epoch=0, locks=ImageLocks.read(images)
    )
    first, second = generate(options), generate(options)
    assert first == second
    doc = json.loads(first)
    assert doc["specVersion"] == "1.6" and doc["metadata"]["timestamp"].startswith("1970-01-01")
    purls = {c["purl"]: c for c in doc["components"]}
    assert set(purls) == {
        "pkg:deb/debian/libfoo1@1.0-1?arch=amd64&distro=debian-12",
        "pkg:deb/debian/libc6@2.36-9?arch=amd64&distro=debian-12",
        "pkg:pypi/restricted-python@9.0",
    }  # the whited-out distribution is gone
    libc6 = purls["pkg:deb/debian/libc6@2.36-9?arch=amd64&distro=debian-12"]
    assert libc6["hashes"][0]["content"] == deb_sha256("libc6")
    assert purls["pkg:pypi/restricted-python@9.0"]["hashes"][0]["content"] == "b" * 64
    assert doc["metadata"]["component"]["purl"].startswith("pkg:oci/s@sha256:")
    deps = {d["ref"]: d.get("dependsOn", []) for d in doc["dependencies"]}
    assert deps["pkg:deb/debian/libfoo1@1.0-1?arch=amd64&distro=debian-12"] == [
        "pkg:deb/debian/libc6@2.36-9?arch=amd64&distro=debian-12"
    ]


def test_sbom_refuses_an_image_without_dpkg_status(tmp_path: Path) -> None:
    layout = _layout(tmp_path / "oci", [{"etc/hostname": b"x\n"}])
    options = SbomOptions(
        layout=layout, repository="r/t", version="1", source_date_epoch=0, locks=ImageLocks.read(tmp_path)
    )
    with pytest.raises(SbomError, match="no dpkg status"):
        generate(options)


def test_dsse_attestation_round_trip_and_refusals() -> None:
    signer, stranger = keys.generate(), keys.generate()
    digest = "sha256:" + "1" * 64
    body = dsse.statement("r/t", digest, dsse.PREDICATE_TYPES["cyclonedx"], {"bomFormat": "CycloneDX"})
    env = dsse.envelope(body, signer)
    found = dsse.verify_envelopes([env], digest, [signer.public_key()], "https://cyclonedx.org/bom")
    assert found[0].predicate == {"bomFormat": "CycloneDX"}
    assert dsse.pae("t", b"ab") == b"DSSEv1 1 t 2 ab"
    with pytest.raises(VerificationError, match="does not verify"):
        dsse.verify_envelopes([env], digest, [stranger.public_key()], None)
    with pytest.raises(VerificationError, match="another image"):
        dsse.verify_envelopes([env], "sha256:" + "2" * 64, [signer.public_key()], None)
    with pytest.raises(VerificationError, match="predicate"):
        dsse.verify_envelopes([env], digest, [signer.public_key()], "https://spdx.dev/Document")
    tampered = json.loads(env)
    tampered["payload"] = base64.b64encode(body.replace(b"CycloneDX", b"Evil")).decode()
    with pytest.raises(VerificationError, match="does not verify"):
        dsse.verify_envelopes([json.dumps(tampered).encode()], digest, [signer.public_key()], None)
    with pytest.raises(VerificationError, match="no attestation"):
        dsse.verify_envelopes([], digest, [signer.public_key()], None)


def test_real_production_bundle_verifies_offline() -> None:
    text = BUNDLE.read_text()
    statement = sigstore_bundle.verify_bundle(
        text, digest=BUNDLE_DIGEST, identity=CODY, predicate_type="https://cosign.sigstore.dev/attestation/v1"
    )
    assert statement["subject"][0]["digest"]["sha256"] == BUNDLE_DIGEST.removeprefix("sha256:")
    pinned = sigstore_bundle.verify_bundle(
        text,
        digest=BUNDLE_DIGEST,
        identity=KeylessIdentity(identity_regexp=r"cody@soyland\.com", issuer_regexp=r"https://github\.com/.*"),
        trusted_root=FIXTURES / "production-trusted_root.json",
    )
    assert pinned["predicateType"] == "https://cosign.sigstore.dev/attestation/v1"


@pytest.mark.parametrize(
    ("identity", "digest", "message"),
    [
        (KeylessIdentity(identity="someone@else.example", issuer=CODY.issuer), BUNDLE_DIGEST, "identity"),
        (
            KeylessIdentity(identity=CODY.identity, issuer="https://token.actions.githubusercontent.com"),
            BUNDLE_DIGEST,
            "issuer",
        ),
        (CODY, "sha256:" + "0" * 64, "another image digest"),
    ],
)
def test_production_bundle_refusals(identity: KeylessIdentity, digest: str, message: str) -> None:
    with pytest.raises(VerificationError, match=message):
        sigstore_bundle.verify_bundle(BUNDLE.read_text(), digest=digest, identity=identity)


def test_tampered_production_bundle_is_refused() -> None:
    data = json.loads(BUNDLE.read_text())
    statement = json.loads(base64.b64decode(data["dsseEnvelope"]["payload"]))
    statement["predicate"]["Data"] = "tampered"
    data["dsseEnvelope"]["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    with pytest.raises(VerificationError, match="keyless bundle rejected"):
        sigstore_bundle.verify_bundle(json.dumps(data), digest=BUNDLE_DIGEST, identity=CODY)


def test_keyless_signing_statement_and_missing_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    statement = keyless.signing_statement("r.example/t/s", "sha256:" + "3" * 64)
    assert statement["predicateType"] == "https://sigstore.dev/cosign/sign/v1"
    assert statement["subject"] == [{"name": "r.example/t/s", "digest": {"sha256": "3" * 64}}]
    for name in (
        "GITHUB_ACTIONS",
        "ACTIONS_ID_TOKEN_REQUEST_URL",
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
        "SIGSTORE_ID_TOKEN",
    ):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(keyless.SigningError, match="OIDC"):
        keyless.sign_keyless("r.example/t/s", "sha256:" + "3" * 64)


def test_toml_policy_compose_and_dev_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner
    from terminai_sandbox.cli import main
    from terminai_sandbox.errors import ConfigError
    from terminai_sandbox.signing.verify.trust import VerificationPolicy, load_policy

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("COSIGN_PASSWORD", raising=False)
    result = CliRunner().invoke(main, ["keygen", "--dev"])
    assert result.exit_code == 0, result.output
    assert "DEVELOPMENT KEY" in (tmp_path / ".sandbox-dev" / "README").read_text()
    pem = (tmp_path / ".sandbox-dev" / "cosign.key").read_bytes()
    assert keys.load_private(pem, keys.Secret(b"development-only"))
    (tmp_path / "p.toml").write_text(
        'version = 1\nmode = "warn"\nkeys = [{path = ".sandbox-dev/cosign.pub"}]\n'
        '[[identities]]\nidentity = "a@b.example"\nissuer = "https://issuer.example"\n'
    )
    toml_policy = load_policy(tmp_path / "p.toml")
    assert len(toml_policy.keys) == 1 and toml_policy.mode == "warn"
    (tmp_path / "bad.toml").write_text('version = 1\nextra = "x"\n')
    with pytest.raises(ConfigError, match="unknown key"):
        load_policy(tmp_path / "bad.toml")
    both = toml_policy.compose(VerificationPolicy.single_identity("c@d.example", "https://i.example"))
    assert both.mode == "enforce" and len(both.identities) == 2 and len(both.keys) == 1
    assert both.fingerprint() != toml_policy.fingerprint()


def test_release_contract_version_and_tlog_fields() -> None:
    from terminai_sandbox.signing.formats.bundle import tlog_field as _tlog_field

    root = Path(__file__).resolve().parents[3]
    shipped = json.loads((root / "contracts/t-apts/contract.json").read_text())["contract_version"]
    assert Contract.shipped().version == shipped  # what a release records is the suite's own manifest
    assert _tlog_field(BUNDLE.read_text(), "logIndex") == 175508996
    assert _tlog_field("{}", "logIndex") is None
