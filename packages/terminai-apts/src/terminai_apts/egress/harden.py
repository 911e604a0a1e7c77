"""The proxy process's own confinement, applied once its inputs are open and its socket bound.

It closes every inherited descriptor above stderr (before opening anything), sets
``no_new_privs`` (no exec can gain privileges), caps its resources (no core dumps,
descriptors for its connection limit, an address-space ceiling), and, when started as
root, drops to an unprivileged uid (``nobody`` by default) with no supplementary groups;
the listening socket and the ledger stay usable through the descriptors it already holds.
"""

from __future__ import annotations

import ctypes
import os
import pwd
import resource

from terminai_apts.egress.errors import ConfigError, LaunchError

_PR_SET_NO_NEW_PRIVS = 38
ADDRESS_SPACE = 4 << 30  # 4 GiB of virtual memory: threads reserve arenas; the heap stays far below


class HardeningError(LaunchError):
    """The proxy could not confine itself; it refuses to serve unconfined."""

    default_hint = "run the proxy on Linux as root or as the user it should serve as"


def close_inherited_descriptors() -> None:
    """Close every descriptor above 2 that this process inherited."""
    os.closerange(3, resource.getrlimit(resource.RLIMIT_NOFILE)[0])


def resolve_user(spec: str) -> tuple[int, int]:
    """``NAME`` or ``UID[:GID]`` → (uid, gid)."""
    uid_text, _, gid_text = spec.partition(":")
    try:
        if uid_text.isdigit():
            uid = int(uid_text)
            gid = int(gid_text) if gid_text else pwd.getpwuid(uid).pw_gid
        else:
            entry = pwd.getpwnam(uid_text)
            uid, gid = entry.pw_uid, int(gid_text) if gid_text else entry.pw_gid
    except (KeyError, ValueError):
        raise ConfigError(f"--user {spec!r}: no such user", hint="pass a user name or UID[:GID]") from None
    if uid == 0:
        raise ConfigError("--user: the proxy never serves as root", hint="pass an unprivileged user, e.g. nobody")
    return uid, gid


def confine(*, max_connections: int, user: tuple[int, int] | None) -> None:
    """Set no_new_privs and the rlimits; drop to ``user`` when running as root."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise HardeningError(f"prctl(PR_SET_NO_NEW_PRIVS) failed: {os.strerror(ctypes.get_errno())}")
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    # A client and an origin per connection, room for the over-limit clients that are being
    # answered 429 (each holds a descriptor for a moment), and the process's own.
    wanted = 4 * max_connections + 256
    if hard != resource.RLIM_INFINITY:
        wanted = min(wanted, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, wanted))
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
    if os.geteuid() != 0:
        return
    uid, gid = user if user is not None else resolve_user("nobody")
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    try:
        os.setuid(0)
    except PermissionError:
        return
    raise HardeningError("the proxy could regain root after dropping it")
