"""The bad-input matrix generated from both command trees, one row per parameter and input class.

The walker imports the click group of ``terminai-sandbox`` and the argparse tree of
``terminai-apts`` (its ``cleanup`` tool's own parser included), visits every command and
every parameter, and classifies each by its type: the shared parameter types of
``terminai_sandbox.cli.params`` and ``terminai_apts.params`` (a path to read, a path to
write, a directory, a number with its range), a choice, a flag, or a declared free-text or
image-reference role (the tables below). A parameter that is none of these fails
:func:`test_every_parameter_is_classified` with its name: a new option is covered the day it
is added, or the test says which one is not.

Each role has its input classes (docs/EXIT_CODES.md decides the code: 2 for a malformed
value, 3, or the command family's code, for a file that cannot be used):

* a path to read: empty, ``-`` (where it is not stdin), a FIFO nobody writes (must not
  block), a Unix socket, a device (/dev/zero), a directory (for a file) or a regular file
  (for a directory), a dangling symbolic link, and no permission (the row runs as uid and
  gid 65534 through ``setpriv``: this machine runs the tests as root, where permission bits
  do not stop reads);
* a path to write: empty, ``-`` (where it is not stdout), an existing directory, a FIFO, a
  missing parent directory; ``keygen``'s output prefix also a full disk (a 16 KiB tmpfs in a
  private mount namespace, filled; the only writer that needs no other input to reach its
  write; the other writers' full-disk rows are in test_matrix.py);
* a directory to write into: empty, ``-``, an existing file, a FIFO, a dangling link;
* a number: negative, huge (10**30), a fraction where a whole number is asked, nan, inf,
  an Arabic-Indic digit ('٣') and a superscript ('²'), empty;
* a choice: empty and an unknown word; an image reference: empty, and a registry on
  127.0.0.1 that trickles its answer (one byte every half second), says nothing, answers an
  HTML page, or answers JSON of the wrong shape (:data:`SERVERS`). The command is given
  what it needs to reach the registry (:data:`READY`: a key, a layout, a predicate; a new
  reference parameter without an entry fails :func:`test_every_reference_can_reach_its_server`),
  ``TERMINAI_REGISTRY_TIMEOUT`` is :data:`REGISTRY_SECONDS`, and the row must end with the
  registry family's code, 9, within that deadline plus start-up slack (the rows name a tag,
  which every command resolves first; the launch rows through the engine, whose answer waits
  on the registry's).

Every other required argument is filled with a valid value of its own role, so the row
tests one argument. Each row must end within :data:`TIME_BOUND` with the expected code, one
``error:`` line and a ``hint:`` line, no traceback, no "unexpected failure", and nothing
left in the output directory.

Sampling (deterministic, so that the file stays near a minute on two cores):

* a parameter that several commands share with the same flag and the same type (``--store``
  on seven ``evolve`` commands, ``--dist`` on eight ``release`` steps, ``DB`` on seven
  ``memory`` queries...) is one family; its classes are dealt to its commands in turn (class
  i to the i-th command of the sorted family, wrapping), so every class runs once per family;
  a parameter no other command shares is a family of one and gets every class;
* the classes one check of the type answers alike, whatever the parameter
  (:data:`TYPE_LEVEL`: empty, ``-``, nan, inf, other digits, a fraction, an unknown choice,
  all exit 2; and a socket, a device or no permission, refused by the check that refuses a
  FIFO), are dealt the same way across the families of one role of one tool, sorted by
  label; the other classes (a FIFO, a dangling link, the wrong kind, the range) run per
  family;
* the server classes are dealt across every reference parameter, sorted by label: each
  parameter meets one misbehaving server and every class runs at least once.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
from terminai_apts import params as apts_params
from terminai_sandbox.cli import params as sandbox_params
from terminai_sandbox.secret import Secret
from terminai_sandbox.signing.formats import keys

from tests.fixtures.hostile import STALL, TRICKLE, HostileServer, always, http, serving
from tests.fixtures.oci import write_layout

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BIN = Path(sys.executable).parent
TOOLS = {"apts": str(BIN / "terminai-apts"), "sandbox": str(BIN / "terminai-sandbox")}
TIME_BOUND = 20.0  # seconds; every row is refused while its command line is parsed
NOBODY = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups")


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# References point at a closed loopback port: a row that got as far as a registry would fail fast.
REF = f"127.0.0.1:{_closed_port()}/terminai/sandbox@sha256:{'e' * 64}"

# Free text and image references, which the commands parse themselves (a name, a query, a
# date expression, docker's own syntax for --memory): by parameter name, per tool.
SANDBOX_TEXT = {
    "reference": "reference",
    "image": "reference",
    "repository": "text",
    "kind": "text",
    "tag": "text",
    "revision": "text",
    "topic": "text",
    "command": "text",
    "certificate_identity": "text",
    "certificate_oidc_issuer": "text",
    "namespace": "text",
    "name": "text",
    "runtime_class": "text",
    "engine": "text",
    "runtime": "text",
    "unsafe_allow_flag": "text",
    "unsafe_allow_env": "text",
    "image_version": "text",
    "builder_id": "text",
    "network": "text",
    "memory": "text",
    "cpus": "text",
    "attestations": "text",
    "network_policy": "text",  # its own grammar: tests/unit/egress/test_policy.py
    "platforms": "text",  # os/arch lists: tests/unit/assemble/test_platform_spec.py
    "platform": "text",
    "platform_name": "text",
}
APTS_TEXT = frozenset(
    {
        "caller", "query", "pattern", "substring", "source", "kind", "tags", "since", "until", "id",
        "posture", "reason", "trigger", "agent_change", "ts", "decision", "rationale", "outcome", "by",
        "tag", "supersedes", "entry", "attempt_id", "approver", "actor", "topic", "now", "approved_by",
        "cleanup_args",
    }
)  # fmt: skip


@dataclass(frozen=True)
class Param:
    tool: str  # "apts" or "sandbox"
    command: tuple[str, ...]
    name: str
    flag: str | None  # None: a positional argument
    role: str  # see ROLES
    required: bool
    dash: bool = False  # '-' means standard input or output
    code: int = 3  # the exit code of a file this argument refuses
    low: float = 0
    high: float = 0
    choices: tuple[str, ...] = ()
    skip: frozenset[str] = frozenset()  # classes the parameter accepts by design

    @property
    def label(self) -> str:
        return f"{self.tool} {' '.join(self.command)} {self.flag or self.name.upper()}"


UNCLASSIFIED: list[str] = []


def _sandbox_role(param: click.Parameter) -> dict[str, object] | None:
    kind = param.type
    if isinstance(param, click.Option) and param.is_flag:
        return None
    if isinstance(kind, sandbox_params.InputPath):
        return {"role": f"input-{kind.want}", "dash": kind.allow_dash}
    if isinstance(kind, sandbox_params.OutputPath):
        return {"role": "output-file", "dash": kind.allow_dash}
    if isinstance(kind, sandbox_params.OutputDir):
        return {"role": "output-dir"}
    if isinstance(kind, sandbox_params.OutputPrefix):
        return {"role": "output-prefix"}
    if isinstance(kind, sandbox_params.Integer):
        return {"role": "int", "low": kind.min, "high": kind.max}
    if isinstance(kind, sandbox_params.Reference):
        return {"role": "reference"}
    if isinstance(kind, click.Choice):
        return {"role": "choice", "choices": tuple(str(c) for c in kind.choices)}
    if kind in (click.STRING, click.UNPROCESSED) and param.name in SANDBOX_TEXT:
        return {"role": SANDBOX_TEXT[param.name]}
    return {"role": ""}


def _sandbox_params() -> Iterator[Param]:
    from terminai_sandbox.cli import main

    ctx = click.Context(main)

    def walk(command: click.Command, path: tuple[str, ...]) -> Iterator[Param]:
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None, name
                yield from walk(sub, (*path, name))
            return
        for param in command.params:
            info = _sandbox_role(param)
            if info is None:
                continue
            flag = param.opts[-1] if isinstance(param, click.Option) else None
            yield Param("sandbox", path, str(param.name), flag, required=param.required, **info)  # type: ignore[arg-type]

    yield from walk(main, ())


def _apts_role(action: argparse.Action) -> dict[str, object] | None:
    kind = action.type
    if action.nargs == 0 or isinstance(action, argparse._SubParsersAction):
        return None  # flags, --help, --version
    if isinstance(kind, apts_params.Number):
        return {"role": kind.role, "low": kind.low, "high": kind.high}
    if isinstance(kind, apts_params.InputPath):
        return {"role": f"input-{kind.want}", "dash": kind.stdin, "code": kind.error.exit_code}
    if isinstance(kind, apts_params.OutputPath):
        # An audit log's missing directory is made (the log is appended to wherever it is asked).
        return {"role": "output-file", "dash": kind.stdout, "skip": frozenset(() if kind.parent else ("no-parent",))}
    if action.choices:
        return {"role": "choice", "choices": tuple(str(c) for c in action.choices)}
    if action.dest in APTS_TEXT:
        return {"role": "text"}
    return {"role": ""}


def _apts_params() -> Iterator[Param]:
    from terminai_apts import cli
    from terminai_apts.action import cleanup

    trees = [((), cli.build_parser()), (("cleanup",), cleanup.build_parser())]
    for prefix, parser in trees:
        for path, current in cli._parsers(parser):
            if prefix == () and path == ["cleanup"]:
                continue  # its one REMAINDER argument is the cleanup tool's parser, walked next
            for action in current._actions:
                info = _apts_role(action)
                if info is None:
                    continue
                flag = action.option_strings[-1] if action.option_strings else None
                required = bool(action.required) or (flag is None and action.nargs not in ("?", "*"))
                yield Param("apts", (*prefix, *path), action.dest, flag, required=required, **info)  # type: ignore[arg-type]


PARAMS = [*_sandbox_params(), *_apts_params()]

# Input classes by role (see the module docstring), each with the exit code it must end with
# ("refused": the parameter's own code for a file it cannot use).
ROLES: dict[str, tuple[str, ...]] = {
    "input-file": ("empty", "dash", "fifo", "socket", "device", "directory", "dangling", "unreadable"),
    "input-dir": ("empty", "dash", "file", "fifo", "socket", "device", "dangling", "unreadable"),
    "input-any": ("empty", "dash", "fifo", "socket", "device", "dangling", "unreadable"),
    "output-file": ("empty", "dash", "directory", "fifo", "no-parent"),
    "output-dir": ("empty", "dash", "file", "fifo", "dangling"),
    "output-prefix": ("empty", "dash", "no-parent", "full"),
    "int": ("negative", "huge", "fraction", "nan", "inf", "arabic-indic", "superscript", "blank"),
    "float": ("negative", "huge", "nan", "inf", "arabic-indic", "superscript", "blank"),
    "choice": ("blank", "unknown"),
    "reference": ("blank", "trickle", "stall", "html", "wrong-json"),
    "text": (),
}
MALFORMED = {"empty", "dash", "negative", "huge", "fraction", "nan", "inf", "arabic-indic", "superscript", "blank"}
MALFORMED |= {"unknown"}
VALUES = {
    "empty": "",
    "dash": "-",
    "fifo": "fifo",
    "socket": "socket",
    "device": "/dev/zero",
    "directory": "adir",
    "file": "file.txt",
    "dangling": "dangling",
    "unreadable": "locked",
    "no-parent": "out/missing/x",
    "full": "out/x",
    "negative": "-1",
    "huge": str(10**30),
    "fraction": "1.5",
    "nan": "nan",
    "inf": "inf",
    "arabic-indic": "\u0663",
    "superscript": "\u00b2",
    "blank": "",
    "unknown": "no-such-choice",
}


# Registries that break the protocol, one per class, on 127.0.0.1 (started once per module).
_HTML = b"<!DOCTYPE html><html><head><title>Sign in</title></head><body>portal</body></html>"
SERVERS = {
    "trickle": always(TRICKLE, http(200, b"{}", headers={"Content-Type": "application/json"})),
    "stall": always(STALL),
    "html": always(http(200, _HTML, headers={"Content-Type": "text/html"})),
    "wrong-json": always(http(200, b'["schemaVersion", 2]', headers={"Content-Type": "application/json"})),
}
REGISTRY_SECONDS = 1.5  # TERMINAI_REGISTRY_TIMEOUT of the server rows
SERVER_SLACK = 8.0  # start-up and imports on a busy 2-core machine
# What each command taking a reference needs besides it to reach the registry (the files are
# made by _populate): without them it would refuse before asking. The launch rows reach the
# engine first, which is this machine's own.
READY: dict[tuple[str, ...], list[str]] = {
    ("attest",): ["--predicate", "sbom.json", "--key", "cosign.key"],
    ("contracts",): [],  # the engine resolves the tag and pulls
    ("kube",): ["--key", "cosign.pub"],
    ("preflight",): ["--key", "cosign.pub"],
    ("push",): [],  # its LAYOUT is the layout made for the row (_valid_for_server)
    ("run",): ["--key", "cosign.pub"],
    ("sign",): ["--key", "cosign.key"],
    ("verify",): ["--key", "cosign.pub"],
}
# Commands whose reference no server row can reach (none today).
SERVER_SKIP: frozenset[tuple[str, ...]] = frozenset()
# The exit code a registry that cannot be read gives, by command (docs/EXIT_CODES.md: 9
# whichever step meets it; the rows name a tag, which every command resolves first).
SERVER_CODES: dict[tuple[str, ...], int] = {}
# The launch and the contract suite resolve a tag through the engine: dockerd tries TLS first
# and retries, so what the row can see is the engine's answer (or its absence) within the
# registry deadline.
THROUGH_ENGINE = frozenset({("preflight",), ("run",), ("contracts",)})


def _valid(param: Param) -> str:
    """A value of the parameter's role that its type accepts."""
    if param.role in ("int", "float"):
        return str(int(max(param.low, 1)) if param.role == "int" else max(param.low, 1.0))
    return {
        "input-file": "file.txt",
        "input-any": "file.txt",
        "input-dir": "adir",
        "output-file": "out/result",
        "output-dir": "out/newdir",
        "output-prefix": "out/k",
        "choice": param.choices[0] if param.choices else "x",
        "reference": REF,
        "text": "x",
    }[param.role]


def _argv(param: Param, value: str, *, server: bool = False) -> list[str]:
    """The command line: every required argument valid, then ``param`` given ``value``.

    ``server``: a row against a misbehaving registry, so the command also gets what it needs
    to reach it (:data:`READY`; a layout for ``push``)."""
    siblings = [p for p in PARAMS if p.tool == param.tool and p.command == param.command]
    words = list(param.command)
    if param.tool == "apts" and param.command[:1] == ("cleanup",):
        words = ["cleanup"]
    tail: list[str] = list(READY[param.command]) if server else []
    given = set(tail)
    for other in siblings:
        if other.flag is None and (other.required or other == param):
            valid = "layout" if server and other.role == "input-dir" else _valid(other)
            words.append(value if other == param else valid)
        elif other.flag is not None and other.required and other != param and other.flag not in given:
            tail += [other.flag, _valid(other)]
    if param.flag is not None:
        # --flag=VALUE: a value that starts with a dash is the option's value, not an option.
        tail.append(f"{param.flag}={value}" if param.flag.startswith("--") else param.flag)
        if not param.flag.startswith("--"):
            tail.append(value)
    return [*words, *tail]


# The launcher reads --image as it reads TERMINAI_SANDBOX_IMAGE, a setting: preflight step 0
# refuses an empty one with exit 3 ("set but empty": unset it to use the default image).
SETTINGS = {("sandbox", ("preflight",), "image"), ("sandbox", ("run",), "image")}


def _expected(param: Param, kind: str) -> int:
    if kind in SERVERS:
        return SERVER_CODES.get(param.command, 9)
    if (param.tool, param.command, param.name) in SETTINGS:
        return 3
    return 2 if kind in MALFORMED else param.code


# Classes whose outcome is the type's alone (exit 2 whatever the parameter), and the file
# kinds one check of the type refuses alike (a socket or a device is "not a regular file",
# as a FIFO is, which every family still gets; no permission is one stat): dealt across all
# the parameters of one role of one tool rather than given to each family.
TYPE_LEVEL = (MALFORMED - {"negative", "huge"}) | {"socket", "device", "unreadable"}


def _rows() -> dict[str, tuple[Param, str]]:
    families: dict[tuple[object, ...], list[Param]] = {}
    for param in PARAMS:
        if not ROLES.get(param.role):
            continue
        key: tuple[object, ...] = (param.tool, param.flag or param.name, param.role, param.dash, param.code)
        key += (param.low, param.high, param.skip)
        families.setdefault(key, []).append(param)
    rows: dict[str, tuple[Param, str]] = {}

    def add(param: Param, kind: str) -> None:
        if not ((kind == "dash" and param.dash) or kind in param.skip):  # '-' is stdin/stdout here, say
            rows[f"{param.label} <- {kind}"] = (param, kind)

    by_role: dict[tuple[str, str], list[Param]] = {}
    for members in families.values():
        members.sort(key=lambda p: p.command)
        by_role.setdefault((members[0].tool, members[0].role), []).append(members[0])
        kinds = [k for k in ROLES[members[0].role] if k not in TYPE_LEVEL and k not in SERVERS]
        for i, kind in enumerate(kinds):
            add(members[i % len(members)], kind)
    for (_, role), heads in sorted(by_role.items()):
        heads.sort(key=lambda p: p.label)
        kinds = [k for k in ROLES[role] if k in TYPE_LEVEL]
        for i, kind in enumerate(kinds):
            # the i-th head, or the next one the class applies to ('-' is stdin for some)
            turn = [heads[(i + j) % len(heads)] for j in range(len(heads))]
            add(next((h for h in turn if not (kind == "dash" and h.dash) and kind not in h.skip), turn[0]), kind)
    references = sorted(
        (p for p in PARAMS if p.role == "reference" and p.command not in SERVER_SKIP), key=lambda p: p.label
    )
    servers = sorted(SERVERS)
    for i, param in enumerate(references):
        add(param, servers[i % len(servers)])
    return rows


ROWS = _rows()


def test_every_parameter_is_classified() -> None:
    unclassified = [p.label for p in PARAMS if p.role not in ROLES]
    assert not unclassified, (
        "give these parameters a type from terminai_sandbox.cli.params / terminai_apts.params, "
        f"or declare them free text in {__name__}: {unclassified}"
    )


def test_the_walker_found_every_command() -> None:
    sandbox = {p.command for p in PARAMS if p.tool == "sandbox"}
    apts = {p.command for p in PARAMS if p.tool == "apts"}
    for command in ("build", "lock", "sign", "push", "verify", "attest", "sbom", "provenance", "kube", "keygen"):
        assert (command,) in sandbox, command
    assert {("release", "build"), ("release", "verify"), ("contract", "diff"), ("audit", "verify")} <= sandbox
    assert {("exec",), ("repl",), ("exec-audit",), ("cleanup",), ("evolve", "propose"), ("evolve", "rollback")} <= apts
    assert {("memory", "search"), ("memory", "index"), ("memory", "journal", "goals")} <= apts
    # Every role with classes has rows; every class of a role runs at least once.
    for role, kinds in ROLES.items():
        ran = {kind for param, kind in ROWS.values() if param.role == role}
        assert ran == set(kinds) or (ran | {"dash"}) == set(kinds), (role, ran)
    assert {role for role, kinds in ROLES.items() if kinds} == {p.role for p, _ in ROWS.values()}


def test_every_reference_can_reach_its_server() -> None:
    references = {p.command for p in PARAMS if p.role == "reference"}
    missing = sorted(" ".join(c) for c in references - set(READY))
    assert not missing, f"say in READY what these commands need to reach a registry: {missing}"
    dealt = {(param.command, kind) for param, kind in ROWS.values() if kind in SERVERS}
    assert {command for command, _ in dealt} == references - SERVER_SKIP  # each meets a server
    assert {kind for _, kind in dealt} == set(SERVERS)  # each class runs


def test_a_new_option_without_a_type_is_reported_by_name() -> None:
    # What the walker says of options added without one of the shared types.
    assert _sandbox_role(click.Option(["--new-file"], type=click.Path())) == {"role": ""}
    assert _sandbox_role(click.Option(["--count"], type=click.IntRange(0, 5))) == {"role": ""}
    assert _sandbox_role(click.Option(["--label"])) == {"role": ""}
    parser = argparse.ArgumentParser()
    assert _apts_role(parser.add_argument("--new-file")) == {"role": ""}
    assert _apts_role(parser.add_argument("--count", type=int)) == {"role": ""}
    # ... and of the same options once typed.
    typed = _sandbox_role(click.Option(["--new-file"], type=sandbox_params.InputPath()))
    assert typed is not None and typed["role"] == "input-file"
    number = _apts_role(parser.add_argument("--n", type=apts_params.Number("--n", int, 0, 5)))
    assert number is not None and number["role"] == "int"


@pytest.fixture(scope="module")
def base() -> Iterator[Path]:
    # Under /tmp with open permissions: the unreadable rows run as an unprivileged user, who
    # must reach everything but the one locked file.
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="badinput-generated-", dir="/tmp"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _populate(work: Path, kind: str, role: str) -> None:
    work.mkdir(mode=0o755)
    (work / "out").mkdir(mode=0o777)
    (work / "file.txt").write_text("text\n")
    (work / "adir").mkdir()
    os.mkfifo(work / "fifo")
    (work / "dangling").symlink_to(work / "nowhere")
    if kind == "socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(work / "socket"))
        sock.close()  # the socket file stays; nobody listens on it
    if kind in SERVERS:  # what the command needs to reach the registry (READY)
        key = keys.generate()
        (work / "cosign.pub").write_bytes(keys.public_pem(key))
        (work / "cosign.key").write_bytes(keys.encrypt_private(key, Secret(b"generated")))
        (work / "sbom.json").write_text('{"bomFormat": "CycloneDX", "specVersion": "1.5", "version": 1}')
        write_layout(work / "layout", config=b'{"architecture":"amd64","os":"linux"}', layers=[b"generated\n"])
    if kind == "unreadable":
        locked = work / "locked"
        if role == "input-dir":
            locked.mkdir()
        else:
            locked.write_text("secret\n")
        locked.chmod(0)


def _command(tool: str, argv: list[str], kind: str) -> list[str]:
    if kind == "unreadable":
        return [*NOBODY, tool, *argv]
    if kind == "full":
        script = (
            "mount -t tmpfs -o size=16k tmpfs out && (cat /dev/zero > out/.filler) 2>/dev/null;"
            ' "$@"; rc=$?; ls -A out > listing; exit $rc'
        )
        return ["unshare", "-m", "sh", "-c", script, "sh", tool, *argv]
    return [tool, *argv]


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, HostileServer]]:
    with contextlib.ExitStack() as stack:
        yield {kind: stack.enter_context(serving(answer)) for kind, answer in SERVERS.items()}


@pytest.mark.parametrize("name", sorted(ROWS))
def test_generated_bad_input_is_refused_before_work(base: Path, name: str, servers: dict[str, HostileServer]) -> None:
    param, kind = ROWS[name]
    work = base / f"row-{sorted(ROWS).index(name)}"
    _populate(work, kind, param.role)
    home = work.with_name(work.name + "-home")  # outside the working directory, as a user's is
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "LC_ALL": "C.UTF-8", "COSIGN_PASSWORD": "generated"}
    if kind in SERVERS:
        server = servers[kind]
        asked = server.connections
        argv = _argv(param, f"{server.host}/terminai/sandbox:1.0.0", server=True)
        env |= {"TERMINAI_REGISTRY_TIMEOUT": str(REGISTRY_SECONDS)}
        env |= {k: v for k, v in os.environ.items() if k == "DOCKER_HOST"}  # the launch rows' engine
    else:
        argv = _argv(param, VALUES[kind])
    started = time.monotonic()
    try:
        done = subprocess.run(
            _command(TOOLS[param.tool], argv, kind),
            cwd=work,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=TIME_BOUND,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise AssertionError(f"{argv}: hung for more than {TIME_BOUND} s") from None
    took = time.monotonic() - started
    stderr = done.stderr.decode("utf-8", "replace")
    stdout = done.stdout.decode("utf-8", "replace")
    shown = f"{argv}\nexit {done.returncode} after {took:.1f} s\nstderr: {stderr[-1200:]}\nstdout: {stdout[-300:]}"
    assert "Traceback" not in stderr + stdout, shown
    assert "unexpected failure" not in stderr, shown
    assert done.returncode == _expected(param, kind), shown
    errors = [line for line in stderr.splitlines() if line.startswith("error") or ": error:" in line]
    assert len(errors) == 1, shown
    assert any(line.strip().startswith("hint:") for line in stderr.splitlines()), shown
    if kind in SERVERS:
        assert server.connections > asked, f"the command never asked the registry\n{shown}"
        assert took < REGISTRY_SECONDS + SERVER_SLACK, shown
        if kind in ("trickle", "stall"):
            assert took >= REGISTRY_SECONDS * 0.9, f"ended before the deadline\n{shown}"
            assert f"within {REGISTRY_SECONDS:g} s" in stderr, shown
        elif param.command not in THROUGH_ENGINE:  # a lie is told apart from a slow registry at once
            assert "within" not in errors[0] and took < REGISTRY_SECONDS + SERVER_SLACK / 2, shown
    if kind == "full":
        left = [n for n in (work / "listing").read_text().split() if n != ".filler"]
    else:
        left = sorted(p.name for p in (work / "out").iterdir())
    assert left == [], (left, shown)
    shutil.rmtree(work, ignore_errors=True)
