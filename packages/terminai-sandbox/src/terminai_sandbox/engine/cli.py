"""What the docker and podman CLIs share for a session's image: a project layer's build, its saved layers.

Part of the launch kernel: standard library only (``subprocess`` and ``tarfile`` load only
when a project layer is built or checked).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from terminai_sandbox.errors import EngineError, LaunchError

#: How each engine CLI is told to use only what it holds (no pulls) and to leave nothing behind.
NO_PULL = {"docker": ("--pull=false", "--rm", "--force-rm"), "podman": ("--pull=never",)}


def build_words(
    engine: str,
    *,
    context: Path,
    dockerfile: str,
    build_args: Mapping[str, str],
    tag: str,
    labels: Mapping[str, str],
) -> list[str]:
    """The arguments of ``ENGINE build`` for a project layer: quiet, no network, no pulls."""
    args = ["build", "--quiet", "--network=none", *NO_PULL[engine], "--file", str(context / dockerfile), "--tag", tag]
    for key, value in build_args.items():
        args += ["--build-arg", f"{key}={value}"]
    for key, value in labels.items():
        args += ["--label", f"{key}={value}"]
    return [*args, str(context)]


def build_failure(dockerfile: str, stdout: str, stderr: str) -> LaunchError:
    """A failed project-layer build, with the last lines the engine CLI printed."""
    tail = "\n".join((stdout + stderr).strip().splitlines()[-15:])
    return LaunchError(f"building {dockerfile} failed:\n{tail}")


def cli_build(
    command: list[str],
    env: Mapping[str, str],
    *,
    context: Path,
    dockerfile: str,
    build_args: Mapping[str, str],
    tag: str,
    labels: Mapping[str, str],
) -> str:
    """``docker build`` of a project layer (:func:`build_words`); the image id it printed."""
    import subprocess  # noqa: PLC0415  (a project layer only)

    words = build_words("docker", context=context, dockerfile=dockerfile, build_args=build_args, tag=tag, labels=labels)
    try:
        result = subprocess.run(
            [*command, *words], capture_output=True, text=True, env=dict(env), timeout=600, check=False
        )
    except OSError as exc:
        raise EngineError(f"cannot start {command[0]}: {exc.strerror}") from None
    except subprocess.TimeoutExpired:
        raise LaunchError(f"building {dockerfile} did not finish within 600 s") from None
    if result.returncode != 0:
        raise build_failure(dockerfile, result.stdout, result.stderr)
    printed = result.stdout.strip().splitlines()
    return printed[-1].strip() if printed else ""


def saved_layer_members(
    command: list[str], env: Mapping[str, str], tag: str, skip: int, scratch: Path
) -> list[tuple[str, int, str, bool]]:
    """Every entry of the image's layers after the first ``skip``, as ``docker save`` writes them:
    (name, mode, ``file``/``device`` (a device node or FIFO)/``other``, whether it carries file capabilities)."""
    import subprocess  # noqa: PLC0415  (a project layer only)
    import tarfile  # noqa: PLC0415

    archive = scratch / "image.tar"
    try:
        result = subprocess.run(
            [*command, "save", "-o", str(archive), tag],
            capture_output=True,
            text=True,
            env=dict(env),
            timeout=600,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EngineError(f"cannot save {tag} to check its layers: {exc}") from None
    if result.returncode != 0:
        raise EngineError(f"cannot save {tag} to check its layers: {last_line(result.stderr)}")
    members = []
    try:
        with tarfile.open(archive) as image:
            manifest = json.load(image.extractfile("manifest.json"))  # type: ignore[arg-type]
            for layer in manifest[0]["Layers"][skip:]:
                with tarfile.open(fileobj=image.extractfile(layer)) as tar:
                    for entry in tar:
                        capabilities = "SCHILY.xattr.security.capability" in entry.pax_headers
                        kind = "file" if entry.isreg() else "device" if entry.isdev() else "other"
                        members.append((entry.name, entry.mode, kind, capabilities))
    except (tarfile.TarError, KeyError, IndexError, TypeError, ValueError) as exc:
        raise EngineError(f"the saved image {tag} cannot be read: {exc}") from None
    return members


def last_line(text: str) -> str:
    """The last non-blank line of an engine CLI's output (its error, as a rule)."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no error message"
