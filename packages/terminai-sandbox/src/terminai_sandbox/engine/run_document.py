"""The session's ``docker run`` command line read back as the Docker API's container document.

The launcher spells a session once, as the docker CLI's argv (:func:`terminai_sandbox.launch.run.build_argv`);
:func:`create_document` turns that argv into the ``POST /containers/create`` body the docker
CLI itself would send for it, so a session created through :class:`~.client.DockerApi` has
the same configuration as one created by ``docker run`` (``tests/integration/engine/
test_run_document.py`` compares the two containers' inspected ``HostConfig``, with dockerd
as the oracle). A word it does not know (a ``SANDBOX_FLAGS`` flag, a ``--flag=value``
spelling, a size it cannot read exactly as the CLI does) makes it answer None: that session
keeps the CLI, never a guess.

Part of the launch kernel: standard library only.
"""

from __future__ import annotations

from terminai_apts.records import frozen_record

TYPE_CHECKING = False  # not `from typing import ...`: a launch never imports typing (~3 ms)
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

# docker's RAMInBytes units (go-units): binary multiples, one letter, case-insensitive.
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
# Flags without a value, and what each sets.
_SWITCHES = {"--rm", "--init", "-i", "-t", "--read-only"}
# Flags with one value (always a separate word in the launcher's argv).
_VALUED = {
    "--name",
    "--label",
    "--tmpfs",
    "--cap-drop",
    "--security-opt",
    "--network",
    "--pids-limit",
    "--memory",
    "--cpus",
    "--env",
    "--volume",
    "--workdir",
    "--user",
    "--runtime",
    "--mount",
    "--publish",
}


# What the docker CLI sends for the flags the launcher never sets: the daemon stores these
# as sent (an empty list is not null in `inspect`), so the document sends them too.
_CLI_EMPTY = (
    "BlkioWeightDevice",
    "BlkioDeviceReadBps",
    "BlkioDeviceWriteBps",
    "BlkioDeviceReadIOps",
    "BlkioDeviceWriteIOps",
    "Devices",
    "Dns",
    "DnsOptions",
    "DnsSearch",
    "Ulimits",
)


@frozen_record
class RunDocument:
    """A container to create: its name and the ``POST /containers/create`` body."""

    name: str
    document: dict[str, Any]


def _bytes(text: str) -> int | None:
    """``512m`` → 536870912, as the docker CLI reads ``--memory``; None for a spelling not read here."""
    low = text.strip().lower()
    digits = low.rstrip("bkmgt")
    unit = low[len(digits) :]
    if not digits.isdigit() or not digits.isascii() or unit not in _UNITS:
        return None
    return int(digits) * _UNITS[unit]


def _nano_cpus(text: str) -> int | None:
    """``--cpus 1.5`` → 1500000000, as the CLI computes it (a decimal, at most nine places)."""
    whole, _, fraction = text.partition(".")
    if not whole.isdigit() or not whole.isascii() or (fraction and not (fraction.isdigit() and fraction.isascii())):
        return None
    if len(fraction) > 9:
        return None
    return int(whole) * 10**9 + int(fraction.ljust(9, "0") or "0")


def _bind_mount(spec: str) -> dict[str, Any] | None:
    """A ``--mount type=bind,src=…,dst=…[,readonly]`` value (one CSV record) as a ``Mounts`` entry."""
    import csv  # noqa: PLC0415  (a session with mounts, through the API only)

    try:
        fields = next(csv.reader([spec]))
    except (csv.Error, StopIteration):
        return None
    found: dict[str, str] = {}
    read_only = False
    for field in fields:
        key, sep, value = field.partition("=")
        if key == "readonly" and not sep:
            read_only = True
        elif key in ("type", "src", "dst") and sep and key not in found:
            found[key] = value
        else:
            return None
    if found.get("type") != "bind" or not found.get("src") or not found.get("dst"):
        return None
    return {"Type": "bind", "Source": found["src"], "Target": found["dst"], "ReadOnly": read_only}


def _port(spec: str) -> tuple[str, dict[str, str]] | None:
    """``127.0.0.1:8080:80`` → (``80/tcp``, its binding)."""
    parts = spec.split(":")
    if len(parts) != 3 or not all(p.isdigit() and p.isascii() for p in parts[1:]):
        return None
    return f"{parts[2]}/tcp", {"HostIp": parts[0], "HostPort": parts[1]}


def create_document(argv: Sequence[str]) -> RunDocument | None:
    """The container ``argv`` (``docker run OPTIONS IMAGE COMMAND...``) would create, or None.

    None: a word outside what the launcher itself writes, which only the CLI reads exactly.
    """
    if len(argv) < 3 or argv[1] != "run":
        return None
    words = list(argv[2:])
    seen: set[str] = set()
    values: dict[str, list[str]] = {}
    at = 0
    while at < len(words) and words[at].startswith("-"):
        flag = words[at]
        if flag in _SWITCHES:
            seen.add(flag)
            at += 1
        elif flag in _VALUED and at + 1 < len(words):
            values.setdefault(flag, []).append(words[at + 1])
            at += 2
        else:
            return None
    if at >= len(words) or len(values.get("--name", [])) != 1:
        return None
    image, command = words[at], words[at + 1 :]
    host: dict[str, Any] = {
        "AutoRemove": "--rm" in seen,
        "ReadonlyRootfs": "--read-only" in seen,
        "Binds": list(values.get("--volume", [])),
        "CapDrop": list(values.get("--cap-drop", [])),
        "SecurityOpt": list(values.get("--security-opt", [])),
        "Tmpfs": {},
        "Mounts": [],
        "PortBindings": {},
        "RestartPolicy": {"Name": "no", "MaximumRetryCount": 0},
        **{key: [] for key in _CLI_EMPTY},
    }
    if "--init" in seen:
        host["Init"] = True
    for tmpfs in values.get("--tmpfs", []):
        target, _, options = tmpfs.partition(":")
        host["Tmpfs"][target] = options
    for spec in values.get("--mount", []):
        mount = _bind_mount(spec)
        if mount is None:
            return None
        host["Mounts"].append(mount)
    exposed: dict[str, dict[str, str]] = {}
    for spec in values.get("--publish", []):
        port = _port(spec)
        if port is None:
            return None
        host["PortBindings"].setdefault(port[0], []).append(port[1])
        exposed[port[0]] = {}
    single = {flag: items[-1] for flag, items in values.items()}
    if "--network" in single:
        host["NetworkMode"] = single["--network"]
    if "--runtime" in single:
        host["Runtime"] = single["--runtime"]
    if "--pids-limit" in single:
        if not single["--pids-limit"].isdigit():
            return None
        host["PidsLimit"] = int(single["--pids-limit"])
    if "--memory" in single:
        memory = _bytes(single["--memory"])
        if memory is None:
            return None
        host["Memory"] = memory
    if "--cpus" in single:
        cpus = _nano_cpus(single["--cpus"])
        if cpus is None:
            return None
        host["NanoCpus"] = cpus
    labels = {}
    for label in values.get("--label", []):
        key, _, value = label.partition("=")
        labels[key] = value
    if any("=" not in item for item in values.get("--env", [])):
        return None  # a bare name: the CLI reads its value from its own environment
    interactive, tty = "-i" in seen, "-t" in seen
    document: dict[str, Any] = {
        "Image": image,
        "Cmd": command or None,
        "Env": list(values.get("--env", [])),
        "Labels": labels,
        "User": single.get("--user", ""),
        "WorkingDir": single.get("--workdir", ""),
        "Tty": tty,
        "OpenStdin": interactive,
        "StdinOnce": interactive,  # the CLI's `run -i`: stdin closes with the attached client
        "AttachStdin": interactive,
        "AttachStdout": True,
        "AttachStderr": True,
        "ExposedPorts": exposed,
        "HostConfig": host,
    }
    return RunDocument(name=single["--name"], document=document)
