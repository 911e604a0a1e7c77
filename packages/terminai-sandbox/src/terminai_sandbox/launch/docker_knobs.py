"""The docker CLI's own folder: no session may write it, and the launch's CLI reads only it.

The docker CLI reads ``config.json`` from ``$DOCKER_CONFIG`` (default ``$HOME/.docker``) on
every command: ``proxies`` adds its variables to every container it creates,
``credsStore`` and ``credHelpers`` name ``docker-credential-*`` programs it runs to pull
and log in, and ``cli-plugins/`` holds programs it runs as subcommands (``docker
compose``, and ``docker build``, which recent CLIs hand to the ``buildx`` plugin). A
session that could write that folder would plant what runs on the host at the user's next
``docker`` command, whichever engine the session itself ran on.

The folder is ``$DOCKER_CONFIG`` as the CLI reads it (a relative value is relative to the
working directory), else ``.docker`` in the home directory the password database names
(``$HOME`` is whatever the environment says, issue #33). A working directory or a
read-write mount that holds or lies in it is refused, whether it exists yet or not (a
session could create it), and the launcher runs ``docker run`` with ``DOCKER_CONFIG`` set
to it, so a ``$HOME`` pointed elsewhere cannot hand the launch another folder.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from terminai_sandbox.errors import ConfigError
from terminai_sandbox.launch import targets


def config_folder(env: Mapping[str, str], home: str, cwd: str) -> str:
    """Where this user's docker CLI reads its configuration and plugins ("" when unknown)."""
    if env.get("DOCKER_CONFIG"):
        return os.path.normpath(os.path.join(cwd, env["DOCKER_CONFIG"]))  # join keeps an absolute value
    return os.path.normpath(f"{home}/.docker") if home.startswith("/") else ""


def check(*, cwd: str, writable: Sequence[str], env: Mapping[str, str], home: str) -> str:
    """The docker CLI's folder, refused when a folder a session writes holds or lies in it."""
    tree = config_folder(env, home, cwd)
    if not tree:
        return ""
    for place, what in ((cwd, "the working directory"), *((w, "the read-write mount") for w in writable)):
        for seen in dict.fromkeys((place, os.path.realpath(place))):
            for folder in dict.fromkeys((tree, os.path.realpath(tree))):
                if targets.within(seen, folder) or targets.within(folder, seen):
                    raise ConfigError(
                        f"{what} {place} holds or lies in {folder}, the docker CLI's configuration and plugins: "
                        "a session could plant a credential helper, a plugin or proxy settings the host's "
                        "docker runs or applies next",
                        hint="start the sandbox from a project folder (not your home directory itself), keep "
                        "DOCKER_CONFIG outside the folders the session writes, and mount those read-only if at all",
                    )
    return tree
