"""``terminai-sandbox keygen | push | sign | verify``: keys, registry, signatures."""

from __future__ import annotations

import getpass
import json
import os
import sys
from pathlib import Path

import click

from terminai_sandbox.errors import ConfigError, SigningError
from terminai_sandbox.reference import ImageRef
from terminai_sandbox.registry import RegistryClient, docker_config_credentials
from terminai_sandbox.secret import Secret
from terminai_sandbox.signing import cosign, keys
from terminai_sandbox.signing.policy import VerificationPolicy, load_policy
from terminai_sandbox.signing.verify import verify_image

_INSECURE = click.option("--insecure-registry", is_flag=True, help="allow plain HTTP to a non-loopback registry")


def _password(confirm: bool) -> Secret[bytes]:
    if "COSIGN_PASSWORD" in os.environ:
        return Secret(os.environ["COSIGN_PASSWORD"].encode())
    if not sys.stdin.isatty():
        raise SigningError("no password: set COSIGN_PASSWORD (stdin is not a terminal)")
    first = getpass.getpass("Password for the private key: ")
    if confirm and getpass.getpass("Again: ") != first:
        raise SigningError("the passwords differ")
    return Secret(first.encode())


def _client(ref: ImageRef, insecure: bool) -> RegistryClient:
    return RegistryClient(ref.registry, insecure=insecure, credentials=docker_config_credentials(ref.registry))


@click.command("keygen")
@click.option("--output-prefix", default="cosign", show_default=True, help="writes PREFIX.key and PREFIX.pub")
@click.option(
    "--import",
    "import_path",
    type=click.Path(path_type=Path, exists=True),
    default=None,
    help="encrypt this PKCS#8 PEM private key instead of generating one",
)
def keygen_cmd(output_prefix: str, import_path: Path | None) -> None:
    """Write an ECDSA P-256 key pair in cosign's formats (password: COSIGN_PASSWORD or prompt)."""
    key_path, pub_path = Path(f"{output_prefix}.key"), Path(f"{output_prefix}.pub")
    if key_path.exists() or pub_path.exists():
        raise ConfigError(f"{key_path} or {pub_path} already exists; refusing to overwrite a key")
    key = keys.load_private(import_path.read_bytes(), Secret(b"")) if import_path else keys.generate()
    encrypted = keys.encrypt_private(key, _password(confirm=True))
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(encrypted)
    pub_path.write_bytes(keys.public_pem(key))
    click.echo(f"private key {key_path} (encrypted), public key {pub_path}, key id {keys.key_id(key.public_key())}")


@click.command("push")
@click.argument("layout", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.argument("reference")
@click.option("--chunk-size", type=int, default=None, help="upload blobs in chunks of this many bytes")
@_INSECURE
def push_cmd(layout: Path, reference: str, chunk_size: int | None, insecure_registry: bool) -> None:
    """Push an OCI image layout to REFERENCE (repo[:tag]) blob by blob; prints the manifest digest."""
    ref = ImageRef.parse(reference)
    result = _client(ref, insecure_registry).push_layout(layout, ref.repository, tag=ref.tag, chunk_size=chunk_size)
    click.echo(f"{ref.name}@{result.digest} ({result.blobs_sent} blobs sent, {result.blobs_skipped} already there)")


@click.command("sign")
@click.argument("reference")
@click.option("--key", "key_path", type=click.Path(path_type=Path, exists=True), required=True)
@_INSECURE
def sign_cmd(reference: str, key_path: Path, insecure_registry: bool) -> None:
    """Sign REFERENCE by digest (a tag is resolved once) in cosign's .sig layout."""
    ref = ImageRef.parse(reference)
    client = _client(ref, insecure_registry)
    digest = ref.digest or client.resolve(ref.repository, ref.tag or "latest")
    key = keys.load_private(key_path.read_bytes(), _password(confirm=False))
    _, _, added = cosign.sign(client, ref.repository, digest, key, docker_reference=ref.name)
    click.echo(f"{'signed' if added else 'already signed by this key:'} {ref.name}@{digest}")


@click.command("verify")
@click.argument("reference")
@click.option("--key", "key_path", type=click.Path(path_type=Path), default=None, help="trusted cosign public key")
@click.option("--policy", "policy_path", type=click.Path(path_type=Path), default=None, help="policy file")
@click.option("--json", "as_json", is_flag=True)
@_INSECURE
def verify_cmd(
    reference: str, key_path: Path | None, policy_path: Path | None, as_json: bool, insecure_registry: bool
) -> None:
    """Verify REFERENCE's signatures (the tag is resolved once; verification is by digest)."""
    if bool(key_path) == bool(policy_path):
        raise ConfigError("pass exactly one of --key or --policy")
    policy = VerificationPolicy.single_key(key_path) if key_path else load_policy(policy_path)  # type: ignore[arg-type]
    ref = ImageRef.parse(reference)
    client = _client(ref, insecure_registry)
    if ref.digest is None:
        if ref.tag is None:
            raise ConfigError(f"{reference} has neither tag nor digest")
        ref = ref.with_digest(client.resolve(ref.repository, ref.tag))
    result = verify_image(ref, policy, client=client)
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2, sort_keys=True))
    else:
        for sig in result.signatures:
            click.echo(f"verified {result.repository}@{result.digest} with key {sig.key_id} ({sig.key_source})")


def register(group: click.Group) -> None:
    for command in (keygen_cmd, push_cmd, sign_cmd, verify_cmd):
        group.add_command(command)
