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

IMAGE_VARIABLES = ("TERMINAI_SANDBOX_IMAGE", "GEMINI_SANDBOX_IMAGE")  # before --image, as the configuration reads them


def ask(args: Sequence[str], env: Mapping[str, str]) -> None:
    """Send the early requests for ``run ARGS`` (the engine it would ask first, by unix socket)."""
    paths = ["/_ping"]
    image = image_guess(args, env)
    if image is not None:
        paths.append(image_path(image))
    ask_early(candidate_hosts(env)[0], paths)


def image_guess(args: Sequence[str], env: Mapping[str, str]) -> str | None:
    """The pinned reference step 4 will inspect, when the environment or ``--image`` names a digest."""
    text = next((env[name] for name in IMAGE_VARIABLES if name in env), None)
    if text is None:
        for at, arg in enumerate(args):
            if arg == "--":
                break
            if arg == "--image" and at + 1 < len(args):
                text = args[at + 1]
            elif arg.startswith("--image="):
                text = arg.removeprefix("--image=")
    if text is None or "@" not in text:
        return None
    try:
        return ImageRef.parse(text).pinned
    except ConfigError:
        return None  # step 0 says what is wrong with it


def forget() -> None:
    """Close what was asked early and not read (the configuration chose otherwise, or a refusal came first)."""
    forget_early()
