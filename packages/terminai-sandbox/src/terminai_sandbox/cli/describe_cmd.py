"""``terminai-sandbox sbom | provenance``: describe a built image (what is in it, how it was made)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from terminai_sandbox import outputs, resources
from terminai_sandbox._version import __version__
from terminai_sandbox.cli import params
from terminai_sandbox.cli.json_output import JSON_OPTION, emit
from terminai_sandbox.errors import ArtifactError, ConfigError, SbomError

if TYPE_CHECKING:
    from terminai_sandbox.artifacts.oci_layout import IndexLayout, OciLayout

# The SBOM stack (CycloneDX and its JSON-schema validator) and the build planner take
# seconds to import; they load when a command runs, so that '--help' answers at once.


def _one_document(output: Path, as_json: bool) -> None:
    """stdout holds one document: the written one (``-o -``) or the ``--json`` record, not both."""
    if as_json and outputs.is_stdout(output):
        raise click.UsageError("--json and -o - both print to stdout; write the document to a file with -o FILE")


def _open(layout: Path, platform: str | None = None) -> OciLayout:
    from terminai_sandbox.artifacts.oci_layout import IndexLayout, OciLayout, is_index_layout  # noqa: PLC0415

    # An image these commands cannot read is an SBOM failure (exit 12), whatever is wrong with it.
    try:
        if platform is None or not is_index_layout(layout):
            if platform is not None:
                raise SbomError(f"{layout} holds one image, not a multi-platform index", hint="drop --platform")
            return OciLayout.open(layout)
        return _platform_image(IndexLayout.open(layout), platform)
    except ArtifactError as exc:
        raise SbomError(exc.message, hint=exc.hint) from None


def _platform_image(layout: IndexLayout, platform: str) -> OciLayout:
    """The image the index lists for ``platform``, told by its own config (what the SBOM describes)."""
    have = []
    for image in layout.images:
        config = image.image_config()
        name = f"{config.get('os')}/{config.get('architecture')}"
        if name == platform:
            return image
        have.append(name)
    raise SbomError(
        f"{layout.root} has no image for {platform} (it has: {', '.join(have)})",
        hint=f"pass --platform as one of {', '.join(have)}",
    )


@click.command("sbom")
@click.argument("layout", type=params.InputPath(want="dir", exists=True))
@click.option(
    "-o", "--output", type=params.OutputPath(stdout=True), required=True, help="where to write the SBOM (- for stdout)"
)
@click.option("--repository", default="localhost/terminai/sandbox", show_default=True, help="image name in the SBOM")
@click.option("--version", "image_version", default=__version__, show_default=True, help="image version in the SBOM")
@click.option(
    "--source-date-epoch",
    type=params.Integer(0, 253402300799),
    default=None,
    help="timestamp in seconds (default: the image's created time)",
)
@click.option(
    "--image-dir",
    type=params.InputPath(want="dir", exists=True),
    default=None,
    help="directory holding debian.lock and requirements.lock (default: the locks shipped with this version)",
)
@click.option(
    "--platform",
    "platform",
    default=None,
    metavar="OS/ARCH",
    help="for a multi-platform layout: the platform whose image (and package databases) to describe",
)
@JSON_OPTION
def sbom_cmd(
    layout: Path,
    output: Path,
    repository: str,
    image_version: str,
    source_date_epoch: int | None,
    image_dir: Path | None,
    platform: str | None,
    as_json: bool,
) -> None:
    """Write the CycloneDX 1.6 SBOM of the image in OCI layout LAYOUT (validated, deterministic).

    For a multi-platform layout, --platform names the image: each platform has its own SBOM,
    read from that platform's own package databases, attested on its own manifest digest.
    """
    from terminai_sandbox import sbom  # noqa: PLC0415
    from terminai_sandbox.artifacts.image_locks import ImageLocks  # noqa: PLC0415

    _one_document(output, as_json)
    text = sbom.generate(
        sbom.SbomOptions(
            layout=_open(layout, platform),
            repository=repository,
            version=image_version,
            source_date_epoch=source_date_epoch,
            locks=ImageLocks.read(image_dir or resources.image_locks()),
        )
    )
    outputs.write(output, text, what="the SBOM")
    note = f"wrote {'the SBOM to stdout' if outputs.is_stdout(output) else output}"
    components = len(json.loads(text).get("components", []))
    if as_json:
        emit(True, {"output": str(output), "components": components})
        return
    click.echo(f"{note} ({components} components)", err=outputs.is_stdout(output))


@click.command("provenance")
@click.argument("layout", type=params.InputPath(want="dir", exists=True))
@click.option(
    "-o",
    "--output",
    type=params.OutputPath(stdout=True),
    required=True,
    help="where to write the predicate (- for stdout)",
)
@click.option("--repository", default="localhost/terminai/sandbox", show_default=True, help="image name")
@click.option("--version", "image_version", default=__version__, show_default=True, help="image version")
@click.option(
    "--image-dir",
    type=params.InputPath(want="dir"),
    default=Path("images/sandbox"),
    show_default=True,
    help="the checkout's image directory (image.toml and its locks) the image was built from",
)
@click.option(
    "--sbom",
    "sbom_path",
    type=params.InputPath(exists=True),
    default=None,
    help="the image's SBOM, recorded (by digest) as a resolved dependency",
)
@click.option(
    "--builder-id",
    default=None,
    help="who built it (default: the GitHub Actions workflow when run there, else urn:terminai-sandbox:builder:local)",
)
@click.option(
    "--platform",
    "platform",
    default=None,
    metavar="OS/ARCH",
    help="for a multi-platform layout: the platform whose image (and build plan) to describe",
)
@JSON_OPTION
def provenance_cmd(
    layout: Path,
    output: Path,
    repository: str,
    image_version: str,
    image_dir: Path,
    sbom_path: Path | None,
    builder_id: str | None,
    platform: str | None,
    as_json: bool,
) -> None:
    """Write the SLSA v1 provenance predicate of the image in OCI layout LAYOUT.

    For a multi-platform layout, --platform names the image: its provenance records that
    platform's build plan (its Debian and wheel locks, its stage keys), and is attested on
    that platform's manifest digest.

    Attest it with 'attest REF --predicate FILE --type slsaprovenance1'.
    """
    from terminai_sandbox import provenance  # noqa: PLC0415
    from terminai_sandbox.assemble import BuildOptions, plan_for  # noqa: PLC0415

    _one_document(output, as_json)
    builder, invocation = provenance.builder_from_env(os.environ, builder_id)
    image = _open(layout, platform)  # a layout that is none fails before the checkout is read
    if not (image_dir / "image.toml").is_file():
        raise ConfigError(
            f"{image_dir / 'image.toml'} does not exist: provenance describes the checkout the image was built from",
            hint="run it in that checkout, or pass --image-dir CHECKOUT/images/sandbox",
        )
    # The plan is made from this checkout, not built: provenance refuses it unless the
    # image's labels (commit, assembler format, contract version) agree with it.
    planned = plan_for(BuildOptions(spec_path=image_dir / "image.toml", platform=platform))
    predicate = provenance.generate(
        provenance.ProvenanceOptions(
            layout=image,
            plan=planned,
            repository=repository,
            version=image_version,
            builder_id=builder,
            invocation_id=invocation,
            sbom=sbom_path,
        )
    )
    outputs.write(output, provenance.dumps(predicate), what="the provenance predicate")
    facts = provenance.summary(predicate)
    note = f"wrote {'the predicate to stdout' if outputs.is_stdout(output) else output}"
    if as_json:
        emit(True, {"output": str(output), "builder": facts["builder"], "inputs": facts["resolvedDependencies"]})
        return
    click.echo(
        f"{note} (builder {facts['builder']}, {facts['resolvedDependencies']} pinned inputs)",
        err=outputs.is_stdout(output),
    )


def register(group: click.Group) -> None:
    for command in (sbom_cmd, provenance_cmd):
        group.add_command(command)
