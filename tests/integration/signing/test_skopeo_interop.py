"""containers/image interoperability: Debian trixie's skopeo 1.18 (sigstore enabled).

Debian 12's skopeo has sigstore support patched out, so the test fetches trixie's skopeo
and its libraries as .debs from the Debian mirror (separate apt state; the system is not
touched), unpacks them under ~/.cache keyed by the package list, and runs the binary with
trixie's own dynamic loader. Images are never pulled.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest
from terminai_sandbox.assemble import BuildResult
from terminai_sandbox.common.reference import ImageRef
from terminai_sandbox.registry import RegistryClient
from terminai_sandbox.secret import Secret
from terminai_sandbox.signing import sign
from terminai_sandbox.signing.formats import keys
from terminai_sandbox.signing.verify.image import verify_image
from terminai_sandbox.signing.verify.trust import VerificationPolicy

from tests.fixtures.registry import RegistryServer

PACKAGES = ("skopeo", "libgpgme11t64", "libassuan9", "libgpg-error0", "libsqlite3-0", "libc6", "libgcc-s1")
SOURCE = "deb http://deb.debian.org/debian trixie main"


def _build_skopeo() -> Path:
    key = hashlib.sha256((SOURCE + " ".join(PACKAGES)).encode()).hexdigest()[:16]
    base = Path.home() / ".cache" / "terminai-sandbox" / f"trixie-skopeo-{key}"
    root = base / "root"
    if (root / "usr" / "bin" / "skopeo").exists():
        return root
    work = base / "apt"
    for sub in ("lists/partial", "cache/archives/partial", "debs"):
        (work / sub).mkdir(parents=True, exist_ok=True)
    (work / "sources.list").write_text(SOURCE + "\n")
    options = [
        f"-oDir::Etc::SourceList={work / 'sources.list'}",
        "-oDir::Etc::SourceParts=/dev/null",
        f"-oDir::State::Lists={work / 'lists'}",
        f"-oDir::Cache={work / 'cache'}",
        "-oDir::State::status=/dev/null",
        "-oAPT::Sandbox::User=root",
    ]
    subprocess.run(["apt-get", *options, "-q", "update"], check=True, capture_output=True)
    subprocess.run(["apt-get", *options, "download", *PACKAGES], check=True, capture_output=True, cwd=work / "debs")
    staging = base / "root.partial"
    staging.mkdir(exist_ok=True)
    for deb in sorted((work / "debs").glob("*.deb")):
        subprocess.run(["dpkg-deb", "-x", str(deb), str(staging)], check=True)
    staging.rename(root)
    return root


@pytest.fixture(scope="session")
def skopeo() -> list[str]:
    try:
        root = _build_skopeo()
    except subprocess.CalledProcessError as exc:
        pytest.fail(f"cannot fetch trixie's skopeo from the Debian mirror: {exc.stderr!r}")
    lib = root / "usr" / "lib" / "x86_64-linux-gnu"
    return [str(lib / "ld-linux-x86-64.so.2"), "--library-path", str(lib), str(root / "usr" / "bin" / "skopeo")]


def _config(tmp_path: Path, registry: RegistryServer, repo: str, public: Path) -> list[str]:
    registries = tmp_path / "registries.d"
    registries.mkdir(exist_ok=True)
    (registries / "local.yaml").write_text(f"docker:\n  {registry.host}:\n    use-sigstore-attachments: true\n")
    policy = {
        "default": [{"type": "reject"}],
        "transports": {
            "docker": {
                f"{registry.host}/{repo}": [
                    {"type": "sigstoreSigned", "keyPath": str(public), "signedIdentity": {"type": "matchRepository"}}
                ]
            }
        },
    }
    (tmp_path / "policy.json").write_text(json.dumps(policy))
    return ["--policy", str(tmp_path / "policy.json"), "--registries.d", str(registries)]


def _copy(skopeo: list[str], config: list[str], source: str, target: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*skopeo, *config, "copy", "--src-tls-verify=false", f"docker://{source}", f"dir:{target}"],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def test_skopeo_accepts_our_signature_and_refuses_the_rest(
    skopeo: list[str], registry: RegistryServer, built_image: BuildResult, tmp_path: Path
) -> None:
    client = RegistryClient(registry.host)
    repo = "interop/signed"
    digest = client.push_layout(built_image.oci_layout, repo, tag="1").digest
    signer, stranger = keys.generate(), keys.generate()
    (tmp_path / "signer.pub").write_bytes(keys.public_pem(signer))
    (tmp_path / "stranger.pub").write_bytes(keys.public_pem(stranger))
    source = f"{registry.host}/{repo}@{digest}"
    unsigned = _copy(skopeo, _config(tmp_path, registry, repo, tmp_path / "signer.pub"), source, tmp_path / "a")
    assert unsigned.returncode != 0 and "signature" in unsigned.stderr.lower()
    sign.sign(client, repo, digest, signer, docker_reference=f"{registry.host}/{repo}")
    good = _copy(skopeo, _config(tmp_path, registry, repo, tmp_path / "signer.pub"), source, tmp_path / "b")
    assert good.returncode == 0, good.stderr
    wrong = _copy(skopeo, _config(tmp_path, registry, repo, tmp_path / "stranger.pub"), source, tmp_path / "c")
    assert wrong.returncode != 0 and "signature" in wrong.stderr.lower()


def test_our_verify_accepts_a_signature_skopeo_made(
    skopeo: list[str], registry: RegistryServer, built_image: BuildResult, tmp_path: Path
) -> None:
    client = RegistryClient(registry.host)
    digest = client.push_layout(built_image.oci_layout, "interop/src", tag="1").digest
    key = keys.generate()
    password = Secret(b"interop-pass")
    (tmp_path / "cosign.key").write_bytes(keys.encrypt_private(key, password))
    (tmp_path / "cosign.pub").write_bytes(keys.public_pem(key))
    (tmp_path / "pass").write_bytes(password.reveal())
    registries = tmp_path / "registries.d"
    registries.mkdir()
    (registries / "local.yaml").write_text(f"docker:\n  {registry.host}:\n    use-sigstore-attachments: true\n")
    (tmp_path / "policy.json").write_text(json.dumps({"default": [{"type": "insecureAcceptAnything"}]}))
    target = f"{registry.host}/interop/skopeo-signed:1"
    proc = subprocess.run(
        [
            *skopeo,
            "--policy",
            str(tmp_path / "policy.json"),
            "--registries.d",
            str(registries),
            "copy",
            "--src-tls-verify=false",
            "--dest-tls-verify=false",
            "--sign-by-sigstore-private-key",
            str(tmp_path / "cosign.key"),
            "--sign-passphrase-file",
            str(tmp_path / "pass"),
            f"docker://{registry.host}/interop/src@{digest}",
            f"docker://{target}",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    resolved = client.resolve("interop/skopeo-signed", "1")
    ref = ImageRef.parse(target).with_digest(resolved)
    result = verify_image(ref, VerificationPolicy.single_key(tmp_path / "cosign.pub"), client=client)
    assert result.signatures[0].docker_reference == target
