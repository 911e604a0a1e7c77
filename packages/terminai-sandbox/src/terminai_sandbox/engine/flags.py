"""The part of a session's command line in which docker and podman differ, and the engine CLI that runs it.

Pure (the host's identity and limits are passed in), so the flag-grammar tests pin every
difference without an engine; :mod:`.protocol` lists them with the reason for each.

Part of the launch kernel: standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping

from terminai_apts.records import frozen_record

from terminai_sandbox.common.which import which

NOFILE_CAP = 65536
NPROC_CAP = 4096


@frozen_record
class SessionFlags:
    """The part of the session's command line that depends on the engine."""

    home_tmpfs: str  # the --tmpfs value for the home directory
    identity: tuple[str, ...]  # --user / --userns
    extra: tuple[str, ...] = ()  # ulimits and other engine-only flags


def _bounded(limit: int, cap: int) -> int:
    import resource  # noqa: PLC0415  (podman's ulimits only)

    return cap if limit == resource.RLIM_INFINITY else min(limit, cap)


def session_flags(
    engine: str,
    *,
    home: str,
    home_size: str,
    uid: int,
    gid: int,
    image_uid: int,
    set_uid_gid: bool | None,
    rlimits: Mapping[str, tuple[int, int]] | None = None,
) -> SessionFlags:
    """The flags in which docker and podman differ (pure: the host's values are passed in).

    ``--user`` is always explicit and never 0: the image's ``USER`` (which a project layer
    could set to root) never decides who the session is. The host identity keeps files in
    mounted folders owned by the user; root on the host, and ``SANDBOX_SET_UID_GID=false``,
    get the image's unprivileged user (``image_uid``) instead.
    """
    use_host_identity = set_uid_gid is not False and uid != 0
    run_uid, run_gid = (uid, gid) if use_host_identity else (image_uid, image_uid)
    user = ("--user", f"{run_uid}:{run_gid}")
    base = f"{home}:rw,nosuid,nodev,size={home_size},mode=0700"
    if engine == "podman":
        limits = rlimits if rlimits is not None else host_rlimits()
        nofile = _bounded(limits["nofile"][1], NOFILE_CAP)
        nproc = _bounded(limits["nproc"][1], NPROC_CAP)
        ulimits = ("--ulimit", f"nofile={nofile}:{nofile}", "--ulimit", f"nproc={nproc}:{nproc}")
        # keep-id maps the rootless user to the same uid inside; it does not exist for root.
        userns = ("--userns=keep-id",) if use_host_identity else ()
        return SessionFlags(home_tmpfs=f"{base},U", identity=userns + user, extra=ulimits)
    return SessionFlags(home_tmpfs=f"{base},uid={run_uid},gid={run_gid}", identity=user)


def host_rlimits() -> dict[str, tuple[int, int]]:
    import resource  # noqa: PLC0415  (podman's ulimits only)

    return {
        "nofile": resource.getrlimit(resource.RLIMIT_NOFILE),
        "nproc": resource.getrlimit(resource.RLIMIT_NPROC),
    }


def run_binary(engine: str, env: Mapping[str, str]) -> str:
    """The engine CLI that runs the session (found on the launcher's PATH)."""
    return which(engine, path=env.get("PATH")) or engine
