"""What a session start asks the engine before the rest of the kernel is imported.

The console script calls :func:`ask` first on a ``run`` command line. It sends dockerd the
two requests a warm start makes in any case (``/_ping`` for step 1, and for a reference
pinned by digest the local image's inspect for step 4) and reads nothing: the engine
answers while the kernel's modules load, and preflight then reads those answers through
:func:`~terminai_sandbox.common.dockerapi.api_request` in their usual place and order.
Nothing is decided or recorded here, and a guess that turns out wrong (the configuration
names another image or engine) only leaves an answer unread.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from terminai_sandbox.common.dockerapi import ask_early, candidate_hosts, forget_early, image_path
from terminai_sandbox.common.reference import ImageRef
from terminai_sandbox.errors import ConfigError

# Read before --image and --engine, as the configuration reads them.
IMAGE_VARIABLES = ("TERMINAI_SANDBOX_IMAGE", "GEMINI_SANDBOX_IMAGE")
ENGINE_VARIABLES = ("TERMINAI_SANDBOX", "GEMINI_SANDBOX")
# What may choose dockerd: unset (the settings file or the default decide), docker, or "on".
MAY_BE_DOCKER = ("docker", "true", "1", "yes", "on")


def ask(args: Sequence[str], env: Mapping[str, str]) -> None:
    """Send the early requests for ``run ARGS`` (the engine it would ask first, by unix socket).

    Nothing is sent when the environment or ``--engine`` chose podman or switched the
    sandbox off: dockerd is then never contacted at all.
    """
    engine = _chosen(args, env, ENGINE_VARIABLES, "--engine")
    if engine is not None and engine.strip().lower() not in MAY_BE_DOCKER:
        return
    paths = ["/_ping"]
    image = image_guess(args, env)
    if image is not None:
        paths.append(image_path(image))
    ask_early(candidate_hosts(env)[0], paths)


def image_guess(args: Sequence[str], env: Mapping[str, str]) -> str | None:
    """The pinned reference step 4 will inspect, when the environment or ``--image`` names a digest."""
    text = _chosen(args, env, IMAGE_VARIABLES, "--image")
    if text is None or "@" not in text:
        return None
    try:
        return ImageRef.parse(text).pinned
    except ConfigError:
        return None  # step 0 says what is wrong with it


def _chosen(args: Sequence[str], env: Mapping[str, str], variables: Sequence[str], flag: str) -> str | None:
    """The first of ``variables`` set in ``env``, else the last ``flag`` value before ``--``."""
    text = next((env[name] for name in variables if name in env), None)
    if text is None:
        for at, arg in enumerate(args):
            if arg == "--":
                break
            if arg == flag and at + 1 < len(args):
                text = args[at + 1]
            elif arg.startswith(f"{flag}="):
                text = arg.removeprefix(f"{flag}=")
    return text


def forget() -> None:
    """Close what was asked early and not read (the configuration chose otherwise, or a refusal came first)."""
    forget_early()
