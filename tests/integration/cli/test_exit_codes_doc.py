"""docs/EXIT_CODES.md, read and checked against real runs of both console scripts.

The tables are parsed from the page itself; every code they list has at least one real
case here (run as a subprocess, its exit code compared) or is named in ``NOT_RETURNED``
with the reason no command returns it. A code added to the page without a case, or a
case whose command returns another code, fails here. Registries are loopback servers
started by the test; nothing here needs more than this machine.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.fixtures.oci import write_layout

BIN = Path(sys.executable).parent
APTS = str(BIN / "terminai-apts")
SANDBOX = str(BIN / "terminai-sandbox")
REPO = Path(__file__).resolve().parents[3]
DOC = REPO / "docs" / "EXIT_CODES.md"
PASSWORD = "exit-codes"  # a throwaway key made for these tests
LOOP = b"while True:\n    pass\n"


def documented_codes() -> dict[int, str]:
    """Every row of every table on the page whose first column is a code: code → meaning."""
    codes: dict[int, str] = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        match = re.match(r"^\|\s*(\d+)\s*\|\s*(.+?)\s*\|", line)
        if match:
            code = int(match.group(1))
            assert code not in codes, f"code {code} has two rows in {DOC.name}"
            codes[code] = match.group(2)
    return codes


# Codes of the tables no command returns today, and why. A case must replace the entry the
# day one does (the test below checks that none of these classes is raised anywhere).
NOT_RETURNED = {
    7: "a build that is not reproducible: needs two full image builds (tests/integration/assemble)",
    14: "documented as not used",
    17: "documented as reserved (governed evolution through the host)",
    18: "the policy's proxy failing to start: needs a verified image and a network namespace "
    "(tests/integration/launch/test_network_policy.py)",
    25: "ReadOnlyViolation: raised when the index's authorizer refuses a statement that writes, which no "
    "command sends (tests/unit/memory/test_hostile.py); inside a run it is exec's own failure (1)",
    28: "documented as not used (the health check keeps its own table: python -m terminai_apts.health)",
}


@dataclass(frozen=True)
class Case:
    tool: str
    args: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    stdin: bytes = b""
    signal_after: tuple[int, float] | None = None  # (signal, seconds): sent while it works
    closed_stdout: bool = False
    prefix: tuple[str, ...] = ()  # a command to run it under (prlimit)
    hint: bool = True  # an error line followed by a hint (not: the result of the user's code)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


CLOSED = f"127.0.0.1:{_closed_port()}"


class _Failing(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(500)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_HEAD(self) -> None:
        self.do_GET()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def failing_registry() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Failing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def cases(registry: str) -> dict[int, list[Case]]:
    no_tools = {"PATH": "bin-empty"}
    launch = ("--key", "k.pub", "--image", f"{CLOSED}/t/s:1")
    return {
        0: [Case(APTS, ("version",)), Case(SANDBOX, ("version",))],
        1: [Case(APTS, ("exec",), stdin=b"raise ValueError('no')\n", hint=False)],
        2: [
            Case(SANDBOX, ("nope",)),
            Case(APTS, ("exec", "--timeout", "nan"), stdin=b"print(1)\n"),
            Case(SANDBOX, ("keygen", "--output-prefix", "-")),
        ],
        3: [
            Case(SANDBOX, ("keygen", "--output-prefix", "notes/")),
            Case(SANDBOX, ("audit", "verify", "--ledger", "missing")),
            Case(APTS, ("cleanup", "notes", "--plan", "garbage", "--apply", "--approved-by", "t")),
            Case(APTS, ("evolve", "status", "--store", "missing")),
        ],
        4: [Case(SANDBOX, ("engine", "status"), env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"})],
        5: [Case(SANDBOX, ("lock", "--spec", str(REPO / "images" / "sandbox" / "image.toml")), env=no_tools)],
        6: [Case(SANDBOX, ("build", "--spec", "img/image.toml", "--no-load", "--output", "out"))],
        8: [Case(SANDBOX, ("contract", "diff", "old.json", "new.json"))],
        9: [Case(SANDBOX, ("verify", f"{registry}/t/s:1", "--key", "k.pub"))],
        10: [Case(SANDBOX, ("keygen", "--output-prefix", "other"), env={"COSIGN_PASSWORD": ""})],
        11: [Case(SANDBOX, ("verify", f"{CLOSED}/t/s:1", "--key", "k.pub", "--offline", "signatures"))],
        12: [Case(SANDBOX, ("sbom", "notes", "-o", "sbom.json"))],
        13: [Case(SANDBOX, ("preflight", *launch), env={"TERMINAI_SANDBOX": "false"})],
        15: [Case(SANDBOX, ("audit", "verify", "--ledger", "tampered.jsonl"))],
        16: [Case(SANDBOX, ("release", "push"))],
        20: [Case(APTS, ("cleanup", "missing"))],
        21: [Case(APTS, ("cleanup", "notes", "--apply"))],
        22: [Case(APTS, ("memory", "verify", "notes"))],
        23: [Case(APTS, ("exec-audit", "binary"))],
        24: [Case(APTS, ("memory", "count", "missing.sqlite"))],
        # Fewer descriptors than the executor needs to start its zygote.
        26: [Case(APTS, ("exec",), stdin=b"print(1)\n", prefix=("prlimit", "--nofile=10"))],
        27: [Case(APTS, ("evolve", "approve", "nope", "--store", "store", "--approver", "me"))],
        130: [
            Case(APTS, ("exec", "--timeout", "60"), stdin=LOOP, signal_after=(signal.SIGINT, 2.0)),
            Case(SANDBOX, ("push", "layout", f"{_silent()}/t/s:1"), signal_after=(signal.SIGINT, 1.5)),
        ],
        141: [
            Case(APTS, ("completion", "bash"), closed_stdout=True),
            Case(SANDBOX, ("completion", "bash"), closed_stdout=True),
            Case(SANDBOX, ("--help",), closed_stdout=True),
        ],
        143: [
            Case(APTS, ("exec", "--timeout", "60"), stdin=LOOP, signal_after=(signal.SIGTERM, 2.0)),
            Case(SANDBOX, ("push", "layout", f"{_silent()}/t/s:1"), signal_after=(signal.SIGTERM, 1.5)),
            # A session start (the launch kernel's path) waiting on the engine's resolve: the real engine.
            Case(
                SANDBOX,
                ("run", "--key", "k.pub", "--image", f"{_silent()}/t/s:1", "--", "true"),
                env={"TERMINAI_SANDBOX": "docker"},
                signal_after=(signal.SIGTERM, 2.0),
            ),
        ],
    }


_SILENT: list[socket.socket] = []


def _silent() -> str:
    """A port that accepts connections and never answers (kept open for the module's life)."""
    if not _SILENT:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        _SILENT.append(sock)
    return f"127.0.0.1:{_SILENT[0].getsockname()[1]}"


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from terminai_sandbox.secret import Secret
    from terminai_sandbox.signing.formats import keys

    tmp = Path(tmp_path_factory.mktemp("exit-codes"))
    key = keys.generate()
    (tmp / "k.key").write_bytes(keys.encrypt_private(key, Secret(PASSWORD.encode())))
    (tmp / "k.pub").write_bytes(keys.public_pem(key))
    (tmp / "notes").mkdir()
    (tmp / "bin-empty").mkdir()
    (tmp / "binary").write_bytes(bytes(range(256)) * 4)
    (tmp / "tampered.jsonl").write_text('{"event": "exit"}\nnot a record\n')
    old = json.loads((REPO / "contracts" / "t-apts" / "contract.json").read_text())
    (tmp / "old.json").write_text(json.dumps(old))
    new = {**old, "modules": dict(list(old["modules"].items())[1:])}  # a module removed, no major bump
    (tmp / "new.json").write_text(json.dumps(new))
    (tmp / "img").mkdir()
    for name in ("image.toml", "debian.lock", "layers.lock"):
        (tmp / "img" / name).write_bytes((REPO / "images" / "sandbox" / name).read_bytes())
    (tmp / "img" / "requirements.lock").write_text("garbage\n")
    (tmp / "signatures").mkdir()
    (tmp / "signatures" / "signatures.json").write_text("[]")
    write_layout(tmp / "signatures" / "oci", config=b"{}", layers=[b"layer"])
    write_layout(tmp / "layout", config=b"{}", layers=[b"layer"])
    (tmp / "code.py").write_text("x = 1\n")
    proposed = subprocess.run(
        [APTS, "evolve", "propose", "code.py", "--store", "store"], cwd=tmp, capture_output=True, check=False
    )
    assert proposed.returncode == 0, proposed.stderr
    return tmp


def _run(place: Path, case: Case) -> subprocess.CompletedProcess[str]:
    home = place.with_name(place.name + "-home")  # outside the working directory, as a user's is
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "LC_ALL": "C.UTF-8", "COSIGN_PASSWORD": PASSWORD}
    env.update(case.env)
    if env.get("COSIGN_PASSWORD") == "":
        del env["COSIGN_PASSWORD"]
    if env["PATH"] == "bin-empty":
        env["PATH"] = str(place / "bin-empty")
    stdout: int = subprocess.PIPE
    reader = writer = -1
    if case.closed_stdout:
        reader, writer = os.pipe()
        os.close(reader)  # the reader went away before anything was written
        stdout = writer
    proc = subprocess.Popen(
        [*case.prefix, case.tool, *case.args],
        cwd=place,
        env=env,
        stdin=subprocess.PIPE,
        stdout=stdout,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    if writer >= 0:
        os.close(writer)
    assert proc.stdin is not None
    proc.stdin.write(case.stdin)
    proc.stdin.close()
    proc.stdin = None
    if case.signal_after is not None:
        sig, after = case.signal_after
        time.sleep(after)
        proc.send_signal(sig)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise AssertionError(f"{case.args} hung") from None
    return subprocess.CompletedProcess(
        proc.args, proc.returncode, (out or b"").decode("utf-8", "replace"), err.decode("utf-8", "replace")
    )


def test_the_page_lists_the_shared_and_both_tools_families() -> None:
    codes = documented_codes()
    assert {0, 1, 2, 3, 130, 141, 143} <= set(codes)
    assert set(range(4, 18)) <= set(codes) and set(range(20, 29)) <= set(codes)


def test_every_documented_code_has_a_case_or_a_reason() -> None:
    covered = set(cases("registry"))
    documented = set(documented_codes())
    assert covered.isdisjoint(NOT_RETURNED)
    assert documented == covered | set(NOT_RETURNED), documented ^ (covered | set(NOT_RETURNED))


def test_no_command_raises_the_classes_of_the_codes_marked_not_returned() -> None:
    sources = [p for root in ("terminai-apts", "terminai-sandbox") for p in (REPO / "packages" / root).rglob("*.py")]
    raised = {
        name
        for path in sources
        for name in re.findall(
            r"raise (ReadOnlyViolation|ReproducibilityError|EvolutionError)\(",
            path.read_text(encoding="utf-8"),
        )
        if "terminai-sandbox" in str(path) or name != "EvolutionError"  # the toolset's EvolutionError is 27
    }
    # ReproducibilityError (7) is raised by the build when two builds differ: NOT_RETURNED says where it is tested.
    # ReadOnlyViolation (25) is raised by a shard for a statement that writes, which no command sends.
    assert raised <= {"ReproducibilityError", "ReadOnlyViolation"}, raised


# The signal cases wait for the command to be at work before the signal: seconds each.
_CODES = [
    pytest.param(code, marks=[pytest.mark.slow] if code in (130, 143) else [], id=f"exit-{code}")
    for code in sorted(set(documented_codes()) - set(NOT_RETURNED))
]


@pytest.mark.parametrize("code", _CODES)
def test_each_documented_code_is_the_one_returned(place: Path, failing_registry: str, code: int) -> None:
    for case in cases(failing_registry)[code]:
        done = _run(place, case)
        shown = f"{case.tool} {' '.join(case.args)}: exit {done.returncode}\n{done.stderr[-800:]}"
        assert done.returncode == code, shown
        assert "Traceback" not in done.stderr + done.stdout, shown
        if code in (0, 141):
            assert not done.stderr.strip() or code == 0, shown
            continue
        if case.hint:
            lines = done.stderr.splitlines()
            errors = [i for i, line in enumerate(lines) if line.startswith("error: ")]
            assert len(errors) == 1, shown
            assert lines[errors[0] + 1].startswith("  hint: "), shown
        if "--json" in case.args:
            assert json.loads(done.stdout)["error"]["exit_code"] == code
