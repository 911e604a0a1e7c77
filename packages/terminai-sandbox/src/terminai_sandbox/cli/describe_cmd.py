"""``terminai-sandbox sbom | provenance``: describe a built image (what is in it, how it was made)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from terminai_sandbox import provenance, resources, sbom
from terminai_sandbox._version import __version__
from terminai_sandbox.artifacts.image_locks import ImageLocks
from terminai_sandbox.artifacts.oci_layout import OciLayout
from terminai_sandbox.assemble import BuildOptions, plan_for
from terminai_sandbox.errors import ArtifactError, SbomError


def _open(layout: Path) -> OciLayout:
    # An image these commands cannot read is an SBOM failure (exit 12), whatever is wrong with it.
    try:
        return OciLayout.open(layout)
    except ArtifactError as exc:
        raise SbomError(exc.message, hint=exc.hint) from None


@click.command("sbom")
@click.argument("layout", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True, help="where to write the SBOM")
@click.option("--repository", default="localhost/terminai/sandbox", show_default=True, help="image name in the SBOM")
@click.option("--version", "image_version", default=__version__, show_default=True)
@click.option(
    "--source-date-epoch", type=int, default=None, help="timestamp in seconds (default: the image's created time)"
)
@click.option(
    "--image-dir",
    type=click.Path(path_type=Path, exists=True, file_okay=False),
    default=None,
    help="directory holding debian.lock and requirements.lock (default: the locks shipped with this version)",
)
def sbom_cmd(
    layout: Path,
    output: Path,
    repository: str,
    image_version: str,
    source_date_epoch: int | None,
    image_dir: Path | None,
) -> None:
    """Write the CycloneDX 1.6 SBOM of the image in OCI layout LAYOUT (validated, deterministic)."""
    text = sbom.generate(
        sbom.SbomOptions(
            layout=_open(layout),
            repository=repository,
            version=image_version,
            source_date_epoch=source_date_epoch,
            locks=ImageLocks.read(image_dir or resources.image_locks()),
        )
    )
    output.write_text(text)
    click.echo(f"wrote {output} ({len(json.loads(text).get('components', []))} components)")


@click.command("provenance")
@click.argument("layout", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True, help="where to write the predicate")
@click.option("--repository", default="localhost/terminai/sandbox", show_default=True, help="image name")
@click.option("--version", "image_version", default=__version__, show_default=True)
@click.option("--image-dir", type=click.Path(path_type=Path), default=Path("images/sandbox"), show_default=True)
@click.option("--sbom", "sbom_path", type=click.Path(path_type=Path, exists=True, dir_okay=False), default=None)
@click.option(
    "--builder-id",
    default=None,
    help=f"who built it (default: the GitHub Actions workflow when run there, else {provenance.LOCAL_BUILDER})",
)
def provenance_cmd(
    layout: Path,
    output: Path,
    repository: str,
    image_version: str,
    image_dir: Path,
    sbom_path: Path | None,
    builder_id: str | None,
) -> None:
    """Write the SLSA v1 provenance predicate of the image in OCI layout LAYOUT.

    Attest it with 'attest REF --predicate FILE --type slsaprovenance1'.
    """
    builder, invocation = provenance.builder_from_env(os.environ, builder_id)
    image = _open(layout)  # a layout that is none fails before the checkout is read
    # The plan is made from this checkout, not built: provenance refuses it unless the
    # image's labels (commit, assembler format, contract version) agree with it.
    planned = plan_for(BuildOptions(spec_path=image_dir / "image.toml"))
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
    output.write_text(provenance.dumps(predicate))
    facts = provenance.summary(predicate)
    click.echo(f"wrote {output} (builder {facts['builder']}, {facts['resolvedDependencies']} pinned inputs)")


def register(group: click.Group) -> None:
    for command in (sbom_cmd, provenance_cmd):
        group.add_command(command)
