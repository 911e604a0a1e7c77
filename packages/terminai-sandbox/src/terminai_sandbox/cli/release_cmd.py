"""``terminai-sandbox release [STEP]``: the one release path, whole or step by step.

``release --push REPO --key KEY`` runs every step; ``release STEP`` runs one, reading and
extending ``dist/X.Y.Z/release-state.json``. ``--platforms linux/amd64,linux/arm64`` (on
``release`` or ``release build``) releases one signed OCI image index over those platforms.
The release workflow runs the steps as separate jobs; ``make demo`` runs them all. Both
call the same functions.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from terminai_sandbox import provenance
from terminai_sandbox._version import __version__
from terminai_sandbox.cli import params, progress
from terminai_sandbox.cli.option_table import table_options
from terminai_sandbox.common.reference import ImageRef
from terminai_sandbox.common.registry_auth import docker_config_credentials
from terminai_sandbox.errors import ConfigError
from terminai_sandbox.launch.options import TRUST_OPTIONS
from terminai_sandbox.registry import RegistryClient
from terminai_sandbox.release import state as release_state
from terminai_sandbox.signing.formats import keys
from terminai_sandbox.signing.verify.trust import policy_from_options

_INSECURE = click.option("--insecure-registry", is_flag=True, help="allow plain HTTP to a non-loopback registry")
_DIST = click.option(
    "--dist",
    type=params.OutputDir(),
    default=Path("dist"),
    show_default=True,
    help="where the release directory X.Y.Z is written",
)
_IMAGE_DIR = click.option(
    "--image-dir",
    type=params.InputPath(want="dir", exists=True),
    default=Path("images/sandbox"),
    show_default=True,
    help="the image's spec and locks in this checkout (the SBOM and provenance record them)",
)
_JSON = click.option("--json", "as_json", is_flag=True, help="print the step's record as JSON")
_PLATFORMS = click.option(
    "--platforms",
    default=None,
    metavar="OS/ARCH[,...]",
    help="release one OCI image index over these platforms (from those image.toml declares), "
    "e.g. linux/amd64,linux/arm64; default: one image for this host's platform",
)


def _target(dist: Path) -> Path:
    return dist / __version__


def _client_for(target: Path, insecure: bool) -> RegistryClient:
    ref = ImageRef.parse(release_state.ReleaseState.load(target).repository, what="release repository")
    return RegistryClient(ref.registry, insecure=insecure, credentials=docker_config_credentials(ref.registry))


def _password() -> Any:
    from terminai_sandbox.cli.supply_cmd import _password as ask  # noqa: PLC0415 (one password prompt)

    return ask(confirm=False)


def _report(step: str, target: Path, as_json: bool) -> None:
    state = release_state.ReleaseState.load(target)
    record = state.require(step)
    if as_json:
        click.echo(json.dumps({"step": step, "digest": state.manifest_digest, **record}, indent=2, sort_keys=True))
    else:
        what = f"index ({', '.join(state.platforms)}) " if state.is_index else ""
        click.echo(f"release {state.version}: {step} passed for {what}{state.repository}@{state.manifest_digest}")


def _describe_options(image_dir: Path, builder_id: str | None) -> Any:
    from terminai_sandbox.release import Describe  # noqa: PLC0415

    builder, invocation = provenance.builder_from_env(os.environ, builder_id)
    return Describe(image_dir=image_dir, builder_id=builder, invocation_id=invocation)


def _build_image(target: Path, platforms: str | None = None) -> Any:
    from terminai_sandbox.assemble import BuildOptions, build_image  # noqa: PLC0415 (the build stack)

    # The release carries the suite's pinned test wheels: `contracts --wheels` then needs
    # no package index to check this image again.
    if platforms is None:
        return build_image(BuildOptions(output_dir=target, contract_wheels=target / "contract-wheels"))
    return _build_index(target, platforms)


def _chosen_platforms(image_dir: Path, platforms: str) -> tuple[str, ...]:
    """The platforms image.toml declares that ``--platforms`` names (refused before any build)."""
    from terminai_sandbox.assemble.spec import load_spec  # noqa: PLC0415

    chosen: tuple[str, ...] = load_spec(image_dir / "image.toml").select(platforms)
    return chosen


def _build_index(target: Path, platforms: str) -> Any:
    """``build --platforms``: each platform into dist/X.Y.Z/build/OS-ARCH, their index beside them."""
    from terminai_sandbox.assemble import BuildOptions  # noqa: PLC0415
    from terminai_sandbox.assemble.platforms import build_platforms  # noqa: PLC0415

    opts = BuildOptions(output_dir=target / "build", contract_wheels=target / "contract-wheels")
    return build_platforms(opts, _chosen_platforms(opts.resolved_spec().parent, platforms))


@click.group("release", invoke_without_command=True)
@click.option("--push", "repository", default=None, help="REGISTRY/REPO to publish to (runs every step)")
@click.option("--key", "key_path", type=params.InputPath(exists=True), default=None, help="signing key")
@_PLATFORMS
@_DIST
@click.option(
    "--image-dir",
    type=params.InputPath(want="dir"),
    default=Path("images/sandbox"),
    show_default=True,
    help="the image's spec and locks in this checkout (the SBOM and provenance record them)",
)
@_INSECURE
@click.pass_context
def release_cmd(
    ctx: click.Context,
    repository: str | None,
    key_path: Path | None,
    platforms: str | None,
    dist: Path,
    image_dir: Path,
    insecure_registry: bool,
) -> None:
    """Build → contracts → describe → push by digest → sign → verify → tag → dist/X.Y.Z/release.json.

    Without a STEP, runs every step (a release that stopped resumes: an image whose digest
    already passed the contracts is not tested again). With a STEP, runs that one.

    With --platforms linux/amd64,linux/arm64 the release is one OCI image index: every
    platform passes its contract suite (a foreign one under qemu-user), has its own SBOM and
    SLSA provenance, is signed and attested on its own digest, and the index is signed;
    release.json names the index digest and each platform's.
    """
    if ctx.invoked_subcommand is not None:
        if repository or key_path or platforms:
            raise ConfigError("--push, --key and --platforms run the whole release; a step takes its own options")
        return
    if not repository or not key_path:
        raise ConfigError(
            "pass --push REGISTRY/REPO and --key KEY to run the whole release",
            hint="or run one step: terminai-sandbox release build|contracts|describe|push|sign|verify|tag|manifest",
        )
    if not (image_dir / "image.toml").is_file():
        # Refused before anything is built or written (no empty dist/X.Y.Z is left behind).
        raise ConfigError(
            f"no image spec at {image_dir / 'image.toml'}: a release is made from a checkout",
            hint="run it from the repository's root, or pass --image-dir to the checkout's images/sandbox",
        )
    if platforms is not None:
        _chosen_platforms(image_dir, platforms)  # an undeclared platform is refused before the key is read
    from terminai_sandbox.engine.client import connect  # noqa: PLC0415
    from terminai_sandbox.release import KeySigner, ReleaseOptions, release  # noqa: PLC0415

    signer = KeySigner(keys.load_private(key_path.read_bytes(), _password()))
    target = _target(dist)
    ref = ImageRef.parse(repository, what="release repository")
    manifest = release(
        ReleaseOptions(
            repository=repository,
            version=__version__,
            dist_root=dist,
            describe=_describe_options(image_dir, None),
        ),
        build=lambda: _build_image(target, platforms),
        engine=connect(),
        signer=signer,
        client=RegistryClient(
            ref.registry, insecure=insecure_registry, credentials=docker_config_credentials(ref.registry)
        ),
        on_progress=progress.blob_reporter(),
    )
    click.echo(f"released {manifest['tag']} = {manifest['reference']} ({target / 'release.json'})")
    for name, entry in manifest.get("platforms", {}).items():
        click.echo(f"  {name:<14} {entry['reference']} (contracts: {entry['contracts']['summary']})")


@release_cmd.command("build")
@click.option("--repository", required=True, help="REGISTRY/REPO the release will be published to")
@_PLATFORMS
@_DIST
@_JSON
def build_step(repository: str, platforms: str | None, dist: Path, as_json: bool) -> None:
    """Step 1: build the image (or, with --platforms, the index) into dist/X.Y.Z/oci and load it."""
    from terminai_sandbox.release import steps  # noqa: PLC0415

    target = _target(dist)
    if platforms is not None:
        from terminai_sandbox.assemble import BuildOptions  # noqa: PLC0415

        _chosen_platforms(BuildOptions().resolved_spec().parent, platforms)  # refused before any build
    steps.build(target, version=__version__, repository=repository, image=lambda: _build_image(target, platforms))
    _report("build", target, as_json)


@release_cmd.command("contracts")
@_DIST
@_JSON
def contracts_step(dist: Path, as_json: bool) -> None:
    """Step 2: run the contract suite inside the built image (nothing goes on unless it passes)."""
    from terminai_sandbox.engine.client import connect  # noqa: PLC0415
    from terminai_sandbox.release import steps  # noqa: PLC0415

    steps.contracts(_target(dist), connect())
    _report("contracts", _target(dist), as_json)


@release_cmd.command("describe")
@_DIST
@_IMAGE_DIR
@click.option("--builder-id", default=None, help="who built it (default: the CI workflow when run there, else local)")
@_JSON
def describe_step(dist: Path, image_dir: Path, builder_id: str | None, as_json: bool) -> None:
    """Step 3: write the SBOM and the SLSA provenance of the image."""
    from terminai_sandbox.release import steps  # noqa: PLC0415

    steps.describe(_target(dist), _describe_options(image_dir, builder_id))
    _report("describe", _target(dist), as_json)


@release_cmd.command("push")
@_DIST
@_INSECURE
@_JSON
def push_step(dist: Path, insecure_registry: bool, as_json: bool) -> None:
    """Step 4: push the image by digest (no tag yet)."""
    from terminai_sandbox.release import steps  # noqa: PLC0415

    target = _target(dist)
    steps.push(target, _client_for(target, insecure_registry), on_progress=progress.blob_reporter())
    _report("push", target, as_json)


@release_cmd.command("sign")
@click.option("--key", "key_path", type=params.InputPath(exists=True), default=None, help="signing key")
@click.option("--keyless", "keyless_", is_flag=True, help="CI only: sign with the ambient OIDC identity")
@_DIST
@_INSECURE
@_JSON
def sign_step(key_path: Path | None, keyless_: bool, dist: Path, insecure_registry: bool, as_json: bool) -> None:
    """Step 5: sign the pushed digest and attest the SBOM and the provenance."""
    from terminai_sandbox.release import KeylessSigner, KeySigner, ReleaseSigner, steps  # noqa: PLC0415

    if bool(key_path) == keyless_:
        raise ConfigError("pass exactly one of --key or --keyless")
    signer: ReleaseSigner
    if key_path is not None:
        signer = KeySigner(keys.load_private(key_path.read_bytes(), _password()))
    else:
        signer = KeylessSigner()
    target = _target(dist)
    steps.sign(target, _client_for(target, insecure_registry), signer)
    _report("sign", target, as_json)


@release_cmd.command("verify")
@table_options(TRUST_OPTIONS, must_exist=True)
@_DIST
@_INSECURE
@_JSON
def verify_step(
    key_path: Path | None,
    certificate_identity: str | None,
    certificate_oidc_issuer: str | None,
    policy_path: Path | None,
    dist: Path,
    insecure_registry: bool,
    as_json: bool,
) -> None:
    """Step 6: verify the registry's copy (signature and both attestations); export its signatures."""
    from terminai_sandbox.release import steps  # noqa: PLC0415

    policy = policy_from_options(
        key=key_path, identity=certificate_identity, issuer=certificate_oidc_issuer, policy_file=policy_path
    )
    target = _target(dist)
    steps.verify(target, _client_for(target, insecure_registry), policy)
    _report("verify", target, as_json)


@release_cmd.command("tag")
@_DIST
@_INSECURE
@_JSON
def tag_step(dist: Path, insecure_registry: bool, as_json: bool) -> None:
    """Step 7: put the X.Y.Z tag on the manifest that verified."""
    from terminai_sandbox.release import steps  # noqa: PLC0415

    target = _target(dist)
    steps.tag(target, _client_for(target, insecure_registry))
    _report("tag", target, as_json)


@release_cmd.command("manifest")
@_DIST
@_JSON
def manifest_step(dist: Path, as_json: bool) -> None:
    """Step 8: write dist/X.Y.Z/release.json from the steps' records and print it."""
    from terminai_sandbox.release import steps  # noqa: PLC0415

    manifest = steps.manifest(_target(dist))
    # The manifest is JSON already; --json wraps it like every other command's result.
    click.echo(json.dumps({"ok": True, "manifest": manifest} if as_json else manifest, indent=2, sort_keys=True))


def register(group: click.Group) -> None:
    group.add_command(release_cmd)
