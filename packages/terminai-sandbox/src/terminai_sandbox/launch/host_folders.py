"""The host's folders that decide what the next launch trusts: no session may write them.

Each is where this launcher, or a host tool it hands the session to, reads what it trusts:

* the launcher's state (``$XDG_STATE_HOME``, else ``$HOME/.local/state``, then
  ``terminai-sandbox``): the verify cache ``verified.json``, whose "verified earlier for this
  digest and policy" skips the signature check, and the audit ledger;
* the launcher's configuration (``$XDG_CONFIG_HOME``, else ``$HOME/.config``, then
  ``terminai-sandbox``): the default trust policy ``policy.json``, which names the keys and
  identities an image must be signed by;
* the TerminAI settings folder ``$HOME/.terminai``: ``settings.json`` picks the engine, the
  runtime (gVisor or not) and the network policy;
* the docker CLI's folder, ``$DOCKER_CONFIG`` as the CLI reads it (a relative value is
  relative to the working directory), else ``.docker`` in the home directory the password
  database names. ``config.json``'s ``proxies`` lands in every container the CLI creates,
  ``credsStore``/``credHelpers`` name programs it runs, and ``cli-plugins/`` holds programs
  it runs as subcommands (a planted ``docker-buildx`` runs at the user's next ``docker
  build``), whichever engine the session ran on. The launch's own ``docker run`` is given
  ``DOCKER_CONFIG`` set to this checked folder, so a ``$HOME`` pointed elsewhere cannot hand
  it another.

The first three are read through ``$HOME`` and ``XDG_*`` by this very launch, so they are
checked where this launch reads them. A working directory or a read-write mount that holds
or lies in any of them is refused, whether the folder exists yet or not (a session could
create it).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from terminai_sandbox.errors import ConfigError
from terminai_sandbox.launch import targets
from terminai_sandbox.launch.settings import settings_path

APP = "terminai-sandbox"


def _base(env: Mapping[str, str], variable: str, under_home: str) -> str:
    value = env.get(variable, "")
    if value:
        return value
    home = env.get("HOME", "") or caller_home() or "/"
    return f"{home}/{under_home}"


def caller_home() -> str:
    """The caller's home from the password database: ``$HOME`` is whatever the environment says."""
    import pwd  # noqa: PLC0415  (a built-in module)

    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        return ""  # no entry (a container's arbitrary uid): $HOME is still refused


def state_folder(env: Mapping[str, str]) -> str:
    """The launcher's state: the audit ledger and the verify cache."""
    return os.path.join(_base(env, "XDG_STATE_HOME", ".local/state"), APP)


def config_folder(env: Mapping[str, str]) -> str:
    """The launcher's configuration: the default trust policy."""
    return os.path.join(_base(env, "XDG_CONFIG_HOME", ".config"), APP)


def docker_folder(env: Mapping[str, str], home: str, cwd: str) -> str:
    """Where this user's docker CLI reads its configuration and plugins ("" when unknown)."""
    if env.get("DOCKER_CONFIG"):
        return os.path.normpath(os.path.join(cwd, env["DOCKER_CONFIG"]))  # join keeps an absolute value
    return os.path.normpath(f"{home}/.docker") if home.startswith("/") else ""


def folders(env: Mapping[str, str], home: str, cwd: str) -> list[tuple[str, str]]:
    """``(folder, what it holds)`` for each folder no session may write."""
    found = [
        (state_folder(env), "the launcher's verify cache and audit ledger"),
        (config_folder(env), "the launcher's default trust policy"),
        (docker_folder(env, home, cwd), "the docker CLI's configuration and plugins"),
    ]
    settings = settings_path(env)
    if settings is not None:
        found.append((str(settings.parent), "the settings that pick the engine, runtime and network"))
    return [(os.path.normpath(folder), what) for folder, what in found if folder.startswith("/")]


def overlap(cwd: str, writable: Sequence[str], tree: str) -> tuple[str, str, str] | None:
    """``(what, place, folder)`` for the first folder a session writes that holds or lies in ``tree``.

    Links count both ways: the place and the tree are compared as named and as resolved.
    """
    for place, what in ((cwd, "the working directory"), *((w, "the read-write mount") for w in writable)):
        for seen in dict.fromkeys((place, os.path.realpath(place))):
            for folder in dict.fromkeys((tree, os.path.realpath(tree))):
                if targets.within(seen, folder) or targets.within(folder, seen):
                    return what, place, folder
    return None


def check(*, cwd: str, writable: Sequence[str], env: Mapping[str, str], home: str) -> str:
    """Refuse a folder a session writes that holds, or lies in, one of :func:`folders`.

    Returns the docker CLI's folder (checked), which the launch's ``docker run`` is given.
    """
    for tree, holds in folders(env, home, cwd):
        found = overlap(cwd, writable, tree)
        if found is not None:
            what, place, folder = found
            raise ConfigError(
                f"{what} {place} holds or lies in {folder}, {holds}: a session could rewrite what "
                "the next launch or the host's tools trust",
                hint="start the sandbox from a project folder (not your home directory itself), keep "
                "HOME, XDG_STATE_HOME, XDG_CONFIG_HOME and DOCKER_CONFIG outside the folders the "
                "session writes, and mount those read-only if at all",
            )
    return docker_folder(env, home, cwd)
