"""Both command lines driven with bad and hostile inputs, as subprocesses of their console scripts.

Every row is one command with one slot filled by one input class: a path that is missing,
empty, binary, a FIFO (fed by a writer), not UTF-8, corrupt JSON or a corrupt SQLite file; an
output location that is missing its parent, a directory, read-only or full (a tiny tmpfs
mounted in a private mount namespace, so nothing on the machine changes); a closed stdin;
numbers that are nan, huge or negative; Ctrl-C or SIGTERM mid-way. The product of commands and
classes is generated; the rows the published reports named are listed after it.

Each row must end within the time bound with its documented exit code (docs/EXIT_CODES.md),
exactly one ``error:`` line, no traceback, and nothing left in the output directory.
"""

from __future__ import annotations

import dataclasses
import gzip
import io
import json
import os
import shutil
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.fixtures.oci import write_layout

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BIN = Path(sys.executable).parent
APTS = str(BIN / "terminai-apts")
SANDBOX = str(BIN / "terminai-sandbox")
DIGEST = "sha256:" + "e" * 64
PASSWORD = "bad-input-matrix"  # a throwaway key made for these tests
TIME_BOUND = 20.0  # seconds; a row that takes longer hangs

# Input classes a path slot is filled with (the files are made by _populate). A directory
# where a file is read, a socket, a device, a dangling link and no permission are each
# argument type's, generated per argument in test_generated.py; these are the contents.
INPUTS = ("missing", "empty", "binary", "fifo", "latin1", "corrupt.json", "corrupt.sqlite")
# The memory queries open the index through one reader: the input classes are dealt to them
# in turn (class i to the i-th query, wrapping), so each class runs once for the reader.
MEMORY_QUERIES = ("memory search", "memory filter", "memory count", "memory get", "memory grep")
# Output classes: where a command is told to write.
OUTPUTS = ("no-parent", "directory", "read-only", "full")


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


CLOSED = f"127.0.0.1:{_closed_port()}"
# A port that accepts connections (the kernel's backlog) and never answers: a registry that hangs.
_SILENT = socket.socket()
_SILENT.bind(("127.0.0.1", 0))
_SILENT.listen(16)
SILENT = f"127.0.0.1:{_SILENT.getsockname()[1]}"
REF = f"{CLOSED}/terminai/sandbox@{DIGEST}"


@dataclass(frozen=True)
class Case:
    tool: str  # APTS or SANDBOX
    args: tuple[str, ...]  # "{out}" is the output location of the row's output class
    code: int  # the documented exit code
    message: str = ""  # a piece of the error line
    stdin: bytes | None = b""  # None: closed
    env: dict[str, str] = field(default_factory=dict)
    output: str = ""  # an OUTPUTS class: mount or make the output directory accordingly
    fifo: bytes | None = None  # what a writer feeds the FIFO, if the row has one
    interrupt_after: float | None = None  # send `interrupt` after this many seconds
    interrupt: int = signal.SIGINT  # Ctrl-C, or SIGTERM (kill, a service manager): both end cleaned up
    unset: tuple[str, ...] = ()  # environment variables the row removes


def _layer() -> bytes:
    """A gzip'd tar with a one-package dpkg status: a layer the SBOM generator describes."""
    status = b"Package: hello\nStatus: install ok installed\nVersion: 1.0-1\nArchitecture: amd64\nSource: hello\n\n"
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        info = tarfile.TarInfo("var/lib/dpkg/status")
        info.size = len(status)
        tar.addfile(info, io.BytesIO(status))
    return gzip.compress(raw.getvalue(), mtime=0)


def _populate(work: Path) -> None:
    (work / "empty").write_bytes(b"")
    (work / "binary").write_bytes(bytes(range(256)) * 4)
    (work / "directory").mkdir()
    os.mkfifo(work / "fifo")
    (work / "latin1").write_bytes("print('caf\xe9')\n# r\xe9sum\xe9\n".encode("latin-1"))
    (work / "corrupt.json").write_text('{"schemaVersion": 2, "manifests": [')
    (work / "corrupt.sqlite").write_bytes(b"SQLite format 3\x00" + b"\x17" * 4000)
    (work / "code.py").write_text("result = 1 + 1\nprint(result)\n")
    (work / "out").mkdir()
    # A memory index in write-ahead-log mode, which the read-only reader refuses.
    wal = sqlite3.connect(work / "wal.sqlite")
    wal.execute("PRAGMA journal_mode=WAL")
    wal.execute("CREATE TABLE memories(id INTEGER PRIMARY KEY)")
    wal.commit()
    wal.close()
    # A foreign-schema SQLite file.
    foreign = sqlite3.connect(work / "foreign.sqlite")
    foreign.execute("CREATE TABLE things(x)")
    foreign.commit()
    foreign.close()
    # A good archive in the original schema (what `memory index --archive` imports).
    arch = sqlite3.connect(work / "archive.sqlite")
    arch.execute(
        "CREATE TABLE memories(id INTEGER PRIMARY KEY, date TEXT, title TEXT, content TEXT,"
        " summary TEXT, tags TEXT, source TEXT, confidence REAL)"
    )
    arch.executemany(
        "INSERT INTO memories VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [(i, f"2024-01-{i:02d}", f"note {i}", f"content {i}", "", "a,b", "test", 1.0) for i in range(1, 20)],
    )
    arch.commit()
    arch.close()
    # Keys for the signing commands.
    from terminai_sandbox.secret import Secret
    from terminai_sandbox.signing.formats import keys

    key = keys.generate()
    (work / "cosign.key").write_bytes(keys.encrypt_private(key, Secret(PASSWORD.encode())))
    (work / "cosign.pub").write_bytes(keys.public_pem(key))
    (work / "predicate.json").write_text("{}\n")
    (work / "signatures").mkdir()
    (work / "signatures" / "signatures.json").write_text("[]")
    write_layout(work / "signatures" / "oci", config=b"{}", layers=[b"layer"])
    # An OCI layout whose index.json is a FIFO (reading it would block forever).
    write_layout(work / "fifo-layout", config=b"{}", layers=[b"layer"])
    (work / "fifo-layout" / "index.json").unlink()
    os.mkfifo(work / "fifo-layout" / "index.json")
    write_layout(work / "layout", config=b"{}", layers=[_layer()])
    (work / "corrupt-layout").mkdir()
    (work / "corrupt-layout" / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    (work / "corrupt-layout" / "index.json").write_text("{not json")


def _input_rows() -> Iterator[tuple[str, Case]]:
    """Every command that reads a file, with that file replaced by every input class."""
    # (name, tool, args with {in}, code per class; "*" is the default, stdin)
    slots: list[tuple[str, str, tuple[str, ...], dict[str, int], bytes | None]] = [
        ("exec --db", APTS, ("exec", "--db", "{in}"), {"*": 24, "missing": 2}, b"print(1)\n"),
        (
            "exec-audit",
            APTS,
            ("exec-audit", "{in}"),
            {"*": 23, "missing": 22, "directory": 3, "fifo": 3, "empty": 0},
            b"",
        ),
        ("memory search", APTS, ("memory", "search", "{in}", "x"), {"*": 24, "directory": 24}, b""),
        ("memory filter", APTS, ("memory", "filter", "{in}"), {"*": 24, "directory": 24}, b""),
        ("memory count", APTS, ("memory", "count", "{in}"), {"*": 24, "directory": 24}, b""),
        ("memory get", APTS, ("memory", "get", "{in}", "1"), {"*": 24, "directory": 24}, b""),
        ("memory grep", APTS, ("memory", "grep", "{in}", "x"), {"*": 24, "directory": 24}, b""),
        ("memory index --archive", APTS, ("memory", "index", "out/idx.sqlite", "--archive", "{in}"), {"*": 24}, b""),
        (
            "evolve propose CODE",
            APTS,
            ("evolve", "propose", "{in}", "--store", "out/store"),
            {"*": 3, "empty": 2, "corrupt.json": 1, "corrupt.sqlite": 1},
            b"",
        ),
        (
            "evolve propose --tests",
            APTS,
            ("evolve", "propose", "code.py", "--tests", "{in}", "--store", "out/store"),
            {"*": 3, "empty": 0, "corrupt.json": 1, "corrupt.sqlite": 1},
            b"",
        ),
        ("evolve status --store", APTS, ("evolve", "status", "--store", "{in}"), {"*": 3, "directory": 0}, b""),
        ("cleanup DIR", APTS, ("cleanup", "{in}"), {"*": 20, "directory": 0}, b""),
        (
            "cleanup --plan",
            APTS,
            ("cleanup", "directory", "--plan", "{in}", "--apply", "--approved-by", "t"),
            {"*": 3},
            b"",
        ),
        ("contract diff", SANDBOX, ("contract", "diff", "{in}", "{in}"), {"*": 3}, b""),
        ("sign --key", SANDBOX, ("sign", REF, "--key", "{in}"), {"*": 3}, b""),
        (
            "attest --predicate",
            SANDBOX,
            ("attest", REF, "--predicate", "{in}", "--key", "cosign.key"),
            {"*": 3},
            b"",
        ),
        ("verify --key", SANDBOX, ("verify", REF, "--key", "{in}"), {"*": 3}, b""),
        ("verify --policy", SANDBOX, ("verify", REF, "--policy", "{in}"), {"*": 3}, b""),
        (
            "keygen --import",
            SANDBOX,
            ("keygen", "--output-prefix", "out/k", "--import", "{in}"),
            {"*": 10, "missing": 3, "directory": 3, "fifo": 3},
            b"",
        ),
        (
            "push LAYOUT",
            SANDBOX,
            ("push", "{in}", f"{CLOSED}/terminai/sandbox:1"),
            {"*": 3},
            b"",
        ),
        ("sbom LAYOUT", SANDBOX, ("sbom", "{in}", "-o", "out/sbom.json"), {"*": 3, "directory": 12}, b""),
    ]
    for name, tool, args, codes, stdin in slots:
        for number, kind in enumerate(INPUTS):
            if name in MEMORY_QUERIES and number % len(MEMORY_QUERIES) != MEMORY_QUERIES.index(name):
                continue  # one reader of the index: each class once across the queries, in turn
            code = codes.get(kind, codes["*"])
            filled = tuple(a.replace("{in}", kind) for a in args)
            # "latin1" and "corrupt.*" are files: a command that needs a directory refuses them like "binary".
            yield (
                f"{name} <- {kind}",
                Case(tool, filled, code, stdin=stdin, fifo=b"\xff\xfe garbage" if kind == "fifo" else None),
            )


def _output_rows() -> Iterator[tuple[str, Case]]:
    """Every command that writes a file, told to write where it cannot."""
    # (name, tool, args, stdin, the classes that apply): a store is a directory (given one, it
    # is used) and a missing parent is created for the audit log and the store.
    slots: list[tuple[str, str, tuple[str, ...], str, tuple[str, ...]]] = [
        ("exec --audit", APTS, ("exec", "--audit", "{out}"), "print(1)\n", ("directory", "read-only", "full")),
        (
            "memory index",
            APTS,
            ("memory", "index", "{out}", "--archive", "archive.sqlite"),
            "",
            ("no-parent", "read-only", "full"),
        ),
        (
            "evolve propose --store",
            APTS,
            ("evolve", "propose", "code.py", "--store", "{out}"),
            "",
            ("read-only", "full"),
        ),
        ("keygen", SANDBOX, ("keygen", "--output-prefix", "{out}"), "", OUTPUTS),
        ("sbom -o", SANDBOX, ("sbom", "layout", "-o", "{out}", "--source-date-epoch", "0"), "", OUTPUTS),
    ]
    for name, tool, args, stdin, kinds in slots:
        for kind in kinds:
            target = {"no-parent": "out/missing/x", "directory": "out", "read-only": "out/x", "full": "out/x"}[kind]
            filled = tuple(a.replace("{out}", target) for a in args)
            yield f"{name} -> {kind}", Case(tool, filled, 3, stdin=stdin.encode(), output=kind)


def _named_rows() -> Iterator[tuple[str, Case]]:
    """The cases the reports named one by one."""
    rows = {
        # closed stdin
        "exec, stdin closed": Case(APTS, ("exec",), 2, "standard input is closed", stdin=None),
        "repl, stdin closed": Case(APTS, ("repl",), 2, "standard input is closed", stdin=None),
        "repl --json, stdin closed": Case(APTS, ("repl", "--json"), 2, "standard input is closed", stdin=None),
        "evolve propose -, stdin closed": Case(
            APTS, ("evolve", "propose", "-", "--store", "out/s"), 2, "standard input is closed", stdin=None
        ),
        "keygen, stdin closed, no password": Case(
            SANDBOX, ("keygen", "--output-prefix", "out/k"), 10, "no password", stdin=None, unset=("COSIGN_PASSWORD",)
        ),
        # non-UTF-8 bytes
        "exec, non-UTF-8 code": Case(APTS, ("exec",), 3, "UTF-8", stdin=b"print('\xff')\n"),
        "evolve propose, non-UTF-8 proposal": Case(
            APTS, ("evolve", "propose", "latin1", "--store", "out/s"), 3, "UTF-8"
        ),
        "contract diff, non-UTF-8": Case(SANDBOX, ("contract", "diff", "latin1", "latin1"), 3, "latin1"),
        # numbers
        "exec --timeout nan": Case(APTS, ("exec", "--timeout", "nan"), 2, "finite", stdin=b"print(1)\n"),
        "exec --timeout 1e308": Case(APTS, ("exec", "--timeout", "1e308"), 2, "out of range", stdin=b"print(1)\n"),
        "exec --timeout -5": Case(APTS, ("exec", "--timeout", "-5"), 2, "out of range", stdin=b"print(1)\n"),
        "exec --memory-mb -1": Case(APTS, ("exec", "--memory-mb", "-1"), 2, "out of range", stdin=b"print(1)\n"),
        "exec --max-output 99999999999999999999": Case(
            APTS, ("exec", "--max-output", "99999999999999999999"), 2, "out of range", stdin=b"print(1)\n"
        ),
        "evolve propose --timeout nan": Case(
            APTS, ("evolve", "propose", "code.py", "--store", "out/s", "--timeout", "nan"), 2, "finite"
        ),
        "memory summarize --max-results 0": Case(
            APTS, ("memory", "summarize", "archive.sqlite", "x", "--max-results", "0"), 2, "out of range"
        ),
        "memory search --limit -3": Case(
            APTS, ("memory", "search", "archive.sqlite", "x", "--limit", "-3"), 2, "range"
        ),
        "memory search --since -5d": Case(
            APTS, ("memory", "search", "archive.sqlite", "x", "--since", "-5d"), 24, "original schema"
        ),
        # ids are the archive's strings (seed 000), so a huge number is an id like any other
        "memory filter huge limit": Case(
            APTS, ("memory", "filter", "archive.sqlite", "--limit", "9" * 30), 2, "out of range"
        ),
        "cleanup --scan-limit -1": Case(APTS, ("cleanup", "directory", "--scan-limit", "-1"), 2, "out of range"),
        "push --chunk-size -5": Case(
            SANDBOX, ("push", "layout", f"{CLOSED}/terminai/sandbox:1", "--chunk-size", "-5"), 2, "--chunk-size"
        ),
        "push --chunk-size 0": Case(
            SANDBOX, ("push", "layout", f"{CLOSED}/terminai/sandbox:1", "--chunk-size", "0"), 2, "--chunk-size"
        ),
        "sbom --source-date-epoch -1": Case(
            SANDBOX, ("sbom", "layout", "-o", "out/s.json", "--source-date-epoch", "-1"), 2, "source-date-epoch"
        ),
        # hostile files
        "memory search, WAL index": Case(APTS, ("memory", "search", "wal.sqlite", "x"), 24, "wal.sqlite"),
        "memory search, foreign schema": Case(APTS, ("memory", "search", "foreign.sqlite", "x"), 24, "foreign.sqlite"),
        "exec --db, corrupt index": Case(APTS, ("exec", "--db", "corrupt.sqlite"), 24, "corrupt.sqlite", b"print(1)\n"),
        "exec --db, WAL index": Case(APTS, ("exec", "--db", "wal.sqlite"), 24, "wal.sqlite", b"print(1)\n"),
        "evolve status --store /nonexistent": Case(
            APTS, ("evolve", "status", "--store", "out/nonexistent"), 3, "out/nonexistent"
        ),
        "push, FIFO as index.json": Case(SANDBOX, ("push", "fifo-layout", f"{CLOSED}/t/s:1"), 3, "index.json"),
        "push, corrupt index.json": Case(SANDBOX, ("push", "corrupt-layout", f"{CLOSED}/t/s:1"), 3, "index.json"),
        "verify --offline, signatures.json holds []": Case(
            SANDBOX,
            ("verify", f"{CLOSED}/terminai/sandbox:1", "--key", "cosign.pub", "--offline", "signatures"),
            11,
            "signatures.json is not a JSON object",
        ),
        "keygen --output-prefix ''": Case(SANDBOX, ("keygen", "--output-prefix", ""), 2, "empty"),
        "keygen --output-prefix DIR/": Case(SANDBOX, ("keygen", "--output-prefix", "out/"), 3, "names no file"),
        "keygen, non-UTF-8 password": Case(
            SANDBOX, ("keygen", "--output-prefix", "out/k"), 0, env={"COSIGN_PASSWORD": "caf\udce9"}
        ),
        "sbom -o - writes to stdout": Case(SANDBOX, ("sbom", "layout", "-o", "-", "--source-date-epoch", "0"), 0),
        "verify IMAGE without tag or digest": Case(
            SANDBOX, ("verify", f"{CLOSED}/terminai/sandbox", "--key", "cosign.pub"), 3, "neither tag nor digest"
        ),
        "run, SANDBOX_PORTS superscript digit": Case(
            SANDBOX,
            ("run", "--image", REF, "--key", "cosign.pub", "--", "true"),
            3,
            "SANDBOX_PORTS",
            env={"SANDBOX_PORTS": "\u00b2"},
        ),
        "engine status, bad TERMINAI_SANDBOX": Case(
            SANDBOX, ("engine", "status"), 3, "TERMINAI_SANDBOX", env={"TERMINAI_SANDBOX": "bogus"}
        ),
        "attest --type slsaprovenance1 with a CycloneDX document": Case(
            SANDBOX,
            ("attest", REF, "--predicate", "cyclonedx.json", "--type", "slsaprovenance1", "--key", "cosign.key"),
            3,
            "slsaprovenance1",
        ),
        "provenance outside a checkout": Case(
            SANDBOX, ("provenance", "layout", "-o", "out/p.json"), 3, "provenance describes the checkout"
        ),
        "evolve propose --store a file": Case(APTS, ("evolve", "propose", "code.py", "--store", "binary"), 3, "binary"),
        "build --spec, non-UTF-8": Case(SANDBOX, ("build", "--spec", "latin1", "--no-load"), 3, "latin1 is not UTF-8"),
        "lock --spec, non-UTF-8": Case(SANDBOX, ("lock", "--spec", "latin1", "--check"), 3, "latin1 is not UTF-8"),
        "verify, overlong reference": Case(
            SANDBOX, ("verify", "a" * 300 + ":1", "--key", "cosign.pub"), 3, "repository name of 300 characters"
        ),
        # a plain directory where a journal is expected: refused before anything is locked or made
        "memory verify, a plain directory": Case(APTS, ("memory", "verify", "out"), 22, "not a journal directory"),
        "memory compact, a plain directory": Case(APTS, ("memory", "compact", "out"), 22, "not a journal directory"),
        "memory index, a plain directory as DB": Case(
            APTS, ("memory", "index", "out", "--archive", "archive.sqlite"), 22, "not a journal directory"
        ),
        "memory index --journal, a plain directory": Case(
            APTS, ("memory", "index", "out/idx.sqlite", "--journal", "out"), 22, "not a journal directory"
        ),
        "release outside a checkout": Case(
            SANDBOX,
            ("release", "--push", f"{CLOSED}/terminai/sandbox", "--key", "cosign.key", "--dist", "out/dist"),
            3,
            "a release is made from a checkout",
        ),
        # lone surrogates (non-UTF-8 argument bytes, a JSON escape): refused in Kubernetes objects,
        # escaped in the audit log, which is then read back strictly (see the test below)
        "kube, non-UTF-8 COMMAND": Case(
            SANDBOX, ("kube", REF, "--key", "cosign.pub", "--", "echo", "caf\udce9"), 3, "COMMAND argument 2"
        ),
        "exec --audit, non-UTF-8 --caller (log read strictly)": Case(
            APTS, ("exec", "--audit", "out/audit.jsonl", "--caller", "ag\udcffent"), 0, stdin=b"print(1)\n"
        ),
        "repl --json --audit, a lone surrogate in a cell (log read strictly)": Case(
            APTS, ("repl", "--json", "--audit", "out/audit.jsonl"), 0, stdin=b'{"code": "x = \'\\udcff\'"}\n'
        ),
        # interrupts
        "exec, Ctrl-C while the code runs": Case(
            APTS, ("exec", "--timeout", "60"), 130, "interrupted", stdin=b"while True:\n    pass\n", interrupt_after=3.0
        ),
        "exec --json, Ctrl-C while the code runs": Case(
            APTS,
            ("exec", "--timeout", "60", "--json"),
            130,
            "interrupted",
            stdin=b"while True:\n    pass\n",
            interrupt_after=3.0,
        ),
        "repl --json, Ctrl-C while a cell runs": Case(
            APTS,
            ("repl", "--json", "--timeout", "60"),
            130,
            "interrupted",
            stdin=b'{"code": "while True:\\n    pass"}\n',
            interrupt_after=3.0,
        ),
        "memory index, Ctrl-C while building": Case(
            APTS,
            ("memory", "index", "out/idx.sqlite", "--archive", "big.sqlite"),
            130,
            "interrupted",
            interrupt_after=1.0,
        ),
        "push to a registry that never answers, Ctrl-C": Case(
            SANDBOX, ("push", "layout", f"{SILENT}/terminai/sandbox:1"), 130, "interrupted", interrupt_after=2.0
        ),
        "cleanup --apply, Ctrl-C": Case(
            APTS,
            ("cleanup", "big", "--apply", "--approved-by", "t", "--now", "2030-01-01T00:00:00Z"),
            130,
            "interrupted",
            interrupt_after=1.0,
        ),
    }
    # SIGTERM ends the same long-running commands as Ctrl-C does: exit 143, nothing left
    # behind (a memory index build left its .NAME.PID.tmp and -journal), no process left.
    for name, case in list(rows.items()):
        if "Ctrl-C" in name:
            rows[name.replace("Ctrl-C", "SIGTERM")] = dataclasses.replace(
                case, code=143, message="terminated (SIGTERM)", interrupt=signal.SIGTERM
            )
    yield from rows.items()


def _all_rows() -> dict[str, Case]:
    rows = dict(_input_rows())
    rows.update(_output_rows())
    rows.update(_named_rows())
    return rows


ROWS = _all_rows()


def _feed_fifo(path: Path, data: bytes, deadline: float) -> None:
    """Write ``data`` into the FIFO once a reader opens it (give up at ``deadline``)."""
    while time.monotonic() < deadline:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            time.sleep(0.05)
            continue
        try:
            os.set_blocking(fd, True)
            os.write(fd, data)
        except OSError:
            pass
        finally:
            os.close(fd)
        return


_MOUNT = {
    "read-only": "mount -t tmpfs -o ro,size=64k tmpfs out",
    # A 16 KiB tmpfs filled to the last block.
    "full": "mount -t tmpfs -o size=16k tmpfs out && (cat /dev/zero > out/.filler) 2>/dev/null; true",
}


def _command(case: Case) -> list[str]:
    if case.output in _MOUNT:
        # A private mount namespace (user namespace when not root): the tmpfs vanishes with it.
        # The listing of the output directory is taken inside, before it does.
        script = f'{_MOUNT[case.output]} && {{ "$@"; rc=$?; ls -A out > listing; exit $rc; }}'
        return ["unshare", "-rm", "sh", "-c", script, "sh", case.tool, *case.args]
    return [case.tool, *case.args]


def _alive_in_group(pgid: int) -> list[int]:
    """Processes of group ``pgid`` that still run (zombies waiting for a reaper do not count)."""
    alive = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            alive.append(int(entry.name))
    return alive


def _run(work: Path, case: Case) -> tuple[subprocess.CompletedProcess[bytes], float]:
    home = work.with_name(work.name + "-home")  # outside the working directory, as a user's is
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "COSIGN_PASSWORD": PASSWORD, "LC_ALL": "C.UTF-8"}
    for name, value in case.env.items():
        env[name] = value
    for name in case.unset:
        env.pop(name, None)
    env_bytes = {k.encode(): v.encode("utf-8", "surrogateescape") for k, v in env.items()}
    started = time.monotonic()
    deadline = started + TIME_BOUND
    if case.fifo is not None:
        threading.Thread(target=_feed_fifo, args=(work / "fifo", case.fifo, deadline), daemon=True).start()
    stdin = subprocess.PIPE if case.stdin is not None else subprocess.DEVNULL
    proc = subprocess.Popen(
        _command(case),
        cwd=work,
        env=env_bytes,  # type: ignore[arg-type]
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # a closed stdin: the child's descriptor 0 is closed before it starts
        preexec_fn=(lambda: os.close(0)) if case.stdin is None else None,  # noqa: PLW1509
        start_new_session=True,  # its own process group: what it started can be found afterwards
    )
    given = case.stdin or None
    if case.interrupt_after is not None:
        if given is not None and proc.stdin is not None:
            # The input goes in first, so the signal meets the command at work (the code
            # running), not waiting for its input.
            proc.stdin.write(given)
            proc.stdin.close()
            proc.stdin = None  # communicate() must not flush it again
            given = None
        time.sleep(case.interrupt_after)
        proc.send_signal(case.interrupt)
    try:
        out, err = proc.communicate(given, timeout=TIME_BOUND)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(
            f"hung for more than {TIME_BOUND} s; stderr: {err.decode(errors='replace')[-600:]}"
        ) from None
    if case.interrupt_after is not None:
        # Ctrl-C ends the whole command: the run it was waiting on too (within a moment).
        settle = time.monotonic() + 5
        while _alive_in_group(proc.pid) and time.monotonic() < settle:
            time.sleep(0.05)
        assert not _alive_in_group(proc.pid), f"left running after the signal: {_alive_in_group(proc.pid)}"
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), time.monotonic() - started


def _copy_entry(source: str, destination: str) -> None:
    """``shutil.copy2``, except that a FIFO is made anew (copying one would read it: block)."""
    if stat.S_ISFIFO(os.lstat(source).st_mode):
        os.mkfifo(destination)
    else:
        shutil.copy2(source, destination)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # One set of inputs for every row: making it (a password-encrypted signing key, three
    # SQLite files, four layouts) costs a row's own run again; a copy costs a fiftieth of it.
    made = tmp_path_factory.mktemp("badinput-template") / "work"
    made.mkdir()
    _populate(made)
    return made


@pytest.fixture()
def work(template: Path, tmp_path: Path) -> Path:
    row = tmp_path / "work"
    shutil.copytree(template, row, symlinks=True, copy_function=_copy_entry)
    return row


def _prepare(work: Path, name: str, case: Case) -> None:
    if "cleanup --apply" in name:
        big = work / "big"
        big.mkdir()
        for i in range(3000):
            (big / f"installer-{i}.tmp").write_bytes(b"x")
            os.utime(big / f"installer-{i}.tmp", (0, 0))
    if "while building" in name:
        conn = sqlite3.connect(work / "big.sqlite")
        conn.execute(
            "CREATE TABLE memories(id INTEGER PRIMARY KEY, date TEXT, title TEXT, content TEXT,"
            " summary TEXT, tags TEXT, source TEXT, confidence REAL)"
        )
        rows = ((i, "2024-01-01", f"note {i}", f"lorem ipsum {i} " * 40, "", "a", "t", 1.0) for i in range(1, 40001))
        conn.executemany("INSERT INTO memories VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
        conn.commit()
        conn.close()
    if "CycloneDX" in name:
        (work / "cyclonedx.json").write_text(json.dumps({"bomFormat": "CycloneDX", "specVersion": "1.6"}))


def _read_strictly(path: Path) -> None:
    """Strict UTF-8, one JSON object a line, every string in it valid text; the chain verifies."""

    def valid(value: object) -> None:
        if isinstance(value, str):
            value.encode("utf-8")  # a lone surrogate (a "\\udcff" escape parsed) raises here
        elif isinstance(value, dict):
            for key, item in value.items():
                valid(key)
                valid(item)
        elif isinstance(value, list):
            for item in value:
                valid(item)

    lines = path.read_bytes().decode("utf-8", "strict").splitlines()
    assert lines, f"nothing was audited in {path}"
    for line in lines:
        valid(json.loads(line))
    checked = subprocess.run([APTS, "exec-audit", str(path)], check=False, capture_output=True, timeout=TIME_BOUND)
    assert checked.returncode == 0, checked.stderr


@pytest.mark.parametrize("name", sorted(ROWS))
def test_bad_input_ends_in_one_error_line_with_its_code(work: Path, name: str) -> None:
    case = ROWS[name]
    _prepare(work, name, case)
    before = sorted(p.name for p in (work / "out").iterdir())
    done, _ = _run(work, case)
    stderr = done.stderr.decode("utf-8", "replace")
    stdout = done.stdout.decode("utf-8", "replace")
    shown = f"exit {done.returncode}\nstderr: {stderr[-1200:]}\nstdout: {stdout[-300:]}"
    assert "Traceback" not in stderr + stdout, shown
    assert done.returncode == case.code, shown
    if case.code != 0:
        errors = [line for line in stderr.splitlines() if line.startswith("error") or ": error:" in line]
        assert len(errors) == 1, shown
        assert case.message in errors[0], shown
    left = (
        (work / "listing").read_text().split()
        if case.output in _MOUNT
        else sorted(p.name for p in (work / "out").iterdir())
    )
    left = [n for n in left if n != ".filler"]
    if case.code not in (0, 1):  # 1: the command ran and recorded its verdict (a rejected proposal, say)
        assert left == before or (case.output == "" and set(left) <= set(before)), (left, shown)
    if "(log read strictly)" in name:
        _read_strictly(work / "out" / "audit.jsonl")
    if name.startswith("sbom -o - writes"):
        assert not (work / "-").exists() and json.loads(stdout)["bomFormat"] == "CycloneDX"


def test_every_command_of_both_tools_has_a_bad_input_row() -> None:
    listed = {case.args[0] for case in ROWS.values() if case.tool == APTS}
    assert {"exec", "repl", "exec-audit", "memory", "evolve", "cleanup"} <= listed
    sandbox = {case.args[0] for case in ROWS.values() if case.tool == SANDBOX}
    commands = {"keygen", "sign", "attest", "verify", "push", "sbom", "contract", "run", "engine", "kube", "release"}
    assert commands <= sandbox
    assert shutil.which("unshare"), "the read-only and full rows need unshare (util-linux)"
