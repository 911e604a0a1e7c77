"""``SANDBOX_FLAGS``: parsed with the engine CLI's own grammar, then held to an allowlist.

docker and podman parse ``run``'s flags with spf13/pflag. This module reproduces that
grammar word for word, so the launcher sees exactly the flags the engine will see:

* ``--name=value``, ``--name value`` (the next word is taken whatever it looks like);
* ``-n value``, ``-nvalue``, ``-n=value``;
* short booleans combined, a value-taking short flag ending the group: ``-it``, ``-itu0``;
* booleans take no separate word, only ``--name=false`` / ``-n=false`` (Go's ParseBool);
* ``--`` ends the flags, and the first word that is not a flag is the image: the engine
  would run that word instead of the verified image, so both are refused;
* an unknown flag is an error for the engine, and refused here.

Which flags exist and which take a value comes from the engines' own documentation:
:data:`DOCKER_RUN` and :data:`PODMAN_RUN` hold every flag ``docker run --help`` (docker
28) and ``podman run --help`` (podman 4.3) list, and a unit test checks both tables
against those help texts (a stored copy, and the installed CLIs when present).

Parsed flags are then held to :data:`HARMLESS`, a short allowlist of flags that change
nothing the sandbox relies on (environment, labels, working directory, hostname, a
bounded tmpfs, terminal and signal handling). Every other flag is refused with the reason
it matters (user, privileges, namespaces, devices, mounts, runtime, network, limits, …),
unless ``--unsafe-allow-flag`` names it. Allowed harmless flags have their values checked
too: ``--read-only=false`` or ``--rm=false`` undo what the launcher set, a label may not
claim the launcher's own ``dev.terminai.`` keys, a tmpfs has a size cap.
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

from terminai_apts.records import frozen_record

from terminai_sandbox.common.files import read_regular
from terminai_sandbox.errors import ConfigError
from terminai_sandbox.launch import reserved_env, targets
from terminai_sandbox.launch.config import ENV_NAME, SECRET_NAME

TYPE_CHECKING = False  # not `from typing import ...`: a launch never imports typing (~3 ms)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence


# Every flag of `run`, as the help text lists it: "-s/name=" is short -s, long --name, takes
# a value; no "=" is a boolean. Generated from `docker run --help` / `podman run --help`;
# tests/unit/launch/test_flags.py proves each table equals its engine's help text.
_DOCKER_RUN = (
    "add-host= -a/attach= blkio-weight= blkio-weight-device= cap-add= cap-drop= cgroup-parent= cgroupns= "
    "cidfile= cpu-period= cpu-quota= cpu-rt-period= cpu-rt-runtime= -c/cpu-shares= cpus= cpuset-cpus= "
    "cpuset-mems= -d/detach detach-keys= device= device-cgroup-rule= device-read-bps= device-read-iops= "
    "device-write-bps= device-write-iops= disable-content-trust dns= dns-option= dns-search= domainname= "
    "entrypoint= -e/env= env-file= expose= gpus= group-add= health-cmd= health-interval= health-retries= "
    "health-start-period= health-timeout= help -h/hostname= init -i/interactive ip= ip6= ipc= isolation= "
    "kernel-memory= -l/label= label-file= link= link-local-ip= log-driver= log-opt= mac-address= -m/memory= "
    "memory-reservation= memory-swap= memory-swappiness= mount= name= network= network-alias= no-healthcheck "
    "oom-kill-disable oom-score-adj= pid= pids-limit= platform= privileged -p/publish= -P/publish-all pull= "
    "-q/quiet read-only restart= rm runtime= security-opt= shm-size= sig-proxy stop-signal= stop-timeout= "
    "storage-opt= sysctl= tmpfs= -t/tty ulimit= use-api-socket -u/user= userns= uts= -v/volume= volume-driver= "
    "volumes-from= -w/workdir="
)
_PODMAN_RUN = (
    "add-host= annotation= arch= -a/attach= authfile= blkio-weight= blkio-weight-device= cap-add= cap-drop= "
    "cgroup-conf= cgroup-parent= cgroupns= cgroups= chrootdirs= cidfile= conmon-pidfile= cpu-period= cpu-quota= "
    "cpu-rt-period= cpu-rt-runtime= -c/cpu-shares= cpus= cpuset-cpus= cpuset-mems= -d/detach detach-keys= "
    "device= device-cgroup-rule= device-read-bps= device-read-iops= device-write-bps= device-write-iops= "
    "disable-content-trust dns= dns-option= dns-search= entrypoint= -e/env= env-file= env-host env-merge= "
    "expose= gidmap= group-add= health-cmd= health-interval= health-on-failure= health-retries= "
    "health-start-period= health-timeout= help -h/hostname= hostuser= http-proxy image-volume= init init-path= "
    "-i/interactive ip= ip6= ipc= -l/label= label-file= log-driver= log-opt= mac-address= -m/memory= "
    "memory-reservation= memory-swap= memory-swappiness= mount= name= network= network-alias= no-healthcheck "
    "no-hosts oom-kill-disable oom-score-adj= os= passwd passwd-entry= personality= pid= pidfile= pids-limit= "
    "platform= pod= pod-id-file= preserve-fds= privileged -p/publish= -P/publish-all pull= -q/quiet read-only "
    "read-only-tmpfs replace requires= restart= rm rmi rootfs sdnotify= seccomp-policy= secret= security-opt= "
    "shm-size= sig-proxy stop-signal= stop-timeout= subgidname= subuidname= sysctl= systemd= timeout= tls-verify "
    "tmpfs= -t/tty tz= uidmap= ulimit= umask= unsetenv= unsetenv-all -u/user= userns= uts= variant= -v/volume= "
    "volumes-from= -w/workdir="
)
# Flags the engines accept after `run` but do not list in `run --help`. docker keeps a few
# hidden ones (--net is --network's old name); podman accepts its global options there too
# (`podman run --runtime=runc` works) and normalises --net to --network. Parsed so that they
# can be named and refused; the tests check each against the installed engine.
_DOCKER_HIDDEN = "net= net-alias= dns-opt= cpu-count= cpu-percent= io-maxbandwidth= io-maxiops="
_PODMAN_GLOBAL = (
    "net= cgroup-manager= conmon= events-backend= hooks-dir= log-level= namespace= network-cmd-path= "
    "network-config-dir= root= runroot= runtime= runtime-flag= storage-driver= storage-opt= syslog tmpdir= "
    "volumepath="
)


class Grammar:
    """One engine's ``run`` flags: long name -> takes a value, short letter -> long name."""

    __slots__ = ("engine", "shorts", "takes_value", "undocumented")

    def __init__(self, engine: str, table: str, undocumented: str) -> None:
        self.engine = engine
        self.takes_value: dict[str, bool] = {}
        self.shorts: dict[str, str] = {}
        self.undocumented = frozenset("--" + token.removesuffix("=") for token in undocumented.split())
        for token in (table + " " + undocumented).split():
            short, _, rest = token.rpartition("/")
            name = "--" + rest.removesuffix("=")
            self.takes_value[name] = rest.endswith("=")
            if short:
                self.shorts[short.removeprefix("-")] = name

    def canonical(self, spelling: str) -> str | None:
        """``--user`` for ``--user``, ``-u`` or ``--user=…``; None for a flag this engine lacks."""
        name = spelling.partition("=")[0]
        if name.startswith("--"):
            return name if name in self.takes_value else None
        if len(name) == 2 and name[0] == "-":
            return self.shorts.get(name[1])
        return None


DOCKER_RUN = Grammar("docker", _DOCKER_RUN, _DOCKER_HIDDEN)
PODMAN_RUN = Grammar("podman", _PODMAN_RUN, _PODMAN_GLOBAL)


def grammar_for(engine: str | None) -> Grammar:
    return PODMAN_RUN if engine == "podman" else DOCKER_RUN


@frozen_record
class Flag:
    """One parsed flag: its canonical long name, its value (None: a boolean given bare), as written."""

    name: str
    value: str | None
    written: str


def _refuse(message: str, hint: str = "") -> ConfigError:
    return ConfigError(f"SANDBOX_FLAGS {message}", hint=hint or "see 'SANDBOX_FLAGS' in docs/SECURITY.md")


def parse(words: Sequence[str], grammar: Grammar) -> list[Flag]:
    """The flags in ``words`` as pflag (the engine CLI's parser) reads them; anything else is refused."""
    flags: list[Flag] = []
    rest = list(words)
    while rest:
        word = rest.pop(0)
        if word == "--":
            raise _refuse(
                "item '--' ends the engine's flags: what follows would be taken as the image to run",
                hint="SANDBOX_FLAGS holds flags only; the launcher names the verified image itself",
            )
        if len(word) < 2 or word[0] != "-":
            raise _refuse(
                f"item {word!r} is not a flag: the engine would run it as the image instead of the verified one",
                hint="SANDBOX_FLAGS holds flags only; quote a value that contains spaces",
            )
        if word.startswith("--"):
            flags.append(_long(word, rest, grammar))
        else:
            flags.extend(_shorts(word, rest, grammar))
    return flags


def _unknown(written: str, grammar: Grammar, letter: str = "") -> ConfigError:
    which = f": -{letter}" if letter and len(written) > 2 else ""
    return _refuse(
        f"item {written!r}{which} is not a flag of '{grammar.engine} run'",
        hint=f"'{grammar.engine} run --help' lists its flags",
    )


def _long(word: str, rest: list[str], grammar: Grammar) -> Flag:
    body = word[2:]
    if body[0] in "-=":
        raise _refuse(f"item {word!r} is not flag syntax the engine accepts")
    name, has_value, inline = body.partition("=")
    canonical = grammar.canonical("--" + name)
    if canonical is None:
        raise _unknown(word, grammar)
    if has_value:
        return Flag(name=canonical, value=inline, written=word)
    if not grammar.takes_value[canonical]:
        return Flag(name=canonical, value=None, written=word)
    if not rest:
        raise _refuse(f"item {word!r} needs a value")
    value = rest.pop(0)
    return Flag(name=canonical, value=value, written=f"{word} {value}")


def _shorts(word: str, rest: list[str], grammar: Grammar) -> list[Flag]:
    if word.startswith("-test."):  # pflag silently skips these (Go test flags); refuse, do not guess
        raise _unknown(word, grammar)
    found: list[Flag] = []
    letters = word[1:]
    while letters:
        letter, after = letters[0], letters[1:]
        canonical = grammar.shorts.get(letter)
        if canonical is None:
            raise _unknown(word, grammar, letter)
        if len(letters) > 2 and after[0] == "=":
            found.append(Flag(name=canonical, value=after[1:], written=word))
            return found
        if not grammar.takes_value[canonical]:
            found.append(Flag(name=canonical, value=None, written=word))
            letters = after
            continue
        if after:
            found.append(Flag(name=canonical, value=after, written=word))
            return found
        if not rest:
            raise _refuse(f"item {word!r} needs a value")
        value = rest.pop(0)
        found.append(Flag(name=canonical, value=value, written=f"{word} {value}"))
        return found
    return found


# -- the allowlist -------------------------------------------------------------------------

_TRUE = ("1", "t", "T", "TRUE", "true", "True")  # Go's strconv.ParseBool, which pflag uses
_FALSE = ("0", "f", "F", "FALSE", "false", "False")
TMPFS_MAX_BYTES = 1 << 30
_TMPFS_OPTIONS = ("rw", "ro", "noexec", "exec", "nosuid", "nodev", "size", "mode", "uid", "gid", "tmpfs-size")
_TMPFS_FORBIDDEN_UNDER = ("/proc", "/sys", "/dev")
_SIZE = re.compile(r"^([0-9]+)([kKmMgG]?)$")
_HOSTNAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$")
_SIGNAL = re.compile(r"^(?:SIG)?[A-Z0-9+-]{1,16}$|^[0-9]{1,2}$")
RESERVED_LABEL_PREFIX = "dev.terminai."


def _bool(flag: Flag) -> bool:
    if flag.value is None or flag.value in _TRUE:
        return True
    if flag.value in _FALSE:
        return False
    raise _refuse(f"item {flag.written!r}: {flag.value!r} is not a boolean the engine accepts")


def _any_bool(flag: Flag) -> str | None:
    _bool(flag)
    return None


def _only_true(flag: Flag) -> str | None:
    if not _bool(flag):
        return f"undoes the launcher's {flag.name}, which every session has"
    return None


def _env(flag: Flag) -> str | None:
    name, eq, _ = (flag.value or "").partition("=")
    if not ENV_NAME.match(name):
        return f"{name!r} is not a variable name"
    if eq and SECRET_NAME.search(name):
        return f"puts the secret {name}=… on the command line and in the audit ledger; use SANDBOX_ENV={name}"
    return None


def _label(flag: Flag) -> str | None:
    key = (flag.value or "").partition("=")[0]
    if not key:
        return "a label needs a key"
    if key.startswith(RESERVED_LABEL_PREFIX):
        return f"the {RESERVED_LABEL_PREFIX}* labels are the launcher's own (they say which session and digest ran)"
    return None


def _workdir(flag: Flag) -> str | None:
    value = flag.value or ""
    return None if value.startswith("/") else "the working directory must be an absolute path"


def _hostname(flag: Flag) -> str | None:
    return None if _HOSTNAME.match(flag.value or "") else "is not a host name"


def _signal(flag: Flag) -> str | None:
    return None if _SIGNAL.match(flag.value or "") else "is not a signal name or number"


def _seconds(flag: Flag) -> str | None:
    value = flag.value or ""
    return None if value.isascii() and value.isdigit() and int(value) <= 3600 else "is not 0-3600 seconds"


def _any(_flag: Flag) -> str | None:
    return None


def _size_bytes(text: str) -> int | None:
    match = _SIZE.match(text)
    if match is None:
        return None
    scale = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[match.group(2).lower()]
    return int(match.group(1)) * scale


def _tmpfs(flag: Flag) -> str | None:
    path, _, options = (flag.value or "").partition(":")
    normal = targets.normal(path)
    if normal is None:
        return "the tmpfs needs an absolute path without '..'"
    if any(targets.within(normal, tree) for tree in _TMPFS_FORBIDDEN_UNDER):
        return f"a tmpfs over {normal} hides what the engine mounts there"
    where = targets.problem(normal, cwd=None)
    if where is not None:
        return f"the tmpfs {where}"
    size: int | None = None
    for option in options.split(",") if options else ():
        key, _, value = option.partition("=")
        if key not in _TMPFS_OPTIONS:
            return f"tmpfs option {option!r} is not one of {', '.join(_TMPFS_OPTIONS)}"
        if key in ("size", "tmpfs-size"):
            size = _size_bytes(value)
            if size is None:
                return f"tmpfs size {value!r} is not a size (e.g. 64m)"
        elif key in ("mode", "uid", "gid") and not (value.isascii() and value.isdigit()):
            return f"tmpfs option {option!r} needs a number"
    if size is None or not 0 < size <= TMPFS_MAX_BYTES:
        return f"a tmpfs needs size=N of at most {TMPFS_MAX_BYTES >> 20}m (e.g. {normal}:size=64m)"
    return None


# The harmless flags: each with the check its value must pass (a reason when it fails).
HARMLESS: Mapping[str, Callable[[Flag], str | None]] = {
    "--env": _env,
    "--label": _label,
    "--workdir": _workdir,
    "--hostname": _hostname,
    "--domainname": _hostname,
    "--tmpfs": _tmpfs,
    "--interactive": _any_bool,
    "--tty": _any_bool,
    "--sig-proxy": _any_bool,
    "--quiet": _any_bool,
    "--init": _only_true,
    "--rm": _only_true,
    "--read-only": _only_true,
    "--stop-signal": _signal,
    "--stop-timeout": _seconds,
    "--detach-keys": _any,
}

# Why the rest is refused, by what it touches; "x*" matches every flag starting with x.
_REASONS = {
    "user": "--user --group-add --hostuser --passwd --passwd-entry --subuidname --subgidname --uidmap --gidmap",
    "privileges": "--privileged --cap-* --security-opt --seccomp-policy --sysctl --use-api-socket",
    "namespaces": "--userns --pid --ipc --uts --cgroupns --pod",
    "devices": "--device* --gpus",
    "mounts": "--volume --volumes-from --volume-driver --mount --chrootdirs --image-volume --rootfs --secret "
    "--storage-opt --read-only-tmpfs",
    "runtime": "--runtime --runtime-flag --isolation --init-path --systemd --personality --conmon --hooks-dir "
    "--cgroup-manager --network-cmd-path",
    "engine state": "--root --runroot --tmpdir --volumepath --storage-driver --namespace --events-backend "
    "--network-config-dir --log-level --syslog",
    "entrypoint and health check": "--entrypoint --health-* --no-healthcheck",
    "image": "--pull --platform --arch --os --variant --disable-content-trust --authfile --tls-verify --rmi",
    "network": "--network --net --network-alias --publish --publish-all --expose --dns* --add-host --ip --ip6 "
    "--net-alias --link --link-local-ip --mac-address --http-proxy --no-hosts",
    "cgroups": "--cgroup-parent --cgroups --cgroup-conf",
    "host files": "--env-file --label-file --env-host --cidfile --pidfile "
    "--conmon-pidfile --pod-id-file --preserve-fds --log-driver --log-opt",
    "limits": "--memory* --cpus --cpu-* --cpuset-* --pids-limit --ulimit --blkio-* --oom-* --kernel-memory "
    "--shm-size --timeout --io-*",
}
_WHY = {
    "user": "changes the user or groups the session runs as",
    "privileges": "changes privileges, capabilities or security options",
    "namespaces": "changes which namespaces the session shares with the host",
    "devices": "exposes host devices",
    "mounts": "mounts host paths or volumes (mounts go through SANDBOX_MOUNTS, which checks them)",
    "runtime": "changes the container runtime or its init",
    "entrypoint and health check": "replaces the entrypoint or the health check the image runs",
    "image": "changes which image the engine fetches or how",
    "engine state": "points the engine at other storage, state or logs",
    "network": "changes the network (the session's network is run's --network option)",
    "cgroups": "changes the cgroup the session runs in",
    "host files": "reads or writes files on the host, or copies the host's environment",
    "limits": "changes resource limits (the session's limits are run's --memory and --cpus options)",
}


def reason(name: str) -> str:
    """Why the flag ``name`` (canonical) is refused."""
    for category, names in _REASONS.items():
        for pattern in names.split():
            if name == pattern or (pattern.endswith("*") and name.startswith(pattern[:-1])):
                return f"{_WHY[category]} [{category}]"
    return "is not on the list of harmless flags"


def allowed_names(allowed: Iterable[str], grammar: Grammar) -> set[str]:
    """The canonical names ``--unsafe-allow-flag`` values stand for (``-u`` and ``--user`` alike)."""
    names = set()
    for item in allowed:
        canonical = grammar.canonical(item.strip())
        if canonical is None:
            raise ConfigError(
                f"--unsafe-allow-flag {item!r} is not a flag of '{grammar.engine} run'",
                hint="name the flag as SANDBOX_FLAGS spells it, e.g. --unsafe-allow-flag --cap-add",
            )
        names.add(canonical)
    return names


def check(flags: Iterable[Flag], *, allowed: set[str]) -> None:
    """Refuse the first flag that is neither harmless (with a harmless value) nor allowed by name."""
    for flag in flags:
        if flag.name in allowed:
            continue
        checker = HARMLESS.get(flag.name)
        problem = reason(flag.name) if checker is None else checker(flag)
        if problem is not None:
            raise _refuse(
                f"item {flag.written!r} is refused: {flag.name}{' ' if checker is None else ': '}{problem}",
                hint=f"if you really mean it, pass --unsafe-allow-flag {flag.name}"
                if checker is None
                else f"change the value, or pass --unsafe-allow-flag {flag.name}",
            )


# -- reserved environment names ------------------------------------------------------------

# Flags that set (or unset) the session's environment by name: the value is NAME[=VALUE].
_ENV_BY_NAME = ("--env", "--env-merge", "--unsetenv")


def check_env(flags: Iterable[Flag], *, allowed_env: frozenset[str], engine: str = "docker") -> list[Flag]:
    """Refuse reserved names in ``--env``/``--env-file`` even when ``--unsafe-allow-flag`` let the flag in.

    The flag allowlist says which flags may appear; this says which names they may set, and
    only ``--unsafe-allow-env`` overrides it (:mod:`terminai_sandbox.launch.reserved_env`).
    Returns the flags with each ``--env-file`` replaced by the ``--env`` entries read from it:
    the engine gets what was checked, not a path it would read again (a file swapped between
    the check and ``docker run`` would set what was never checked).
    """
    out: list[Flag] = []
    for flag in flags:
        knob = f"SANDBOX_FLAGS {flag.written!r}"
        if flag.name in _ENV_BY_NAME:
            reserved_env.check((flag.value or "").partition("=")[0], knob=knob, allowed=allowed_env)
        elif flag.name == "--env-file":
            for entry in env_file_entries(flag.value or "", knob=knob, engine=engine):
                name = entry.partition("=")[0]
                # podman keeps a BOM in the first name: refused as the name it hides
                reserved_env.check(name.removeprefix("\ufeff"), knob=f"{knob} (file {flag.value})", allowed=allowed_env)
                if "=" in entry or name in os.environ:  # a bare name the caller has not set: the file drops it
                    out.append(Flag(name="--env", value=entry, written=f"--env={entry}"))
            continue
        elif flag.name == "--env-host":
            # Copies every variable of the launcher's environment, reserved ones included.
            raise _refuse(
                f"item {flag.written!r} copies the host's PATH, PYTHONPATH, LD_* … into the session",
                hint="list the variables the session needs in SANDBOX_ENV instead",
            )
        out.append(flag)
    return out


def words(flags: Iterable[Flag]) -> list[str]:
    """The flags as words the engine reads exactly so (``--name=value``, ``--name``)."""
    return [flag.name if flag.value is None else f"{flag.name}={flag.value}" for flag in flags]


def env_file_entries(path: str, *, knob: str, engine: str = "docker") -> list[str]:
    """The ``NAME=VALUE`` (or ``NAME``: inherited) entries of an ``--env-file``, read as the
    engine reads it (relative to our cwd).

    The engines' reader: lines split at ``\n`` (a ``\r`` before it dropped), leading
    whitespace dropped, blank and ``#`` lines skipped, the name is what precedes the first
    ``=`` (or the whole line) and may hold no whitespace, the value is the rest as written;
    docker drops a UTF-8 BOM first (podman keeps it, in the first name). A bare name is
    the caller's variable of that name (left out when it has none). A file we cannot read
    is refused: the engine might read what we could not.
    """
    try:
        text = read_regular(Path(path)).decode("utf-8")  # a FIFO is refused, never waited on
    except OSError as exc:
        if exc.errno in (errno.EISDIR, errno.EINVAL):
            raise _refuse(f"{knob}: {path} is not a regular file", hint="name a file of NAME=VALUE lines") from None
        raise _refuse(f"{knob}: cannot read {path}: {exc.strerror}", hint="name a readable env file") from None
    except UnicodeDecodeError:
        raise _refuse(f"{knob}: {path} is not UTF-8 text", hint="name a file of NAME=VALUE lines") from None
    entries = []
    if engine == "docker":
        text = text.removeprefix("\ufeff")
    for line in text.split("\n"):
        stripped = line.removesuffix("\r").lstrip()
        if not stripped or stripped.startswith("#"):
            continue
        name = stripped.partition("=")[0]
        if not name or any(c.isspace() for c in name):
            raise _refuse(
                f"{knob}: {path} sets the variable {name!r}, which the engine refuses (a name holds no spaces)",
                hint="write each line as NAME=VALUE",
            )
        entries.append(stripped)
    return entries
