"""The conventions of docs/EXIT_CODES.md on the cases a hostile environment found, through the
installed console scripts: a hint on every error, the path in every I/O error, what a file
is when it is not a database, an output encoding named as such, no "-1 matches", no
``-.key``, ``--json`` on every command (a bad command line included), the documented exit
codes, 141 and 143 in ``--help``.
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import socket
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from terminai_apts import cli as apts_cli
from terminai_sandbox.cli import main as sandbox_main

BIN = Path(sys.executable).parent
APTS = str(BIN / "terminai-apts")
SANDBOX = str(BIN / "terminai-sandbox")
REPO = Path(__file__).resolve().parents[3]
PASSWORD = "conventions"  # a throwaway key made for these tests


def run(
    tool: str, *args: str, cwd: Path, env: dict[str, str] | None = None, stdin: bytes = b""
) -> subprocess.CompletedProcess[str]:
    base = {"PATH": os.environ["PATH"], "HOME": str(cwd), "LC_ALL": "C.UTF-8", "COSIGN_PASSWORD": PASSWORD}
    done = subprocess.run(
        [tool, *args],
        cwd=cwd,
        env={**base, **(env or {})},
        input=stdin,
        capture_output=True,
        timeout=60,
        check=False,
    )
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")
    )


def one_error(done: subprocess.CompletedProcess[str]) -> str:
    """The one ``error:`` line, checked to be followed by a non-empty hint and no traceback."""
    lines = done.stderr.splitlines()
    errors = [i for i, line in enumerate(lines) if line.startswith("error: ")]
    shown = f"exit {done.returncode}\nstderr: {done.stderr[-800:]}\nstdout: {done.stdout[-300:]}"
    assert len(errors) == 1, shown
    assert "Traceback" not in done.stderr + done.stdout, shown
    at = errors[0]
    assert at + 1 < len(lines) and lines[at + 1].startswith("  hint: ") and lines[at + 1][8:].strip(), shown
    return lines[at]


@pytest.fixture()
def place(tmp_path: Path) -> Path:
    (tmp_path / "notes").mkdir()
    (tmp_path / "not-a-manifest.json").write_text("{}\n")
    (tmp_path / "tampered.jsonl").write_text('{"event": "exit"}\nnot a record\n')
    (tmp_path / "a-file").write_text("x\n")
    os.mkfifo(tmp_path / "fifo")
    arch = sqlite3.connect(tmp_path / "archive.sqlite")
    arch.execute(
        "CREATE TABLE memories(id INTEGER PRIMARY KEY, date TEXT, title TEXT, content TEXT,"
        " summary TEXT, tags TEXT, source TEXT, confidence REAL)"
    )
    rows = [(i, f"2024-01-{i:02d}", f"café {i}", f"content {i}", "", "a", "t", 1.0) for i in range(1, 6)]
    arch.executemany("INSERT INTO memories VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
    arch.commit()
    arch.close()
    return tmp_path


# ----------------------------------------------------------------------------- hints
def test_the_errors_the_report_named_without_a_hint_now_carry_one(place: Path) -> None:
    cases = [
        (SANDBOX, ("contract", "diff", "not-a-manifest.json", "not-a-manifest.json"), 3, {}),
        (SANDBOX, ("audit", "verify", "--ledger", "tampered.jsonl"), 15, {}),
        (SANDBOX, ("keygen", "--output-prefix", "k"), 10, {"COSIGN_PASSWORD": ""}),
    ]
    for tool, args, code, env in cases:
        environment = {**env}
        if environment.get("COSIGN_PASSWORD") == "":
            done = subprocess.run(
                [tool, *args],
                cwd=place,
                env={"PATH": os.environ["PATH"], "HOME": str(place)},
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
        else:
            done = run(tool, *args, cwd=place, env=environment)
        one_error(done)
        assert done.returncode == code, (args, done.stderr)


def test_lock_check_over_a_lock_that_is_not_json_has_a_hint(place: Path) -> None:
    spec = place / "img"
    spec.mkdir()
    for name in ("image.toml", "requirements.lock", "layers.lock"):
        (spec / name).write_bytes((REPO / "images" / "sandbox" / name).read_bytes())
    (spec / "debian.lock").write_text("garbage\n")
    done = run(SANDBOX, "lock", "--check", "--spec", str(spec / "image.toml"), cwd=place)
    assert "debian.lock" in one_error(done)
    assert done.returncode == 6


class _Lying(http.server.BaseHTTPRequestHandler):
    """A registry that fails every request with 500, or redirects a path to itself forever."""

    def do_GET(self) -> None:
        if "loop" in self.path:
            self.send_response(302)
            self.send_header("Location", self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(500)
        self.send_header("Content-Length", "5")
        self.end_headers()
        self.wfile.write(b"oops\n")

    def do_HEAD(self) -> None:
        self.do_GET()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def lying_registry() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Lying)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_registry_error_of_any_kind_has_a_hint(place: Path, lying_registry: str) -> None:
    keygen = run(SANDBOX, "keygen", "--output-prefix", "k", cwd=place)
    assert keygen.returncode == 0, keygen.stderr
    for repository in ("t/s", "loop/s"):
        done = run(SANDBOX, "verify", f"{lying_registry}/{repository}:1", "--key", "k.pub", cwd=place)
        one_error(done)
        assert done.returncode == 9, done.stderr


# ----------------------------------------------------------------------------- paths and what they are
def test_a_full_device_names_the_file_that_could_not_be_written(place: Path) -> None:
    # A 16 KiB tmpfs filled to the last block, in a private mount namespace: nothing on the machine changes.
    script = (
        "mount -t tmpfs -o size=16k tmpfs notes && (cat /dev/zero > notes/.filler) 2>/dev/null;"
        ' "$@"; rc=$?; rm -f notes/.filler; ls -A notes > listing; exit $rc'
    )
    done = subprocess.run(
        ["unshare", "-rm", "sh", "-c", script, "sh", SANDBOX, "keygen", "--output-prefix", "notes/release"],
        cwd=place,
        env={"PATH": os.environ["PATH"], "HOME": str(place), "COSIGN_PASSWORD": PASSWORD},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    line = one_error(subprocess.CompletedProcess(done.args, done.returncode, done.stdout, done.stderr))
    assert done.returncode == 3
    assert "notes/release.key" in line and "a file" not in line, line
    assert (place / "listing").read_text().split() == []  # nothing half-written


@pytest.mark.parametrize(
    ("target", "words"),
    [("fifo", "is a FIFO"), ("/dev/zero", "is a character device"), ("missing.sqlite", "does not exist")],
)
def test_a_database_that_is_no_file_says_what_it_is(place: Path, target: str, words: str) -> None:
    for args in (("memory", "count", target), ("memory", "search", target, "x")):
        done = run(APTS, *args, cwd=place)
        line = one_error(done)
        assert words in line, line
        assert done.returncode == 24
    archive = run(APTS, "memory", "index", "idx.sqlite", "--archive", target, cwd=place)
    assert words in one_error(archive)
    assert not (place / "idx.sqlite").exists()


def test_an_output_encoding_that_cannot_hold_the_result_is_named_as_such(place: Path) -> None:
    built = run(APTS, "memory", "index", "idx.sqlite", "--archive", "archive.sqlite", cwd=place)
    assert built.returncode == 0, built.stderr
    ascii_out = {"PYTHONIOENCODING": "ascii"}
    # (exec writes its result's bytes itself, as UTF-8 whatever the locale: nothing to refuse there.)
    for tool, args, stdin in ((APTS, ("memory", "search", "idx.sqlite", "café"), b""),):
        done = run(tool, *args, cwd=place, env=ascii_out, stdin=stdin)
        line = one_error(done)
        assert "'ascii' encoding" in line and "not valid UTF-8" not in line, line
        assert done.returncode == 3
    contract = json.loads((REPO / "contracts" / "t-apts" / "contract.json").read_text())
    contract["description"] = "café"
    (place / "c.json").write_text(json.dumps(contract))
    diff = run(SANDBOX, "contract", "diff", "c.json", "c.json", "--json", cwd=place, env=ascii_out)
    assert diff.returncode == 0, diff.stderr  # JSON is ASCII: nothing to refuse


def test_a_result_whose_total_was_not_counted_never_says_minus_one(place: Path) -> None:
    built = run(APTS, "memory", "index", "idx.sqlite", "--archive", "archive.sqlite", cwd=place)
    assert built.returncode == 0, built.stderr
    done = run(APTS, "memory", "grep", "idx.sqlite", "caf", "--limit", "1", cwd=place)
    assert done.returncode == 0, done.stderr
    assert "-1" not in done.stdout and "more not counted" in done.stdout, done.stdout


@pytest.mark.parametrize("prefix", ["-", "", "notes/"])
def test_keygen_never_writes_a_key_named_after_stdout(place: Path, prefix: str) -> None:
    before = sorted(os.listdir(place))
    done = run(SANDBOX, "keygen", "--output-prefix", prefix, cwd=place)
    one_error(done)
    # '' and '-' are malformed (2, refused while parsing); a directory names no file (3).
    assert done.returncode == (3 if prefix.endswith("/") else 2), done.stderr
    assert sorted(os.listdir(place)) == before and not (place / "-.key").exists()


# ----------------------------------------------------------------------------- exit codes the report found wrong
def test_the_exit_codes_the_report_found_wrong_are_the_documented_ones(place: Path) -> None:
    cases = [
        (APTS, ("cleanup", "notes", "--plan", "garbage", "--apply", "--approved-by", "t"), {}, 3),
        (APTS, ("cleanup", "notes", "--plan", "a-file", "--apply", "--approved-by", "t"), {}, 3),
        (SANDBOX, ("audit", "verify", "--ledger", "missing"), {}, 3),
        (SANDBOX, ("audit", "verify"), {"XDG_STATE_HOME": str(place / "a-file")}, 3),
        (SANDBOX, ("push", "missing", "127.0.0.1:1/t/s:1"), {}, 3),
        (SANDBOX, ("sbom", "a-file", "-o", "s.json"), {}, 3),
    ]
    for tool, args, env, code in cases:
        done = run(tool, *args, cwd=place, env=env)
        one_error(done)
        assert done.returncode == code, (args, done.returncode, done.stderr)
    # A missing argument stays a usage error.
    assert run(SANDBOX, "sbom", cwd=place).returncode == 2


@pytest.mark.parametrize("tool", [APTS, SANDBOX])
def test_help_lists_every_shared_exit_code(place: Path, tool: str) -> None:
    done = run(tool, "--help", cwd=place)
    assert done.returncode == 0
    epilog = done.stdout[done.stdout.index("xit codes") :]
    for code in ("130", "141", "143"):
        assert code in epilog, (code, epilog)


# ----------------------------------------------------------------------------- --json everywhere
# Commands whose output is text by nature (a help page, a shell script).
TEXT_ONLY = {"help", "completion"}


def _click_leaves(group: click.Group, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        if isinstance(command, click.Group):
            yield from _click_leaves(command, (*path, name))
        else:
            yield (*path, name), command


def _argparse_leaves() -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    for path, parser in apts_cli._parsers(apts_cli.build_parser()):
        if path and not any(isinstance(a, argparse._SubParsersAction) for a in parser._actions):
            yield tuple(path), parser


def test_every_command_of_both_tools_takes_json() -> None:
    missing = [
        f"terminai-sandbox {' '.join(path)}"
        for path, command in _click_leaves(sandbox_main, ())
        if path[0] not in TEXT_ONLY and not any("--json" in p.opts for p in command.params)
    ]
    missing += [
        f"terminai-apts {' '.join(path)}"
        for path, parser in _argparse_leaves()
        if path[0] not in TEXT_ONLY | {"cleanup"} and not any("--json" in a.option_strings for a in parser._actions)
    ]
    from terminai_apts.action import cleanup

    if not any("--json" in a.option_strings for a in cleanup.build_parser()._actions):
        missing.append("terminai-apts cleanup")
    assert not missing, missing
    assert len(list(_click_leaves(sandbox_main, ()))) > 20  # the walk saw the tree


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        (SANDBOX, ("verify", "--json")),  # a missing argument
        (SANDBOX, ("push", "--json", "--chunk-size", "-5", "x", "127.0.0.1:1/t/s:1")),  # a number out of range
        (SANDBOX, ("sign", "--json", "--no-such-option")),
        (SANDBOX, ("audit", "verify", "--json", "--ledger", "missing")),  # a refused path: 3
        (SANDBOX, ("run", "--json", "--no-such-option")),  # the launch kernel's own parser
        (APTS, ("memory", "search", "--json")),
        (APTS, ("exec", "--json", "--timeout", "nan")),
        (APTS, ("evolve", "status", "--json", "--nope")),
        (APTS, ("cleanup", "--json")),
        (APTS, ("version", "--json", "extra")),
    ],
)
def test_with_json_a_bad_command_line_is_the_json_error_object_too(
    place: Path, tool: str, args: tuple[str, ...]
) -> None:
    done = run(tool, *args, cwd=place)
    line = one_error(done)
    body = json.loads(done.stdout)
    error = body["error"] if isinstance(body["error"], dict) else body  # exec keeps its result's shape
    assert body["ok"] is False and error["exit_code"] == done.returncode in (2, 3), body
    assert error["hint"] and (error["message"] if isinstance(body["error"], dict) else body["error"]) in line


def test_json_results_of_the_commands_that_had_none(place: Path) -> None:
    keygen = run(SANDBOX, "keygen", "--output-prefix", "k", "--json", cwd=place)
    record = json.loads(keygen.stdout)
    assert keygen.returncode == 0 and record["ok"] is True and record["private_key"] == "k.key"
    assert record["key_id"].startswith("sha256:")
    for tool in (APTS, SANDBOX):
        version = json.loads(run(tool, "version", "--json", cwd=place).stdout)
        assert version["ok"] is True and version["version"]
    audit = json.loads(run(SANDBOX, "audit", "verify", "--json", cwd=place).stdout)
    assert audit == {"ok": True, "ledger": audit["ledger"], "records": 0}


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("command", ["sign", "push", "attest"])
def test_sign_push_and_attest_report_a_failure_as_json(place: Path, command: str) -> None:
    from tests.fixtures.oci import write_layout

    write_layout(place / "layout", config=b"{}", layers=[b"layer"])
    assert run(SANDBOX, "keygen", "--output-prefix", "k", cwd=place).returncode == 0
    (place / "predicate.json").write_text("{}")
    ref = f"127.0.0.1:{_closed_port()}/t/s:1"
    args = {
        "sign": ("sign", ref, "--key", "k.key"),
        "push": ("push", "layout", ref),
        "attest": ("attest", ref, "--predicate", "predicate.json", "--key", "k.key"),
    }[command]
    done = run(SANDBOX, *args, "--json", cwd=place)
    one_error(done)
    body = json.loads(done.stdout)
    assert done.returncode == 9 and body["ok"] is False and body["error"]["exit_code"] == 9, done.stdout
