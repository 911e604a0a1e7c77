"""The image reference baked into a released launcher.

A release writes ``default-image.txt`` at the package root (``scripts/bake-default-image``)
before it builds the wheels, so ``terminai-sandbox run`` with no image configured starts
the image of its own release: ``REGISTRY/REPO:X.Y.Z@sha256:…``, ``X.Y.Z`` being the
launcher's version. A development install has no such file and therefore no default.

A file that is present but wrong is refused rather than ignored: falling back to "no
default" would hide a damaged or hand-edited install, and any other fallback would run
an image nobody chose.

This runs on every launch, so it imports only the package's leaf modules and reads the
file only when called.
"""

from __future__ import annotations

from pathlib import Path

from terminai_sandbox._version import __version__
from terminai_sandbox.common.reference import ImageRef
from terminai_sandbox.errors import ConfigError

FILE_NAME = "default-image.txt"
EXPECTED_FORM = "REGISTRY/REPOSITORY:X.Y.Z@sha256:<64 hex> on one line"


def default_image_path() -> Path:
    """Where an installed launcher keeps its baked default (it may not exist).

    The package root, not this folder: the release tooling and the wheel's package data
    name ``terminai_sandbox/default-image.txt``.
    """
    return Path(__file__).parent.with_name(FILE_NAME)


def builtin_default(path: Path | None = None, *, version: str = __version__) -> str | None:
    """The default image reference of this launcher, or ``None`` when none was baked in.

    ``path`` defaults to ``default-image.txt`` at the package root. The file must hold
    exactly one digest-pinned reference with an explicit registry host, tagged with
    ``version``; anything else raises :class:`ConfigError` naming the file.
    """
    source = path if path is not None else default_image_path()
    try:
        data = source.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _refuse(source, f"cannot be read ({exc.strerror or exc})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise _refuse(source, "is not UTF-8 text") from None
    return _check(source, text.strip(), version)


def _check(source: Path, text: str, version: str) -> str:
    if not text:
        raise _refuse(source, "is empty")
    lines = text.splitlines()
    if len(lines) > 1:
        raise _refuse(source, f"holds {len(lines)} lines; a release writes exactly one reference")
    try:
        ref = ImageRef.parse(text, what="the reference")
    except ConfigError as exc:
        raise _refuse(source, f"is malformed: {exc.message}") from None
    # Without an explicit host the reference would mean Docker Hub, which no release publishes to.
    if text.split("/", 1)[0] != ref.registry:
        raise _refuse(source, f"names no registry host in {text!r}")
    if ref.tag is None:
        raise _refuse(source, f"has no version tag in {text!r}")
    if ref.tag != version:
        raise _refuse(source, f"is tagged {ref.tag}, but this launcher is version {version}")
    if ref.digest is None:
        raise _refuse(source, f"is not pinned to a digest: {text!r}")
    return text


def _refuse(source: Path, problem: str) -> ConfigError:
    return ConfigError(
        f"the built-in default image file {source} {problem} (expected {EXPECTED_FORM})",
        hint=(
            "reinstall terminai-sandbox from a release wheel (its file is written by the release), "
            "or name the image yourself with TERMINAI_SANDBOX_IMAGE or --image"
        ),
    )
