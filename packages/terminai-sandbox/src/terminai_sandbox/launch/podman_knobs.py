"""What podman reads besides its command line, refused when it could undo the session's hardening.

The launcher gives podman every hardening flag, but podman also reads containers.conf(5),
whose ``[containers]`` table adds ``volumes`` and ``devices`` to every container and sets
``pidns = "host"`` or ``seccomp_profile = "unconfined"``; mounts.conf adds bind mounts;
storage.conf and ``STORAGE_OPTS`` say where the image's files live and which mount program
runs; ``CONTAINER_HOST`` sends the session to another engine. With
``CONTAINERS_CONF=evil.conf`` the session saw the host's ``/run`` (the docker socket), the
host's processes and no seccomp filter. So:

* the environment variables podman(1), containers.conf(5) and containers-storage.conf(5)
  name for replacing those files or the engine are refused (the system's files under
  ``/etc/containers`` are root's and stay in force);
* a rootless user's own files (``$XDG_CONFIG_HOME/containers``, the storage under
  ``$XDG_DATA_HOME/containers``, podman's runtime folder with its ``pause.pid``) must not
  be writable from a session: a working directory or a read-write mount that contains or
  lies inside one is refused, whether the folder exists yet or not (a session could create
  it). Rootful podman reads only root's files under ``/etc``, ``/usr/share`` and
  ``/var/lib/containers``, which the protected trees already keep out of every mount.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from terminai_sandbox.errors import ConfigError
from terminai_sandbox.launch import host_folders

# Name -> what it does to the session (podman(1) ENVIRONMENT, containers.conf(5) FILES,
# containers-storage.conf(5) ENVIRONMENT). The registries files are left alone: the
# launcher pulls by a verified digest, which no mirror can change.
REFUSED_VARIABLES = {
    "CONTAINERS_CONF": "replaces containers.conf, which can add host volumes, devices and host namespaces",
    "CONTAINERS_CONF_OVERRIDE": "overrides containers.conf, which can add host volumes, devices and host namespaces",
    "CONTAINERS_STORAGE_CONF": "replaces storage.conf, which says where the verified image's files live",
    "STORAGE_DRIVER": "changes where and how the verified image's files are stored",
    "STORAGE_OPTS": "changes the storage's options, among them a mount program podman runs",
    "CONTAINER_HOST": "sends the session to another engine than the one preflight checked",
    "CONTAINER_CONNECTION": "sends the session to another engine than the one preflight checked",
}


def refuse_variables(env: Mapping[str, str]) -> None:
    for name, effect in REFUSED_VARIABLES.items():
        if name in env:
            raise ConfigError(
                f"{name} is set: for podman it {effect}",
                hint=f"unset {name} for the sandbox; podman's system configuration under /etc/containers still applies",
            )


def user_trees(env: Mapping[str, str], home: str) -> tuple[str, ...]:
    """Where rootless podman reads its user's configuration, storage and pause process."""
    homes = dict.fromkeys(h for h in (home, env.get("HOME", "")) if h.startswith("/"))
    config = [env.get("XDG_CONFIG_HOME", ""), *(f"{h}/.config" for h in homes)]
    data = [env.get("XDG_DATA_HOME", ""), *(f"{h}/.local/share" for h in homes)]
    found = [f"{base}/containers" for base in (*config, *data) if base.startswith("/")]
    runtime = env.get("XDG_RUNTIME_DIR") or f"/run/user/{os.getuid()}"
    found.append(runtime)
    return tuple(dict.fromkeys(os.path.normpath(path) for path in found))


def refuse_writable(cwd: str, writable: Sequence[str], env: Mapping[str, str], home: str) -> None:
    """Rootless: no folder a session writes may hold, or lie in, podman's own files."""
    for tree in user_trees(env, home):
        found = host_folders.overlap(cwd, writable, tree)
        if found is not None:
            what, place, folder = found
            raise ConfigError(
                f"{what} {place} holds or lies in {folder}, where rootless podman reads its configuration, "
                "storage or pause process: a session could rewrite what podman runs next",
                hint="start the sandbox from a project folder outside podman's own folders (not your home "
                "directory itself), and mount those folders read-only if at all",
            )


def check(engine: str | None, *, cwd: str, writable: Sequence[str], env: Mapping[str, str], home: str) -> None:
    """Refuse what podman would read that undoes the hardening (nothing for other engines)."""
    if engine != "podman":
        return
    refuse_variables(env)
    if os.geteuid() != 0:
        refuse_writable(cwd, writable, env, home)
