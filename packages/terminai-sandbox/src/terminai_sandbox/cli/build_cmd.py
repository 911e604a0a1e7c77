"""``terminai-sandbox build | lock | contracts | engine``: the image build commands."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from terminai_sandbox.cli import params, progress
from terminai_sandbox.cli.json_output import JSON_OPTION, emit
from terminai_sandbox.errors import ContractError, EngineError, LockError, SandboxError

if TYPE_CHECKING:
    from terminai_sandbox.assemble import BuildOptions
    from terminai_sandbox.engine.client import EngineRefused

# The build stack and the engine client load when a command runs, so that '--help' answers at once.


def _progress(message: str) -> None:
    progress.line(message)


def _writable(directory: Path) -> None:
    """Refuse a directory the command could not write its output into (made if missing)."""
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryFile(dir=directory):
        pass


def _suite_refused(image: str, exc: EngineRefused) -> SandboxError:
    """The engine would not run the suite in ``image``: an image that cannot hold the
    contract (no python3) fails the contract; anything else is the engine's refusal."""
    text = exc.explanation or exc.message
    if "executable file not found" in text:
        return ContractError(
            f"{image} cannot run the contract suite: the image has no python3",
            hint="contracts test a T-APTS sandbox image (terminai-sandbox build)",
        )
    return EngineError(f"the engine refused to run the contract suite in {image}: {text}")


def _spec_option(func: click.decorators.FC) -> click.decorators.FC:
    return click.option(
        "--spec",
        "spec_path",
        type=params.InputPath(),
        default=None,
        help="image.toml to build (default: images/sandbox/image.toml)",
    )(func)


def _platforms_option(what: str) -> Callable[[click.decorators.FC], click.decorators.FC]:
    return click.option(
        "--platforms",
        default=None,
        metavar="OS/ARCH[,...]",
        help=f"comma-separated platforms to {what}, from those image.toml declares",
    )


def _build_index(opts: BuildOptions, chosen: tuple[str, ...], *, reproducible: bool, as_json: bool) -> None:
    """``build --platforms A,B``: every platform, then the index over them (or the check of both)."""
    from terminai_sandbox.assemble.platforms import build_platforms  # noqa: PLC0415
    from terminai_sandbox.assemble.reproduce import check_reproducible_index  # noqa: PLC0415

    if reproducible:
        with progress.step("two independent builds of every platform"):
            index, again = check_reproducible_index(opts, chosen)
        click.echo(f"reproducible: both builds gave the index {again.index_digest}", err=True)
    else:
        with progress.step(f"build {', '.join(chosen)}"):
            index = build_platforms(opts, chosen)
    if as_json:
        click.echo(json.dumps(index.to_dict(), indent=2, sort_keys=True))
        return
    click.echo(f"index digest     {index.index_digest}")
    click.echo(f"outputs          {index.layout} (OCI layout with the image index)")
    for each in index.platforms:
        click.echo(f"{each.platform:<16} {each.manifest_digest} ({each.oci_layout.root})")


@click.command("build")
@_spec_option
@_platforms_option("build (default: this host's platform); two or more also write one OCI index")
@click.option("--output", type=params.OutputDir(), default=None, help="output directory (default dist/X.Y.Z)")
@click.option("--no-cache", is_flag=True, help="rebuild every stage from scratch")
@click.option("--no-load", is_flag=True, help="do not load the result into the engine")
@click.option(
    "--check-reproducible",
    "reproducible",
    is_flag=True,
    help="build again independently (own venv, copy of the sources, cold caches, umask 077) and compare",
)
@click.option(
    "--record-layers",
    is_flag=True,
    help="write the lock-only layers' digests to layers.lock (after changing the locks on purpose)",
)
@click.option("--tag", default=None, hidden=True, help="image reference (default REPOSITORY:X.Y.Z)")
@click.option("--revision", default=None, hidden=True, help="source revision label (default: git HEAD)")
@click.option("--json", "as_json", is_flag=True, help="print the result as JSON")
def build_cmd(
    spec_path: Path | None,
    platforms: str | None,
    output: Path | None,
    no_cache: bool,
    no_load: bool,
    reproducible: bool,
    record_layers: bool,
    tag: str | None,
    revision: str | None,
    as_json: bool,
) -> None:
    """Build the sandbox image from pinned inputs into dist/X.Y.Z and load it.

    With several --platforms each is built into dist/X.Y.Z/OS-ARCH and dist/X.Y.Z/oci-index
    holds one OCI image index over them; a platform other than the host's runs under
    qemu-user (Debian's qemu-user-static) and loads as REPOSITORY:X.Y.Z-ARCH.
    """
    from terminai_sandbox.assemble import BuildOptions, build_image, check_reproducible  # noqa: PLC0415
    from terminai_sandbox.assemble.image import check_inputs  # noqa: PLC0415
    from terminai_sandbox.assemble.inputs import default_platform  # noqa: PLC0415
    from terminai_sandbox.assemble.spec import load_spec  # noqa: PLC0415
    from terminai_sandbox.engine import client as engine_mod  # noqa: PLC0415

    opts = BuildOptions(
        spec_path=spec_path,
        output_dir=output,
        use_cache=not no_cache,
        load=not no_load,
        progress=_progress,
        record_layers=record_layers,
        tag=tag,
        revision=revision,
    )
    declared = load_spec(opts.resolved_spec())
    chosen = declared.select(platforms) if platforms is not None else (default_platform(declared),)
    # Fail before minutes of building, not after them: every input file, then the engine.
    for platform in chosen:
        check_inputs(dataclasses.replace(opts, platform=platform))
    if not no_load:
        engine_mod.connect()
    if len(chosen) > 1:
        _build_index(opts, chosen, reproducible=reproducible, as_json=as_json)
        return
    opts = dataclasses.replace(opts, platform=chosen[0])
    if reproducible:
        with progress.step("two independent builds"):
            result, second = check_reproducible(opts)
        click.echo(f"reproducible: both builds gave {second.manifest_digest}", err=True)
    else:
        with progress.step("build"):
            result = build_image(opts)
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2, sort_keys=True))
        return
    click.echo(f"reference        {result.reference}")
    click.echo(f"platform         {result.platform}")
    click.echo(f"config digest    {result.config_digest}")
    click.echo(f"manifest digest  {result.manifest_digest}")
    click.echo(f"size             {result.uncompressed_size / 1e6:.1f} MB ({result.compressed_size / 1e6:.1f} MB gzip)")
    click.echo(f"outputs          {result.oci_layout.root} (OCI layout), {result.archive} (docker archive)")


@click.command("lock")
@_spec_option
@click.option("--check", is_flag=True, help="report drift (newer versions, locked versions gone) instead of relocking")
@_platforms_option("lock (default: every declared platform)")
@JSON_OPTION
def lock_cmd(spec_path: Path | None, check: bool, platforms: str | None, as_json: bool) -> None:
    """Resolve each platform's Debian set and wheels into its locks (or check them).

    amd64: images/sandbox/debian.lock (requirements.lock is reviewed by hand); another
    architecture: debian.ARCH.lock and requirements.ARCH.lock (that architecture's wheels
    of the same versions).
    """
    from terminai_sandbox.assemble import debian, repo_root  # noqa: PLC0415
    from terminai_sandbox.assemble.locking import lock_platform  # noqa: PLC0415
    from terminai_sandbox.assemble.spec import load_spec  # noqa: PLC0415

    declared = load_spec(spec_path or repo_root() / "images" / "sandbox" / "image.toml")
    specs = [declared.for_platform(platform) for platform in declared.select(platforms)]
    if check:
        report = []
        counts = {}
        for spec in specs:
            lock = debian.read_lock(spec.debian_lock)
            counts[spec.platform] = len(lock.packages)
            report += [f"{spec.platform}: {line}" for line in debian.drift(spec, lock)]
        for line in [] if as_json else report:
            click.echo(line)
        if report:
            raise LockError(
                f"{len(report)} drift item(s) in {', '.join(str(s.debian_lock) for s in specs)}",
                hint="review and relock with 'terminai-sandbox lock' (a pull request, never silently)",
            )
        emit(
            as_json,
            {"platforms": counts, "drift": []},
            *(f"no drift: {n} locked packages of {platform} match the mirrors" for platform, n in counts.items()),
        )
        return
    written = [lock_platform(spec, log=_progress) for spec in specs]
    emit(
        as_json,
        {"platforms": {item.platform: item.to_dict() for item in written}},
        *(item.summary() for item in written),
        "next: 'terminai-sandbox build --record-layers' records the new layer digests in layers.lock",
    )


@click.command("contracts")
@click.argument("image", type=params.Reference())
@click.option(
    "--output",
    type=params.OutputDir(),
    default=None,
    help="directory to write contracts.junit.xml into (default: dist)",
)
@click.option(
    "--wheels",
    type=params.OutputDir(),
    default=None,
    help="directory of the suite's pinned test wheels (a release's contract-wheels/): those present are "
    "used without a package index, missing ones are fetched into it by hash",
)
@click.option("--json", "as_json", is_flag=True, help="print the report as JSON")
def contracts_cmd(image: str, output: Path | None, wheels: Path | None, as_json: bool) -> None:
    """Run the T-APTS contract suite inside IMAGE (non-root, read-only, --network none).

    The engine must answer within 15 s (TERMINAI_ENGINE_TIMEOUT=SECONDS), each request after
    that within 120 s; a pull's progress stream within an hour. See docs/DEADLINES.md.
    """
    from terminai_sandbox.assemble import repo_root  # noqa: PLC0415
    from terminai_sandbox.contracts import run_contracts  # noqa: PLC0415
    from terminai_sandbox.engine import client as engine_mod  # noqa: PLC0415

    where = output or repo_root() / "dist"
    _writable(where)  # a report location that cannot be written fails now, not after the suite
    engine = engine_mod.connect()
    with progress.step("contract suite"):
        try:
            report = run_contracts(engine, image, wheelhouse=wheels, output_dir=where, on_pull=progress.pull_reporter())
        except engine_mod.EngineRefused as exc:
            raise _suite_refused(image, exc) from None
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2, sort_keys=True))
    else:
        click.echo(
            f"contracts: {len(report.passed)} passed, {len(report.failed)} failed in {report.seconds:.1f} s"
            f" (JUnit: {report.junit})"
        )
        for line in [] if report.emulation is None else report.emulation.lines():
            click.echo(line)


@click.group("engine")
def engine_group() -> None:
    """Check the container engine (scripts/ensure-engine installs and starts one)."""


@engine_group.command("status")
@JSON_OPTION
def engine_status(as_json: bool) -> None:
    """Say which engine answers, or why none does (TERMINAI_SANDBOX and the settings file are honoured as by 'run').

    An engine that does not answer within 5 s (TERMINAI_ENGINE_TIMEOUT=SECONDS) is reported
    as not answering (exit 4).
    """
    from terminai_sandbox.common import deadlines  # noqa: PLC0415
    from terminai_sandbox.engine import client as engine_mod  # noqa: PLC0415
    from terminai_sandbox.engine.runtime import parse_runtime  # noqa: PLC0415
    from terminai_sandbox.launch.config import ENGINES, parse_engine  # noqa: PLC0415
    from terminai_sandbox.launch.settings import SettingsFile  # noqa: PLC0415

    # The settings file is read through the launcher's own loader and when 'run' reads it
    # (for the engine unless the environment chooses, for the runtime unless
    # TERMINAI_SANDBOX_RUNTIME does), so a broken one is refused here exactly as there.
    settings = SettingsFile(os.environ)
    if "TERMINAI_SANDBOX_RUNTIME" not in os.environ and (runtime := settings.runtime()) is not None:
        parse_runtime(runtime, "settings tools.sandboxRuntime")
    chosen = next(
        (
            (variable, os.environ[variable])
            for variable in ("TERMINAI_SANDBOX", "GEMINI_SANDBOX")
            if variable in os.environ
        ),
        None,
    )
    if chosen is None and (from_settings := settings.engine()) is not None:
        chosen = ("settings", from_settings)
    available = [name for name in ENGINES if shutil.which(name)]
    if chosen is not None and parse_engine(chosen[1], chosen[0], available=available) is None:
        emit(
            as_json,
            {"engine": None, "reason": f"{chosen[0]}={chosen[1]}"},
            f"no engine: {chosen[0]}={chosen[1]} turns the sandbox off",
        )
        return
    found = engine_mod.connect(probe=deadlines.ENGINE_PROBE_SECONDS)
    info = found.info
    emit(
        as_json,
        {"engine": info.name, "version": info.version, "api_version": info.api_version, "host": info.host},
        f"{info.name} {info.version} (API {info.api_version}) at {info.host}",
    )


def register(group: click.Group) -> None:
    for command in (build_cmd, lock_cmd, contracts_cmd, engine_group):
        group.add_command(command)
