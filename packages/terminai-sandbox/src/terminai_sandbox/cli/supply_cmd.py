"""``terminai-sandbox keygen | push | sign | attest | verify``: the supply chain.

``sbom`` and ``provenance``, which describe a built image, are in :mod:`terminai_sandbox.cli.describe_cmd`;
``release``, which runs them all in order, in :mod:`terminai_sandbox.cli.release_cmd`.
"""

from __future__ import annotations

import getpass
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from terminai_sandbox import outputs
from terminai_sandbox._version import __version__
from terminai_sandbox.cli import params, progress
from terminai_sandbox.cli.json_output import JSON_OPTION, emit
from terminai_sandbox.cli.trust_options import trust_options
from terminai_sandbox.common.reference import ImageRef
from terminai_sandbox.errors import ConfigError, SigningError
from terminai_sandbox.secret import Secret

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric import ec

    from terminai_sandbox.registry import RegistryClient
    from terminai_sandbox.signing.verify.result import VerifiedSignature

# The signing, registry and provenance stacks load inside the commands that use them, so
# that '--help' answers at once.

DEV_DIR = Path(".sandbox-dev")
DEV_PASSWORD = "development-only"  # noqa: S105 (a public, documented password for the local demo key)
_INSECURE = click.option("--insecure-registry", is_flag=True, help="allow plain HTTP to a non-loopback registry")


def _password(confirm: bool) -> Secret[bytes]:
    if "COSIGN_PASSWORD" in os.environ:
        return Secret(os.environb[b"COSIGN_PASSWORD"])  # the bytes as set, whatever their encoding
    if sys.stdin is None or not sys.stdin.isatty():
        raise SigningError(
            "no password: set COSIGN_PASSWORD (stdin is not a terminal)",
            hint="export COSIGN_PASSWORD=... (the key's password), or run the command in a terminal to be asked",
        )
    first = getpass.getpass("Password for the private key: ")
    if confirm and getpass.getpass("Again: ") != first:
        raise SigningError("the passwords differ")
    return Secret(first.encode())


def _private_key(path: Path) -> ec.EllipticCurvePrivateKey:
    """The private key in ``path``; a file that is no PEM is exit 3, a wrong password stays exit 10; both name it."""
    from terminai_sandbox.signing.formats import keys  # noqa: PLC0415

    pem = path.read_bytes()
    if not pem.lstrip().startswith(b"-----BEGIN "):  # not a PEM file at all: a wrong path, not a signing failure
        raise ConfigError(f"private key {str(path)!r} is not a PEM file", hint="pass the cosign.key file keygen wrote")
    try:
        return keys.load_private(pem, _password(confirm=False))
    except SigningError as exc:
        raise SigningError(f"{path}: {exc.message}", hint=exc.hint) from None


def _digest_of(ref: ImageRef, client: RegistryClient, reference: str) -> str:
    """The digest to sign: REFERENCE's own, or its tag's now (read once). Never an implied
    ``latest``: the launcher refuses floating references, so nothing signs one."""
    if ref.digest:
        return ref.digest
    if ref.tag is None:
        raise ConfigError(
            f"{reference} has neither tag nor digest", hint=f"sign {reference}@sha256:… or {reference}:X.Y.Z"
        )
    return client.resolve(ref.repository, ref.tag)


def _client(ref: ImageRef, insecure: bool, *, waiting: bool = False) -> RegistryClient:
    """The registry client for ``ref``; ``waiting``: a person waits on it (the lower deadline)."""
    from terminai_sandbox.common import deadlines  # noqa: PLC0415
    from terminai_sandbox.common.registry_auth import docker_config_credentials  # noqa: PLC0415
    from terminai_sandbox.registry import RegistryClient  # noqa: PLC0415

    default = deadlines.REGISTRY_INTERACTIVE_SECONDS if waiting else deadlines.REGISTRY_SECONDS
    return RegistryClient(
        ref.registry,
        insecure=insecure,
        credentials=docker_config_credentials(ref.registry),
        timeout=deadlines.registry_seconds(os.environ, default),
    )


@click.command("keygen")
@click.option(
    "--output-prefix",
    type=params.OutputPrefix(),
    default="cosign",
    show_default=True,
    help="writes PREFIX.key and PREFIX.pub",
)
@click.option(
    "--import",
    "import_path",
    type=params.InputPath(exists=True),
    default=None,
    help="encrypt this PKCS#8 PEM private key instead of generating one",
)
@click.option("--dev", is_flag=True, help=f"write the local DEVELOPMENT key pair under {DEV_DIR}/ (for make demo)")
@JSON_OPTION
def keygen_cmd(output_prefix: str, import_path: Path | None, dev: bool, as_json: bool) -> None:
    """Write an ECDSA P-256 key pair in cosign's formats (password: COSIGN_PASSWORD or prompt)."""
    from terminai_sandbox.signing.formats import keys  # noqa: PLC0415

    if dev:
        # A development key is for local demos only: its password is public, it is never a release key.
        DEV_DIR.mkdir(exist_ok=True)
        (DEV_DIR / "README").write_text(
            "DEVELOPMENT KEY ONLY. Generated locally for 'make demo'; its password is\n"
            f"'{DEV_PASSWORD}'. Never trust it for anything you did not build on this machine.\n"
        )
        os.environ.setdefault("COSIGN_PASSWORD", DEV_PASSWORD)
        output_prefix = str(DEV_DIR / "cosign")
        if Path(f"{output_prefix}.key").exists():
            record = {"private_key": f"{output_prefix}.key", "public_key": f"{output_prefix}.pub", "written": False}
            emit(as_json, record, f"development key already present: {output_prefix}.key")
            return
    # '-' would mean stdout elsewhere; a private key is never printed, and '-.key' is no one's intent.
    if (
        not output_prefix
        or output_prefix == "-"
        or output_prefix.endswith(("/", os.sep))
        or Path(output_prefix).is_dir()
    ):
        raise ConfigError(
            f"--output-prefix {output_prefix!r} names no file",
            hint="pass a path prefix such as 'cosign' or 'keys/release' (writes PREFIX.key and PREFIX.pub)",
        )
    key_path, pub_path = Path(f"{output_prefix}.key"), Path(f"{output_prefix}.pub")
    if key_path.exists() or pub_path.exists():
        raise ConfigError(f"{key_path} or {pub_path} already exists; refusing to overwrite a key")
    key = keys.load_private(import_path.read_bytes(), Secret(b"")) if import_path else keys.generate()
    encrypted = keys.encrypt_private(key, _password(confirm=True))
    # Both files appear whole or not at all: a full disk or Ctrl-C leaves no empty key behind.
    outputs.create(key_path, encrypted, what="a private key", mode=0o600)
    try:
        outputs.create(pub_path, keys.public_pem(key), what="a public key")
    except BaseException:
        key_path.unlink(missing_ok=True)
        raise
    key_id = keys.key_id(key.public_key())
    emit(
        as_json,
        {"private_key": str(key_path), "public_key": str(pub_path), "key_id": key_id, "written": True},
        f"private key {key_path} (encrypted), public key {pub_path}, key id {key_id}",
    )


@click.command("push")
@click.argument("layout", type=params.InputPath(want="dir", exists=True))
@click.argument("reference", type=params.Reference())
@click.option(
    "--chunk-size",
    type=params.Integer(1024, 1 << 30),
    default=None,
    help="upload blobs in chunks of this many bytes (1 KiB to 1 GiB; default: whole blobs)",
)
@_INSECURE
@JSON_OPTION
def push_cmd(layout: Path, reference: str, chunk_size: int | None, insecure_registry: bool, as_json: bool) -> None:
    """Push an OCI image layout to REFERENCE (repo[:tag][@digest]) blob by blob; prints the manifest digest.

    A digest in REFERENCE must be the layout's: a mismatch is refused before anything is sent.
    A multi-platform layout (index.json naming an image index) pushes every platform image,
    then the index's exact bytes; the digest printed is the index's.

    Each registry request must be whole within 60 s, retries included (a blob: 1 s more per
    MiB); TERMINAI_REGISTRY_TIMEOUT=SECONDS sets it. All of them within 1800 s
    (TERMINAI_COMMAND_TIMEOUT=SECONDS). See docs/DEADLINES.md.
    """
    from terminai_sandbox.artifacts.oci_layout import IndexLayout, OciLayout, is_index_layout  # noqa: PLC0415

    ref = ImageRef.parse(reference)
    opened: OciLayout | IndexLayout
    if is_index_layout(layout):
        opened = IndexLayout.open(layout)
        images = opened.images
    else:
        opened = OciLayout.open(layout)
        images = (opened,)
    items = [item for image in images for item in (image.config, *image.layers)]
    platforms = f" for {len(images)} platforms" if isinstance(opened, IndexLayout) else ""
    progress.line(f"pushing {len(items)} blobs{platforms}, {progress.size(sum(i.size for i in items))}, to {ref.name}")
    client = _client(ref, insecure_registry)
    options: dict[str, Any] = {"tag": ref.tag, "chunk_size": chunk_size, "digest": ref.digest}
    with progress.step(f"push to {ref.name}"):
        if isinstance(opened, IndexLayout):
            result = client.push_index_layout(opened, ref.repository, on_progress=progress.blob_reporter(), **options)
        else:
            result = client.push_layout(opened, ref.repository, on_progress=progress.blob_reporter(), **options)
    emit(
        as_json,
        {
            "reference": f"{ref.name}@{result.digest}",
            "digest": result.digest,
            "blobs_sent": result.blobs_sent,
            "blobs_skipped": result.blobs_skipped,
        },
        f"{ref.name}@{result.digest} ({result.blobs_sent} blobs sent, {result.blobs_skipped} already there)",
    )


@click.command("sign")
@click.argument("reference", type=params.Reference())
@click.option(
    "--key",
    "key_path",
    type=params.InputPath(exists=True),
    default=None,
    help="cosign private key (password: COSIGN_PASSWORD or prompt)",
)
@click.option(
    "--keyless", "keyless_", is_flag=True, help="CI only: Fulcio certificate for the ambient OIDC identity, Rekor log"
)
@click.option(
    "--bundle-format", is_flag=True, help="also attach a Sigstore bundle as an OCI 1.1 referrer (cosign v3 default)"
)
@_INSECURE
@JSON_OPTION
def sign_cmd(
    reference: str, key_path: Path | None, keyless_: bool, bundle_format: bool, insecure_registry: bool, as_json: bool
) -> None:
    """Sign REFERENCE by digest (a tag is resolved once) in cosign's .sig layout.

    With --keyless (CI): a Sigstore bundle referrer and a .sig layer carrying the Fulcio
    certificate, its chain and the Rekor entry, both from one ephemeral certificate.

    Registry requests and the keyless steps (OIDC token, TUF, Fulcio, Rekor) end within
    600 s in all (TERMINAI_COMMAND_TIMEOUT=SECONDS). See docs/DEADLINES.md.
    """
    from terminai_sandbox.signing import keyless, sign  # noqa: PLC0415
    from terminai_sandbox.signing.formats import sig as sig_format  # noqa: PLC0415
    from terminai_sandbox.signing.formats.bundle import key_bundle  # noqa: PLC0415

    if bool(key_path) == keyless_:
        raise ConfigError("pass exactly one of --key or --keyless")
    ref = ImageRef.parse(reference)
    client = _client(ref, insecure_registry)
    digest = _digest_of(ref, client, reference)
    if keyless_:
        # One session, one certificate: the bundle referrer (cosign v3) and the legacy .sig
        # layer (cosign v2, podman/skopeo) are two stores of the same signing event.
        with keyless.ambient_session() as session:
            artifact = sign.attach_bundle(
                client, ref.repository, digest, keyless.sign_statement(session.signer, ref.name, digest)
            )
            _, _, added = sign.sign_legacy_keyless(
                client, ref.repository, digest, session.signer, session.trust, docker_reference=ref.name
            )
        where = sig_format.signature_tag(digest)
        emit(
            as_json,
            {
                "reference": f"{ref.name}@{digest}",
                "keyless": True,
                "bundle": artifact,
                "signature_tag": where,
                "added": added,
            },
            f"signed {ref.name}@{digest} keyless (bundle referrer {artifact})",
            f"{'added' if added else 'already present:'} keyless signature in {where} (cosign .sig layout)",
        )
        return
    assert key_path is not None
    key = _private_key(key_path)
    _, _, added = sign.sign(client, ref.repository, digest, key, docker_reference=ref.name)
    lines = [f"{'signed' if added else 'already signed by this key:'} {ref.name}@{digest}"]
    bundle = None
    if bundle_format:
        bundle = sign.attach_bundle(client, ref.repository, digest, key_bundle(ref.name, digest, key))
        lines.append(f"attached Sigstore bundle referrer {bundle}")
    emit(as_json, {"reference": f"{ref.name}@{digest}", "keyless": False, "bundle": bundle, "added": added}, *lines)


@click.command("verify")
@click.argument("reference", type=params.Reference())
@trust_options
@click.option(
    "--attestation",
    "attestations",
    multiple=True,
    help="also require a verified attestation of this type (cyclonedx, slsaprovenance1); repeatable",
)
@click.option(
    "--platform",
    "platform_name",
    default=None,
    metavar="OS/ARCH",
    help="for a multi-platform index: verify only this platform's manifest (default: every platform it lists)",
)
@click.option("--json", "as_json", is_flag=True, help="print the result (or the error) as JSON")
@_INSECURE
def verify_cmd(
    reference: str,
    key_path: Path | None,
    certificate_identity: str | None,
    certificate_oidc_issuer: str | None,
    policy_path: Path | None,
    attestations: tuple[str, ...],
    offline_dir: Path | None,
    trusted_root: Path | None,
    platform_name: str | None,
    as_json: bool,
    insecure_registry: bool,
) -> None:
    """Verify REFERENCE's signatures (the tag is resolved once; verification is by digest).

    A multi-platform index passes only when the index is signed and every platform
    manifest verified (each one it lists, or the one --platform names) is listed in it
    once, is the platform it claims, and is signed (and attested) itself.

    With --offline DIR (a release directory such as dist/X.Y.Z) no registry is contacted;
    REFERENCE must then carry the digest (or DIR's image, or index, is used). The release
    directory of an index is held to the same rule as the registry's copy.

    Each registry request must be whole within 30 s, retries included (a blob: 1 s more per
    MiB); TERMINAI_REGISTRY_TIMEOUT=SECONDS sets it. All of them within 120 s
    (TERMINAI_COMMAND_TIMEOUT=SECONDS). See docs/DEADLINES.md.
    """
    from terminai_sandbox.signing.store import offline_layout, top_digest  # noqa: PLC0415
    from terminai_sandbox.signing.verify.image import verify_image  # noqa: PLC0415
    from terminai_sandbox.signing.verify.platforms import Platform  # noqa: PLC0415
    from terminai_sandbox.signing.verify.trust import policy_from_options  # noqa: PLC0415

    policy = policy_from_options(
        key=key_path, identity=certificate_identity, issuer=certificate_oidc_issuer, policy_file=policy_path
    )
    ref = ImageRef.parse(reference)
    client = None
    if offline_dir is not None:
        if ref.digest is None:
            ref = ref.with_digest(top_digest(offline_layout(offline_dir)))  # an index's digest for an index
    else:
        client = _client(ref, insecure_registry, waiting=True)
        if ref.digest is None:
            if ref.tag is None:
                raise ConfigError(
                    f"{reference} has neither tag nor digest",
                    hint=f"name the release: {reference}:X.Y.Z (e.g. :{__version__}) or {reference}@sha256:...",
                )
            ref = ref.with_digest(client.resolve(ref.repository, ref.tag))
    result = verify_image(
        ref,
        policy,
        client=client,
        offline_dir=offline_dir,
        attestations=attestations,
        trusted_root=trusted_root,
        platform=None if platform_name is None else Platform.parse(platform_name),
    )
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2, sort_keys=True))
        return
    what = "index " if result.platforms else ""
    _echo_verified(f"{what}{result.repository}@{result.digest}", result.signatures, result.claims)
    for child in result.platforms:
        _echo_verified(f"{child.platform} {result.repository}@{child.digest}", child.signatures, child.claims)


def _echo_verified(subject: str, signatures: tuple[VerifiedSignature, ...], claims: tuple[dict[str, Any], ...]) -> None:
    from terminai_sandbox import provenance  # noqa: PLC0415

    for sig in signatures:
        who = sig.certificate_identity and f"{sig.certificate_identity} ({sig.certificate_issuer})"
        click.echo(f"verified {subject} signed by {who or sig.key_id} ({sig.key_source})")
    for claim in claims:
        click.echo(f"verified attestation {claim['predicateType']}")
        if claim["predicateType"] == provenance.PREDICATE_TYPE:
            facts = provenance.summary(claim["predicate"])
            click.echo(
                f"  built by {facts['builder']} from {facts['source']} ({facts['resolvedDependencies']} pinned inputs)"
            )


@click.command("attest")
@click.argument("reference", type=params.Reference())
@click.option(
    "--predicate",
    type=params.InputPath(exists=True),
    required=True,
    help="the predicate document (JSON) to attest",
)
@click.option(
    "--type",
    "kind",
    default="cyclonedx",
    show_default=True,
    help="cyclonedx, slsaprovenance1, spdxjson, custom or a URI",
)
@click.option(
    "--key",
    "key_path",
    type=params.InputPath(exists=True),
    default=None,
    help="cosign private key (password: COSIGN_PASSWORD or prompt)",
)
@click.option("--keyless", "keyless_", is_flag=True, help="CI only: sign with the ambient OIDC identity (bundle)")
@click.option(
    "--bundle-format",
    is_flag=True,
    help="also attach it as a Sigstore bundle referrer (cosign v3 default; pair with 'sign --bundle-format')",
)
@_INSECURE
@JSON_OPTION
def attest_cmd(
    reference: str,
    predicate: Path,
    kind: str,
    key_path: Path | None,
    keyless_: bool,
    bundle_format: bool,
    insecure_registry: bool,
    as_json: bool,
) -> None:
    """Attach a signed in-toto attestation to REFERENCE by digest.

    With --key: DSSE in cosign's .att layout (and, with --bundle-format, the same envelope
    in a Sigstore bundle referrer: cosign 3 reads only bundles once an image has any).
    With --keyless: a Sigstore bundle attached as an OCI 1.1 referrer.
    """
    from terminai_sandbox.signing import keyless, sign  # noqa: PLC0415
    from terminai_sandbox.signing.formats import dsse  # noqa: PLC0415
    from terminai_sandbox.signing.formats.bundle import envelope_bundle  # noqa: PLC0415

    if bool(key_path) == keyless_:
        raise ConfigError("pass exactly one of --key or --keyless")
    ref = ImageRef.parse(reference)
    client = _client(ref, insecure_registry)
    digest = _digest_of(ref, client, reference)
    try:
        body = json.loads(predicate.read_text())
    except ValueError as exc:
        raise ConfigError(f"predicate {predicate} is not JSON: {exc}") from None
    uri = dsse.predicate_type(kind)
    _check_predicate_kind(predicate, body, kind)
    if keyless_:
        bundle = keyless.sign_keyless(ref.name, digest, predicate_type=uri, predicate=body)
        artifact = sign.attach_bundle(client, ref.repository, digest, bundle)
        emit(
            as_json,
            {"reference": f"{ref.name}@{digest}", "predicate_type": uri, "keyless": True, "bundle": artifact},
            f"attested {ref.name}@{digest} ({uri}) keyless (bundle referrer {artifact})",
        )
        return
    assert key_path is not None
    key = _private_key(key_path)
    envelope, added = sign.attest(
        client, ref.repository, digest, key, subject_name=ref.name, predicate_uri=uri, predicate=body
    )
    lines = [f"{'attested' if added else 'already attested by this key:'} {ref.name}@{digest} ({uri})"]
    referrer: str | None = None
    if bundle_format:
        referrer = sign.attach_bundle(client, ref.repository, digest, envelope_bundle(envelope, key))
        lines.append(f"attached Sigstore bundle referrer {referrer}")
    record = {"reference": f"{ref.name}@{digest}", "predicate_type": uri, "keyless": False, "bundle": referrer}
    emit(as_json, {**record, "added": added}, *lines)


# What each well-known predicate document says it is; attesting one under another type would
# sign a claim the document does not make.
_DOCUMENT_KINDS = {"cyclonedx": "bomFormat", "slsaprovenance1": "buildDefinition", "spdxjson": "spdxVersion"}


def _check_predicate_kind(path: Path, body: object, kind: str) -> None:
    if not isinstance(body, dict):
        return
    for name, marker in _DOCUMENT_KINDS.items():
        if marker in body and kind != name and kind in _DOCUMENT_KINDS:
            raise ConfigError(
                f"predicate {path} is a {name} document, not {kind}",
                hint=f"pass --type {name}, or the {kind} document",
            )


def register(group: click.Group) -> None:
    for command in (keygen_cmd, push_cmd, sign_cmd, verify_cmd, attest_cmd):
        group.add_command(command)
