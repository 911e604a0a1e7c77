"""What a session start asks the engine before the rest of the kernel is imported.

The console script calls :func:`ask` first on a ``run`` command line. It sends dockerd the
requests a warm start makes in any case and reads nothing: ``/_ping`` for step 1, and for
a reference pinned by digest the local image's inspect for step 4, or for a release tag
(``REPO:X.Y.Z``) the digest the registry serves for it, which dockerd asks the registry
for (step 2). The engine answers while the kernel's modules load, and preflight then reads
those answers through :func:`~terminai_sandbox.engine.transport.api_request` in their usual
place and order (the launch's client is handed :data:`~terminai_sandbox.engine.transport.LAUNCH_ANSWERS`,
the cache they wait in), and checks them as before (the digest is then verified in step 3).
Nothing is decided or recorded here, and a guess that turns out wrong (the configuration
names another image or engine) only leaves an answer unread.

A floating tag (``latest``, ...) is never asked early: step 2 refuses it unless allowed,
and before that refusal no registry is contacted. Nor is a tag of a registry the Docker
configuration may hold credentials for (an ``auths`` entry, a credential helper or store):
step 2 asks that one with the credentials, and an anonymous request beforehand would only
cost the registry a refusal (and count against anonymous rate limits).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from terminai_sandbox.common.reference import FLOATING_TAGS, ImageRef
from terminai_sandbox.engine.sockets import candidate_hosts
from terminai_sandbox.engine.transport import LAUNCH_ANSWERS, distribution_path, image_path
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
    image = image_request(args, env)
    if image is not None:
        paths.append(image)
    LAUNCH_ANSWERS.ask(candidate_hosts(env)[0], paths)


def image_request(args: Sequence[str], env: Mapping[str, str]) -> str | None:
    """The API path preflight will ask first about the image the environment or ``--image`` names.

    A digest: the local image's inspect (step 4). A release tag: the digest the registry
    serves for it (step 2). A floating or missing tag, or a reference step 0 refuses: none.
    """
    text = _chosen(args, env, IMAGE_VARIABLES, "--image")
    if not text:
        return None
    try:
        ref = ImageRef.parse(text)
    except ConfigError:
        return None  # step 0 says what is wrong with it
    if ref.digest is not None:
        return image_path(ref.pinned)
    if ref.tag is None or ref.tag in FLOATING_TAGS or may_have_credentials(ref.registry, env):
        return None
    return distribution_path(f"{ref.name}:{ref.tag}")


def may_have_credentials(registry: str, env: Mapping[str, str]) -> bool:
    """Whether the Docker configuration names credentials for ``registry``, or cannot be read to tell.

    The same places :func:`~terminai_sandbox.common.registry_auth.docker_config_credentials`
    looks (no helper is run here): a ``credHelpers`` entry or a ``credsStore``, or an
    ``auths`` entry with ``auth``.
    """
    import json  # noqa: PLC0415  (a tag only; the kernel loads it anyway, after the requests are sent)

    folder = env.get("DOCKER_CONFIG") or os.path.join(os.path.expanduser(env.get("HOME", "~")), ".docker")
    try:
        with open(os.path.join(folder, "config.json"), "rb") as handle:
            config = json.loads(handle.read())
    except FileNotFoundError:
        return False
    except (OSError, ValueError):
        return True
    if not isinstance(config, dict):
        return True
    helpers, auths = config.get("credHelpers") or {}, config.get("auths") or {}
    if not isinstance(helpers, dict) or not isinstance(auths, dict):
        return True
    if helpers.get(registry) or config.get("credsStore"):
        return True
    entry = auths.get(registry) or auths.get(f"https://{registry}")
    if not entry:
        return False
    return not isinstance(entry, dict) or bool(entry.get("auth"))


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
    LAUNCH_ANSWERS.forget()
