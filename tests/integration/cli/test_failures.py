"""Every command driven into its failure conditions, through the real console script.

Each row runs ``terminai-sandbox`` as a subprocess and checks the exit code (the error
class's, documented in ``--help``), the first line of the message, and that no traceback
was printed. "No engine" is a DOCKER_HOST pointing at a closed loopback port or at a unix
socket path where nothing listens; "unreachable registry" is a closed loopback port;
"missing tool" is a PATH without it.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from terminai_sandbox.assemble import BuildResult, repo_root
from terminai_sandbox.engine.client import DockerApi
from terminai_sandbox.signing.formats import keys

from tests.fixtures.oci import write_layout

CLI = str(Path(sys.executable).with_name("terminai-sandbox"))
DIGEST = "sha256:" + "f" * 64
PASSWORD = "failure-matrix"  # a throwaway key made for these tests


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class Case:
    args: tuple[str, ...]
    code: int
    message: str  # the start of the error line after "error: " (or of a usage error)
    env: dict[str, str] = field(default_factory=dict)
    unset: tuple[str, ...] = ()


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A working directory outside the checkout with a key pair, files good and bad."""
    tmp = Path(tmp_path_factory.mktemp("failures"))
    key = keys.generate()
    from terminai_sandbox.secret import Secret

    (tmp / "cosign.key").write_bytes(keys.encrypt_private(key, Secret(PASSWORD.encode())))
    (tmp / "cosign.pub").write_bytes(keys.public_pem(key))
    (tmp / "not-json").write_text("this is not JSON\n")
    (tmp / "predicate.json").write_text("{}\n")
    (tmp / "empty").mkdir()
    ledger = tmp / "tampered.jsonl"
    ledger.write_text('{"event": "exit"}\nnot a record\n')
    (tmp / "bin").mkdir()  # a PATH with no tools at all
    return tmp


def cases(tmp: Path, layout: Path) -> dict[str, Case]:
    closed = f"127.0.0.1:{_closed_port()}"
    no_tcp_engine = {"DOCKER_HOST": f"tcp://{closed}"}
    no_unix_engine = {"DOCKER_HOST": f"unix://{tmp}/no-engine.sock"}
    unreachable = f"{closed}/terminai/sandbox:0.1.0"
    spec = str(repo_root() / "images" / "sandbox" / "image.toml")
    launch = ("--image", unreachable, "--key", "cosign.pub")
    return {
        # engine
        "engine status, no engine (tcp)": Case(
            ("engine", "status"), 4, "the container engine at tcp://", no_tcp_engine
        ),
        "engine status, no engine (unix)": Case(
            ("engine", "status"), 4, "the container engine is not running", no_unix_engine
        ),
        # build and lock
        "build, missing spec": Case(
            ("build", "--spec", "missing.toml"), 3, "the image spec missing.toml does not exist"
        ),
        "build, no engine": Case(("build", "--output", "out"), 4, "the container engine at tcp://", no_tcp_engine),
        "lock, missing tool": Case(
            ("lock", "--spec", spec), 5, "mmdebstrap is not installed", {"PATH": str(tmp / "bin")}
        ),
        # contracts
        "contracts, no engine": Case(("contracts", "terminai/sandbox:0.1.0"), 4, "the container engine", no_tcp_engine),
        "contracts, bad reference": Case(("contracts", "Bad::Ref"), 3, "the image 'Bad::Ref'"),
        "contracts, image not local (id)": Case(("contracts", DIGEST), 3, f"no image with id {DIGEST}"),
        "contracts, unreachable registry": Case(
            ("contracts", unreachable), 9, f"the engine could not resolve {unreachable}"
        ),
        "contracts, unreachable registry by digest": Case(
            ("contracts", f"{closed}/terminai/sandbox@{DIGEST}"),
            9,
            f"pulling {closed}/terminai/sandbox@{DIGEST} failed",
        ),
        "contract diff, missing file": Case(
            ("contract", "diff", "missing.json", "other.json"), 3, "cannot read manifest"
        ),
        "contract diff, not JSON": Case(
            ("contract", "diff", "not-json", "not-json"), 3, "manifest 'not-json' is not valid"
        ),
        # supply chain
        "keygen, would overwrite": Case(("keygen",), 3, "cosign.key or cosign.pub already exists"),
        "keygen, no password and no terminal": Case(
            ("keygen", "--output-prefix", "other"), 10, "no password: set COSIGN_PASSWORD", unset=("COSIGN_PASSWORD",)
        ),
        "push, missing layout": Case(("push", "absent", unreachable), 3, "Invalid value for 'LAYOUT'"),
        "push, not a layout": Case(("push", "empty", unreachable), 3, "empty is not an OCI image layout"),
        "push, bad reference": Case(
            ("push", str(layout), "Bad Ref"), 3, "image reference 'Bad Ref' contains white space"
        ),
        "push, unreachable registry": Case(("push", str(layout), unreachable), 9, f"registry {closed} is unreachable"),
        "sign, unreachable registry": Case(("sign", unreachable, "--key", "cosign.key"), 9, f"registry {closed}"),
        "sign, wrong password": Case(
            ("sign", f"{unreachable}@{DIGEST}", "--key", "cosign.key"),
            10,
            "wrong password for the private key",
            {"COSIGN_PASSWORD": "wrong"},
        ),
        "verify, unreachable registry": Case(("verify", unreachable, "--key", "cosign.pub"), 9, f"registry {closed}"),
        "verify, missing key": Case(("verify", unreachable, "--key", "absent.pub"), 3, "cannot read public key"),
        "verify, no policy": Case(("verify", unreachable), 3, "no verification policy"),
        "verify, bad reference": Case(("verify", "Bad::Ref", "--key", "cosign.pub"), 3, "image reference 'Bad::Ref'"),
        "kube, unreachable registry": Case(("kube", unreachable, "--key", "cosign.pub"), 9, f"registry {closed}"),
        "kube, no policy": Case(("kube", unreachable), 3, "no verification policy"),
        "kube, bad name": Case(
            ("kube", unreachable, "--key", "cosign.pub", "--name", "Bad_Name"),
            3,
            "--name 'Bad_Name' is not a Kubernetes",
        ),
        "kube, no tag or digest": Case(
            ("kube", unreachable.rsplit(":", 1)[0], "--key", "cosign.pub"), 3, "has neither tag nor digest"
        ),
        "sbom, missing layout": Case(("sbom", "absent", "-o", "out.json"), 3, "Invalid value for 'LAYOUT'"),
        "sbom, not a layout": Case(("sbom", "empty", "-o", "out.json"), 12, "empty is not an OCI image layout"),
        "provenance, missing layout": Case(("provenance", "absent", "-o", "p.json"), 3, "Invalid value for 'LAYOUT'"),
        "provenance, not a layout": Case(
            ("provenance", "empty", "-o", "p.json"), 12, "empty is not an OCI image layout"
        ),
        "attest, not JSON": Case(
            ("attest", f"{unreachable}@{DIGEST}", "--predicate", "not-json", "--key", "cosign.key"),
            3,
            "predicate not-json is not JSON",
        ),
        "attest, unreachable registry": Case(
            ("attest", unreachable, "--predicate", "predicate.json", "--key", "cosign.key"), 9, f"registry {closed}"
        ),
        "release, wrong password": Case(
            (
                "release",
                "--push",
                f"{closed}/terminai/sandbox",
                "--key",
                "cosign.key",
                "--image-dir",
                str(repo_root() / "images" / "sandbox"),
            ),
            10,
            "wrong password for the private key",
            {"COSIGN_PASSWORD": "wrong"},
        ),
        "release, outside a checkout": Case(
            ("release", "--push", f"{closed}/terminai/sandbox", "--key", "cosign.key"),
            3,
            "no image spec at images/sandbox",
        ),
        "release step, nothing built": Case(("release", "push"), 16, "no release state in dist/"),
        # launcher
        "preflight, no engine": Case(("preflight", *launch), 4, "preflight step 1 (engine) refused", no_unix_engine),
        "preflight, bad reference": Case(
            ("preflight", "--image", "Bad Ref"), 3, "--image 'Bad Ref' contains white space"
        ),
        "preflight, unreachable registry": Case(("preflight", *launch), 9, "preflight step 2 (resolve digest) refused"),
        "preflight --deep, unreachable registry": Case(
            ("preflight", "--deep", *launch), 9, "preflight step 2 (resolve digest) refused"
        ),
        "run, no engine": Case(("run", *launch, "--", "true"), 4, "preflight step 1 (engine) refused", no_tcp_engine),
        "run, bad reference": Case(("run", "--image", "Bad Ref", "--", "true"), 3, "--image 'Bad Ref' contains"),
        "run, unreachable registry": Case(
            ("run", *launch, "--", "true"), 9, "preflight step 2 (resolve digest) refused"
        ),
        "run, image not local, registry unreachable": Case(
            ("run", "--image", f"{unreachable}@{DIGEST}", "--key", "cosign.pub", "--", "true"),
            11,
            "preflight step 3 (signature) refused: cannot verify",  # verified before anything is pulled
        ),
        "audit verify, missing ledger": Case(("audit", "verify", "--ledger", "absent.jsonl"), 3, "Invalid value"),
        "completion, unknown shell": Case(("completion", "tcsh"), 2, "Invalid value for 'SHELL'"),
        "help, unknown command": Case(("help", "nope"), 2, "no command 'nope'"),
        "audit verify, broken ledger": Case(("audit", "verify", "--ledger", "tampered.jsonl"), 15, "tampered.jsonl"),
    }


def _run(tmp: Path, case: Case) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp.with_name(tmp.name + "-home")),  # outside the working directory, as a user's is
        "TERMINAI_SANDBOX": "docker",
        "COSIGN_PASSWORD": PASSWORD,
        **case.env,
    }
    for name in case.unset:
        env.pop(name)
    return subprocess.run(
        [CLI, *case.args],
        cwd=tmp,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_every_command_fails_with_its_error_class_message_and_exit_code(
    place: Path, engine: DockerApi, built_image: BuildResult
) -> None:
    table = cases(place, built_image.oci_layout.root)
    failures = []
    for name, case in table.items():
        done = _run(place, case)
        lines = [line for line in done.stderr.splitlines() if not line.startswith("  [")]
        error_lines = [line for line in lines if line.startswith(("error: ", "Error: "))]
        problems = []
        if done.returncode != case.code:
            problems.append(f"exit {done.returncode}, expected {case.code}")
        if "Traceback" in done.stderr or "Traceback" in done.stdout:
            problems.append("printed a traceback")
        if len(error_lines) != 1 or case.message not in error_lines[0]:
            problems.append(f"error line {error_lines!r} does not carry {case.message!r}")
        if problems:
            failures.append(f"{name}: {'; '.join(problems)}\n{done.stderr[-800:]}")
    assert not failures, "\n\n".join(failures)
    # Every command of the CLI appears in the table, so a new command needs its failure rows.
    program = "import json; from terminai_sandbox.cli import main; print(json.dumps(main.list_commands(None)))"
    listed = json.loads(
        subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True).stdout
    )
    covered = {case.args[0] for case in table.values()} | {"version"}  # version cannot fail
    assert set(listed) <= covered, set(listed) - covered


def test_an_unforeseen_failure_is_one_line_and_a_hint_and_debug_adds_the_traceback(place: Path) -> None:
    # A well-formed layout (every digest matches) whose layer is not gzip: no check foresees
    # it, so the SBOM's tar reader fails and the console's catch-all reports it.
    broken = place / "broken-layout"
    shutil.rmtree(broken, ignore_errors=True)
    write_layout(broken, config=b"{}", layers=[b"not a gzip stream"])
    case = Case(("sbom", "broken-layout", "-o", "out.json"), 1, "unexpected failure: ")
    done = _run(place, case)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 2 and lines[0].startswith("error: unexpected failure: BadGzipFile: "), lines
    assert lines[1].startswith("  hint: rerun with 'terminai-sandbox --debug ...'")
    debug = _run(place, Case(("--debug", *case.args), 1, ""))
    assert debug.returncode == 1
    assert "Traceback (most recent call last)" in debug.stderr
    assert debug.stderr.splitlines()[-2].startswith("error: unexpected failure: BadGzipFile: ")
