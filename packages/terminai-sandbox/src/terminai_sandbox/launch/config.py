"""Launcher configuration: frozen values parsed strictly from a passed-in environment.

Only ``cli.py`` reads ``os.environ``; it hands the mapping to :func:`load_launch_config`.
Every malformed value raises :class:`ConfigError` naming the variable, the bad item and the
accepted form. Nothing falls back silently: an unknown engine name, an empty image or a
mount of the docker socket is an error, never a default.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path, PurePosixPath

from terminai_apts.records import frozen_record

from terminai_sandbox.common import journal_trust
from terminai_sandbox.common.reference import ImageRef
from terminai_sandbox.engine.runtime import DEFAULT as DEFAULT_RUNTIME
from terminai_sandbox.engine.runtime import parse_runtime
from terminai_sandbox.engine.sockets import SOCKET_NAMES, engine_sockets
from terminai_sandbox.errors import ConfigError
from terminai_sandbox.launch import host_folders, network, reserved_env, targets
from terminai_sandbox.launch.host_folders import caller_home
from terminai_sandbox.launch.network import NetworkChoice

ENGINES = ("docker", "podman")
_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SECRET_NAME = re.compile(r"(TOKEN|SECRET|PASSWORD|PASSWD|KEY|CREDENTIAL|AUTH)", re.IGNORECASE)
_ENV_NAME, _SECRET_NAME = ENV_NAME, SECRET_NAME


@frozen_record
class Mount:
    """One ``SANDBOX_MOUNTS`` entry: a host path mounted at a container path."""

    source: str
    target: str
    read_only: bool = True


@frozen_record
class Port:
    """One ``SANDBOX_PORTS`` entry, published on the host's loopback only."""

    host: int
    container: int


@frozen_record
class EnvItem:
    """One ``SANDBOX_ENV`` entry: a value, or a name inherited from the launcher."""

    name: str
    value: str | None  # None: inherited by name from the launcher's environment (never in argv)


@frozen_record
class LaunchConfig:
    """Every launcher knob, resolved and validated; where each value came from is kept for messages."""

    engine: str | None  # None: the sandbox is off
    engine_from: str
    image: ImageRef | None
    image_from: str
    flags: tuple[str, ...] = ()
    mounts: tuple[Mount, ...] = ()
    ports: tuple[Port, ...] = ()
    env: tuple[EnvItem, ...] = ()
    set_uid_gid: bool | None = None
    runtime: str = DEFAULT_RUNTIME  # runc (the engine's default) or runsc (gVisor)
    runtime_from: str = "the default"
    network: NetworkChoice = network.OFF  # off: --network none and nothing else, as before the knob
    # The memory journal's checkpoint and witness on the host (TERMINAI_JOURNAL_*), passed in checked.
    journal: journal_trust.JournalTrust = journal_trust.JournalTrust()
    # The docker CLI's folder, checked (launch/host_folders.py); "" when unknown.
    docker_config: str = ""


def _var(env: Mapping[str, str], *names: str) -> tuple[str | None, str]:
    for name in names:
        if name in env:
            return env[name], name
    return None, names[0]


def parse_bool(value: str, variable: str) -> bool:
    low = value.strip().lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise ConfigError(f"{variable}={value!r} is not a boolean", hint=f"use one of {', '.join(_TRUE + _FALSE)}")


def parse_engine(value: str, variable: str, *, available: Sequence[str]) -> str | None:
    low = value.strip().lower()
    if low in ("false", "0", ""):
        return None
    if low in ("true", "1"):
        for candidate in ("docker", "podman"):
            if candidate in available:
                return candidate
        raise ConfigError(
            f"{variable}={value!r} asks for a sandbox but neither docker nor podman is installed",
            hint="install Docker or Podman, or set it to false",
        )
    if low == "sandbox-exec":
        # TerminAI's macOS Seatbelt profile: it runs no image, so nothing here could verify
        # or contract-check what it runs. Named, so that the refusal says why.
        raise ConfigError(
            f"{variable}=sandbox-exec (macOS Seatbelt) is not supported: this launcher runs the verified image",
            hint="use docker or podman",
        )
    if low not in ENGINES:
        raise ConfigError(
            f"{variable}={value!r} is not a sandbox engine",
            hint="accepted: true, 1, false, 0, docker, podman",
        )
    if low not in available:
        raise ConfigError(
            f"{variable}={low} but {low} is not installed", hint=f"install {low} or choose another engine"
        )
    return low


def parse_flags(
    value: str,
    *,
    allowed: Sequence[str] = (),
    engine: str | None = None,
    allowed_env: frozenset[str] = frozenset(),
) -> tuple[str, ...]:
    """``SANDBOX_FLAGS``: shell words, parsed with the engine's grammar and held to an allowlist.

    See :mod:`terminai_sandbox.launch.flags`: flags outside the list of harmless ones are
    refused unless ``--unsafe-allow-flag`` names them (``allowed``); reserved environment
    names are refused unless ``--unsafe-allow-env`` names them (``allowed_env``).
    """
    if not value.strip():
        return ()
    import shlex  # noqa: PLC0415  (SANDBOX_FLAGS only)

    try:
        words = shlex.split(value)
    except ValueError as exc:
        raise ConfigError(
            f"SANDBOX_FLAGS cannot be split into words: {exc}", hint="quote values the way a POSIX shell would"
        ) from None
    for word in words:
        if word in (";", "|", "&&", "||", "&", ">", "<") or word.startswith(("$(", "`")):
            raise ConfigError(
                f"SANDBOX_FLAGS contains the shell operator {word!r}",
                hint="SANDBOX_FLAGS holds engine flags only; nothing runs through a shell",
            )
    from terminai_sandbox.launch import flags  # noqa: PLC0415  (only when there are flags: ~0.5 ms)

    grammar = flags.grammar_for(engine)
    parsed = flags.parse(words, grammar)
    flags.check(parsed, allowed=flags.allowed_names(allowed, grammar))
    checked = flags.check_env(parsed, allowed_env=allowed_env, engine=grammar.engine)
    if any(flag.name == "--env-file" for flag in parsed):
        return tuple(flags.words(checked))  # the file's checked entries, never its path
    return tuple(words)


_WINDOWS = re.compile(r"^([A-Za-z]):[\\/]")
_PORT = re.compile(r"^[0-9]{1,5}\Z")


def _windows_to_posix(path: str) -> str:
    match = _WINDOWS.match(path)
    if not match:
        return path
    return f"/{match.group(1).lower()}/" + path[3:].replace("\\", "/")


# Host paths a mount may not be, be inside of, or contain: the kernel's and the engines'
# interfaces (a socket or the engine's storage is root on the host), and the host's boot files.
PROTECTED_TREES = (
    "/proc",
    "/sys",
    "/dev",
    "/run",
    "/var/run",
    "/boot",
    "/var/lib/docker",
    "/var/lib/containerd",
    "/var/lib/containers",
)


def _mount_problem(normal: str, resolved: str, env: Mapping[str, str], *, existing: bool = False) -> str | None:
    """Why the host path ``normal`` (``resolved`` after following symlinks) may not be mounted.

    ``existing``: count only the engine sockets that exist now as "contained" (for the
    working directory, which may well be a home directory where a socket could appear).
    """
    if resolved == "/" or normal == "/":
        return "mounts the host root" + ("" if normal == "/" else f" ({normal} leads to /)")
    for name in SOCKET_NAMES:
        if resolved.endswith("/" + name) or normal.endswith("/" + name):
            return f"mounts an engine socket ({resolved}), which is root on the host"
    for socket in engine_sockets(env):
        if existing and not os.path.exists(socket):
            continue
        for place in dict.fromkeys((socket, os.path.realpath(socket))):
            if targets.within(place, resolved):
                return f"contains the engine socket {place}, which is root on the host"
    for tree in PROTECTED_TREES:
        for place in dict.fromkeys((tree, os.path.realpath(tree))):
            for path in dict.fromkeys((normal, resolved)):
                if targets.within(path, place):
                    shown = path if path == normal else f"{normal} (which leads to {resolved})"
                    return f"mounts {shown}, inside {place}, which the host's kernel or engine owns"
                if targets.within(place, path):
                    return f"contains {place}, which the host's kernel or engine owns"
    return None


def workdir_problem(cwd: str, env: Mapping[str, str]) -> str | None:
    """Why the working directory, which every session mounts read-write at its own path, may not be."""
    normal = "/" + "/".join(part for part in cwd.split("/") if part)
    try:
        resolved = os.path.realpath(normal)
    except OSError as exc:
        return f"cannot be resolved ({exc.strerror})"
    for tree in targets.SYSTEM_TREES:
        if targets.within(normal, tree):
            return f"lies in {tree}, where the image keeps its code (the session would see the host's files there)"
    return _mount_problem(normal, normal, env, existing=True) or _mount_problem(normal, resolved, env, existing=True)


def parse_mounts(
    value: str,
    *,
    home: str,
    exists: object = None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
) -> tuple[Mount, ...]:
    """``SANDBOX_MOUNTS``: ``from[:to][:ro|rw]`` comma-separated; read-only unless ``rw``.

    Each source is resolved (``realpath``: symlinks followed) and refused when it is, lies
    inside or contains the host root, an engine socket or a tree the host's kernel or engine
    owns (:data:`PROTECTED_TREES`); the resolved path is what the engine is given (held
    open until it is mounted: :mod:`~terminai_sandbox.launch.held_mounts`). Each target
    must pass :func:`terminai_sandbox.launch.targets.problem` (``cwd``: the working directory).
    ``home`` is the caller's home from the password database; ``$HOME`` is refused too.
    """
    check = exists if callable(exists) else (lambda p: Path(p).exists())
    environment = env if env is not None else {"HOME": home}
    mounts = []
    for raw in value.split(","):
        item = raw.strip()
        if not item:
            continue
        drive = ""
        if _WINDOWS.match(item):
            drive, item = item[:2], item[2:]
        parts = item.split(":")
        if len(parts) > 3:
            raise ConfigError(
                f"SANDBOX_MOUNTS item {raw.strip()!r} has too many ':'",
                hint="use from[:to][:ro|rw], e.g. /data/in:/in:ro",
            )
        source = _windows_to_posix(drive + parts[0])
        target, mode = source, "ro"
        if len(parts) == 2:
            if parts[1] in ("ro", "rw"):
                mode = parts[1]
            else:
                target = parts[1]
        elif len(parts) == 3:
            target, mode = parts[1], parts[2]
        if mode not in ("ro", "rw"):
            raise ConfigError(
                f"SANDBOX_MOUNTS item {raw.strip()!r}: mode {mode!r} is not ro or rw", hint="use from[:to][:ro|rw]"
            )
        for label, path in (("source", source), ("target", target)):
            if not path.startswith("/"):
                raise ConfigError(
                    f"SANDBOX_MOUNTS item {raw.strip()!r}: {label} {path!r} is not absolute",
                    hint="use absolute paths: from[:to][:ro|rw]",
                )
            if ".." in PurePosixPath(path).parts:
                raise ConfigError(f"SANDBOX_MOUNTS item {raw.strip()!r}: {label} contains '..'")
        # "//x" is "/x" to the kernel; PurePosixPath keeps POSIX's two leading slashes.
        normal = "/" + "/".join(part for part in source.split("/") if part)
        resolved = normal
        # The path as written first (/proc/1/root may not even be readable), then where it leads.
        if not drive and _mount_problem(normal, normal, environment) is None:
            try:
                resolved = os.path.realpath(normal)
            except OSError as exc:
                raise ConfigError(
                    f"SANDBOX_MOUNTS item {raw.strip()!r}: {normal} cannot be resolved ({exc.strerror})",
                    hint="mount a path the launcher can follow to its end",
                ) from None
        for place in dict.fromkeys(h for h in (home, environment.get("HOME", "")) if h):
            if resolved in (os.path.realpath(place), place):
                raise ConfigError(
                    f"SANDBOX_MOUNTS item {raw.strip()!r} mounts your whole home directory ({os.path.realpath(place)})",
                    hint="mount the specific folders the session needs",
                )
        problem = _mount_problem(normal, resolved, environment)
        if problem is not None:
            raise ConfigError(
                f"SANDBOX_MOUNTS item {raw.strip()!r} is refused: it {problem}",
                hint="mount the specific project folders the session needs; never the engine's or kernel's files",
            )
        where = targets.problem(target, cwd=cwd, source=source)
        if where is not None:
            raise ConfigError(
                f"SANDBOX_MOUNTS item {raw.strip()!r} is refused: its {where}",
                hint="mount data under /workspace, /downloads, /mnt, /data or the working directory, "
                "never over the image's code or the kernel's interfaces",
            )
        if not drive and not check(source):
            raise ConfigError(f"SANDBOX_MOUNTS item {raw.strip()!r}: {source} does not exist")
        mounts.append(Mount(source=resolved, target=targets.normal(target) or target, read_only=mode == "ro"))
    return tuple(mounts)


def parse_ports(value: str) -> tuple[Port, ...]:
    """``SANDBOX_PORTS``: ``PORT`` or ``HOST:CONTAINER``, comma-separated, 1–65535."""
    ports = []
    for raw in value.split(","):
        item = raw.strip()
        if not item:
            continue
        parts = item.split(":")
        # ASCII digits only: str.isdigit() also accepts '²' or '٣', which int() may not.
        if len(parts) > 2 or not all(_PORT.match(p) and 1 <= int(p) <= 65535 for p in parts):
            raise ConfigError(
                f"SANDBOX_PORTS item {item!r} is not a port",
                hint="use PORT or HOST_PORT:CONTAINER_PORT (1-65535), comma-separated",
            )
        host, container = (int(parts[0]), int(parts[-1]))
        ports.append(Port(host=host, container=container))
    return tuple(ports)


def parse_env(
    value: str, *, inherited: Mapping[str, str], allowed_env: frozenset[str] = frozenset()
) -> tuple[EnvItem, ...]:
    r"""``SANDBOX_ENV``: ``K=V`` or bare ``K`` (inherited), comma-separated; ``\,`` is a literal comma.

    Values of names that look secret (TOKEN, SECRET, PASSWORD, KEY, ...) must be passed
    by name (bare ``K``), so they never appear in a command line or the audit ledger.
    """
    items = []
    for raw in re.split(r"(?<!\\),", value):
        item = raw.strip().replace("\\,", ",")
        if not item:
            continue
        name, eq, val = item.partition("=")
        if not _ENV_NAME.match(name):
            raise ConfigError(f"SANDBOX_ENV item {name!r} is not a variable name", hint="use K=V or K, comma-separated")
        if eq and _SECRET_NAME.search(name):
            raise ConfigError(
                f"SANDBOX_ENV item {name}=… puts a secret on the command line",
                hint=f"export {name} in your shell and list it bare: SANDBOX_ENV={name}",
            )
        reserved_env.check(name, knob="SANDBOX_ENV", allowed=allowed_env)
        if not eq and name not in inherited:
            raise ConfigError(f"SANDBOX_ENV item {name!r} is inherited but not set in your environment")
        items.append(EnvItem(name=name, value=val if eq else None))
    return tuple(items)


def _unset() -> str | None:
    return None


def load_launch_config(
    env: Mapping[str, str],
    *,
    image_flag: str | None = None,
    engine_flag: str | None = None,
    default_image: Callable[[], str | None] = _unset,
    available: Sequence[str],
    allowed_flags: Sequence[str] = (),
    allowed_env: Sequence[str] = (),
    settings_engine: Callable[[], str | None] = _unset,
    runtime_flag: str | None = None,
    settings_runtime: Callable[[], str | None] = _unset,
    network_flag: str | None = None,
    settings_network: Callable[[], object] = _unset,
) -> LaunchConfig:
    """Resolve every knob: environment over flag over settings file (as the launcher we replace).

    ``default_image`` and ``settings_engine`` read files, so they are called only when the
    environment and the flags leave the choice to them: a broken settings file never stands
    in the way of a user who chose explicitly.
    """
    raw_engine, engine_var = _var(env, "TERMINAI_SANDBOX", "GEMINI_SANDBOX")
    if raw_engine is None:
        raw_engine, engine_var = (
            (engine_flag, "--engine") if engine_flag is not None else (settings_engine(), "settings")
        )
    engine = parse_engine(raw_engine if raw_engine is not None else "true", engine_var, available=available)
    raw_image, image_var = _var(env, "TERMINAI_SANDBOX_IMAGE", "GEMINI_SANDBOX_IMAGE")
    if raw_image is None and image_flag is not None:
        raw_image, image_var = image_flag, "--image"
    if raw_image is None:
        raw_image, image_var = default_image(), "the built-in default"
    if raw_image is not None and not raw_image.strip():
        raise ConfigError(f"{image_var} is set but empty", hint="unset it to use the default image, or name an image")
    image = ImageRef.parse(raw_image, what=image_var) if raw_image else None
    raw_runtime, runtime_var = _var(env, "TERMINAI_SANDBOX_RUNTIME")
    if raw_runtime is not None and runtime_flag is not None:
        chosen, asked = parse_runtime(raw_runtime, runtime_var), parse_runtime(runtime_flag, "--runtime")
        if chosen != asked:  # a project's environment must not quietly undo what the command line asked
            raise ConfigError(
                f"--runtime {runtime_flag} and {runtime_var}={raw_runtime} disagree",
                hint=f"drop one of them, or make them name the same runtime ({asked} or {chosen})",
            )
    if raw_runtime is None:
        raw_runtime, runtime_var = (
            (runtime_flag, "--runtime")
            if runtime_flag is not None
            else (settings_runtime(), "settings tools.sandboxRuntime")
        )
    if raw_runtime is None:
        raw_runtime, runtime_var = DEFAULT_RUNTIME, "the default"
    uid_gid = env.get("SANDBOX_SET_UID_GID")
    env_allowed = reserved_env.allowed_names(allowed_env)
    flags = parse_flags(env.get("SANDBOX_FLAGS", ""), allowed=allowed_flags, engine=engine, allowed_env=env_allowed)
    home = caller_home()
    mounts = parse_mounts(
        env.get("SANDBOX_MOUNTS", ""), home=home if env.get("SANDBOX_MOUNTS") else "", env=env, cwd=os.getcwd()
    )
    writable = [mount.source for mount in mounts if not mount.read_only]
    if engine == "podman":  # what podman reads besides its flags (containers.conf and friends)
        from terminai_sandbox.launch import podman_knobs  # noqa: PLC0415  (podman launches only)

        podman_knobs.check(engine, cwd=os.getcwd(), writable=writable, env=env, home=home)
    # What the next launch and the host's tools trust (state, policy, settings, the docker CLI's folder).
    docker_config = host_folders.check(cwd=os.getcwd(), writable=writable, env=env, home=home)
    return LaunchConfig(
        engine=engine,
        engine_from=engine_var,
        image=image,
        image_from=image_var,
        flags=flags,
        mounts=mounts,
        ports=parse_ports(env.get("SANDBOX_PORTS", "")),
        env=parse_env(env.get("SANDBOX_ENV", ""), inherited=env, allowed_env=env_allowed),
        set_uid_gid=parse_bool(uid_gid, "SANDBOX_SET_UID_GID") if uid_gid is not None else None,
        runtime=parse_runtime(raw_runtime, runtime_var),
        runtime_from=runtime_var,
        network=network.resolve(env, option=network_flag, settings=settings_network),
        journal=journal_trust.resolve(env),
        docker_config=docker_config,
    )
