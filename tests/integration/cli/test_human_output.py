"""What ``terminai-apts`` prints for a person (no ``--json``), run through its console script.

* ``memory`` queries print readable records (id, date, title, tags, a snippet), not Python
  reprs, and a memory's text can never drive the terminal: the bytes printed are checked
  for control characters and bidirectional overrides directly, with no code of the renderer.
* ``exec --max-output N`` says on stderr when it cut the output; ``--json`` keeps the flag.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

APTS = str(Path(sys.executable).parent / "terminai-apts")
HOSTILE_TITLE = "deploy \x1b[2J\x1b]0;pwned\x07 done\rX \u202egnp.exe \x9b31m"
CONTENT = "First line of the deploy notes.\nSecond line\twith a tab.\n\x1b[31mred\x1b[0m end"


def _run(*args: str, stdin: str = "", cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [APTS, *args],
        check=False,
        input=stdin.encode(),
        capture_output=True,
        cwd=cwd,
        env={"PATH": os.environ["PATH"], "LC_ALL": "C.UTF-8", "HOME": str(cwd or Path.cwd())},
        timeout=120,
    )


@pytest.fixture()
def index(tmp_path: Path) -> Path:
    archive = tmp_path / "archive.sqlite"
    conn = sqlite3.connect(archive)
    conn.execute(
        "CREATE TABLE memories(id INTEGER PRIMARY KEY, date TEXT, title TEXT, content TEXT,"
        " summary TEXT, tags TEXT, source TEXT, confidence REAL)"
    )
    conn.executemany(
        "INSERT INTO memories VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (7, "2025-03-01", HOSTILE_TITLE, CONTENT, "", "ops,deploy", "notes", 0.5),
            (8, "2025-03-02", "GPU allocation", "deploy the gpu pool " * 30, "", "gpu", "wiki", 1.0),
        ],
    )
    conn.commit()
    conn.close()
    db = tmp_path / "m.sqlite"
    built = _run("memory", "index", str(db), "--archive", str(archive))
    assert built.returncode == 0, built.stderr
    return db


def _terminal_safe(out: bytes, *, lines: bool = True) -> str:
    """Strict UTF-8, and nothing a terminal acts on but newlines (and tabs in full content)."""
    text = out.decode("utf-8")  # strict: raises on anything that is not UTF-8
    allowed = {"\n", "\t"} if lines else {"\n"}
    for ch in text:
        if ch in allowed:
            continue
        category = unicodedata.category(ch)
        assert category not in ("Cc", "Cs"), f"control or surrogate {ch!r} printed"
        assert unicodedata.bidirectional(ch) not in ("RLO", "LRO", "RLE", "LRE", "PDF", "RLI", "LRI", "FSI", "PDI"), (
            f"bidirectional control {ch!r} printed"
        )
    return text


@pytest.mark.parametrize(
    "query",
    [
        ("search", "deploy"),
        ("search", "deploy", "--order", "relevance"),
        ("grep", "dep.oy"),
        ("find", "deploy"),
        ("filter",),
    ],
)
def test_query_results_print_records_not_reprs(index: Path, query: tuple[str, ...]) -> None:
    done = _run("memory", query[0], str(index), *query[1:])
    assert done.returncode == 0, done.stderr
    text = _terminal_safe(done.stdout, lines=False)
    assert "Hit(" not in text and "Results(" not in text and "Memory(" not in text, text
    assert text.startswith("2 matches\n"), text
    # Each match: id, date and title on one line, its tags and source, a one-line snippet.
    assert "\n8  2025-03-02  GPU allocation\n    tags: gpu; source: wiki\n    " in text, text
    assert "\n7  2025-03-01  deploy \\x1b[2J\\x1b]0;pwned\\x07 done\\rX \\u202egnp.exe \\x9b31m\n" in text, text
    # The snippet is one line and bounded.
    snippets = [line for line in text.splitlines() if line.startswith("    ") and "tags:" not in line]
    assert len(snippets) == 2 and all(len(s) <= 4 + 160 for s in snippets), snippets
    # Stable: the same query prints the same bytes.
    assert _run("memory", query[0], str(index), *query[1:]).stdout == done.stdout


def test_a_limited_query_says_there_are_more(index: Path) -> None:
    done = _run("memory", "search", str(index), "deploy", "--limit", "1")
    text = _terminal_safe(done.stdout, lines=False)
    assert text.startswith("2 matches, showing 1 (raise --limit to see more)\n"), text
    assert _run("memory", "search", str(index), "nothing-like-this").stdout == b"no matches\n"


def test_get_prints_every_field_and_the_content_as_written(index: Path) -> None:
    done = _run("memory", "get", str(index), "7")
    assert done.returncode == 0, done.stderr
    text = _terminal_safe(done.stdout)
    assert text == (
        "id:         7\n"
        "date:       2025-03-01\n"
        "title:      deploy \\x1b[2J\\x1b]0;pwned\\x07 done\\rX \\u202egnp.exe \\x9b31m\n"
        "tags:       ops, deploy\n"
        "source:     notes\n"
        "confidence: 0.5\n"
        "kind:       note\n"
        "tier:       archive\n"
        "\n"
        "First line of the deploy notes.\nSecond line\twith a tab.\n\\x1b[31mred\\x1b[0m end\n"
    ), text
    # --json still carries the text exactly as recorded.
    assert json.loads(_run("memory", "get", str(index), "7", "--json").stdout)["title"] == HOSTILE_TITLE


def test_summarize_and_count_print_plain_text(index: Path) -> None:
    summary = _terminal_safe(_run("memory", "summarize", str(index), "deploy").stdout, lines=False)
    assert summary.startswith("Found 2 memories for 'deploy':\n"), summary
    assert "\\x1b[2J" in summary
    assert _run("memory", "count", str(index), "deploy").stdout == b"2\n"


def test_exec_max_output_says_on_stderr_that_it_cut_the_output(tmp_path: Path) -> None:
    program = "print('x' * 100)\n"
    cut = _run("exec", "--max-output", "10", stdin=program, cwd=tmp_path)
    assert cut.returncode == 0, cut.stderr
    assert cut.stdout == b"x" * 10  # the output itself is what the program printed, cut
    notes = cut.stderr.decode().splitlines()
    assert notes == ["note: output truncated to the first 10 bytes (raise --max-output to see more)"], notes

    whole = _run("exec", "--max-output", "1000", stdin=program, cwd=tmp_path)
    assert whole.stdout == b"x" * 100 + b"\n" and whole.stderr == b""

    as_json = _run("exec", "--max-output", "10", "--json", stdin=program, cwd=tmp_path)
    result = json.loads(as_json.stdout)
    assert result["output_truncated"] is True and result["stdout"] == "x" * 10
    assert as_json.stderr == b""  # the flag is the notice under --json
