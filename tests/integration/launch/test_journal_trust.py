"""The journal's checkpoint and witness reach the session from the launcher's settings, not SANDBOX_ENV.

A journal is written on the host, checkpointed with the operator's key, then put back
whole to an earlier copy of itself (``.state.json`` and all): nothing inside it can tell.
A session started with ``TERMINAI_JOURNAL_CHECKPOINT`` set in the launcher's environment
refuses to read it (the journal's own reader, inside the container, exit 23); the same
session without it reads the rolled-back journal, so the refusal is the checkpoint's. The
witness directory is mounted writable and a write inside the session moves it forward.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from terminai_apts.memory.journal import MemoryJournal
from terminai_sandbox.assemble import BuildResult
from terminai_sandbox.engine.client import DockerApi

from tests.fixtures.registry import RegistryServer
from tests.integration.launch.test_launch import Site

pytestmark = pytest.mark.integration
READ = ("python3", "-m", "terminai_apts.cli", "memory", "journal", "read")


@pytest.fixture()
def site(registry: RegistryServer, tmp_path: Path, built_image: BuildResult) -> Site:
    os.chmod(tmp_path, 0o755)
    site = Site(registry, tmp_path)
    site.push(built_image.oci_layout.root, "0.1.0")
    return site


def _run(site: Site, project: Path, *command: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return site.cli("run", "--image", site.ref("0.1.0"), "--key", str(site.pub), "--", *command, cwd=project, env=env)


def _open_to_the_session(path: Path) -> None:
    """The session's user (10001 on a root host) reads the journal and writes its lock."""
    for p in [path, *path.rglob("*")]:
        p.chmod(0o777 if p.is_dir() else 0o666)


def test_a_session_with_a_checkpoint_refuses_a_rolled_back_journal(
    site: Site, engine: DockerApi, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    journal = project / "journal"
    j = MemoryJournal(journal)
    for n in range(3):
        j.write_decision(f"early decision {n}", "r", "o", "agent", True)
    earlier = tmp_path / "earlier"
    shutil.copytree(journal, earlier)
    for n in range(2):
        j.write_decision(f"later decision {n}", "r", "o", "agent", True)
    operator = tmp_path / "operator"
    operator.mkdir()
    key = operator / "checkpoint.key"
    key.write_bytes(os.urandom(32))
    checkpoint = operator / "journal.json"
    j.checkpoint(checkpoint, key.read_bytes())
    shutil.rmtree(journal)
    shutil.copytree(earlier, journal)  # the whole directory back to before the checkpoint
    _open_to_the_session(project)
    os.chmod(operator, 0o755)
    checkpoint.chmod(0o644)

    refused = _run(site, project, *READ, str(journal), env={"TERMINAI_JOURNAL_CHECKPOINT": str(checkpoint)})
    assert refused.returncode == 23, (refused.stdout, refused.stderr)
    assert f"rolled back: the checkpoint {'/run/terminai/journal/checkpoint.json'} saw 5 entries" in refused.stderr
    assert "Traceback" not in refused.stderr

    # The same session without the checkpoint reads the earlier journal: it cannot tell.
    served = _run(site, project, *READ, str(journal), "--json", env={})
    assert served.returncode == 0, served.stderr
    assert [d["decision"] for d in json.loads(served.stdout)["recent_decisions"]] == [
        f"early decision {n}" for n in range(3)
    ]

    # The checkpoint is read-only inside: the agent can neither lower nor remove it.
    tamper = _run(
        site,
        project,
        "sh",
        "-c",
        'C="$TERMINAI_JOURNAL_CHECKPOINT"; echo "{}" > "$C"; rm -f "$C"; echo "$C"',
        env={"TERMINAI_JOURNAL_CHECKPOINT": str(checkpoint)},
    )
    assert tamper.stdout.strip() == "/run/terminai/journal/checkpoint.json", tamper.stderr
    assert json.loads(checkpoint.read_bytes())["chains"]["decisions"][0] == 5


def test_the_witness_is_written_from_inside_the_session(site: Site, engine: DockerApi, tmp_path: Path) -> None:
    project = tmp_path / "project"
    journal = project / "journal"
    MemoryJournal(journal).write_decision("first", "r", "o", "agent", True)
    witness = tmp_path / "witness"
    witness.mkdir()
    _open_to_the_session(project)
    witness.chmod(0o777)
    decide = (
        *READ[:-1],
        "decide",
        str(journal),
        "--decision",
        "inside",
        "--by",
        "agent",
    )
    wrote = _run(site, project, *decide, env={"TERMINAI_JOURNAL_WITNESS": str(witness)})
    assert wrote.returncode == 0, wrote.stderr
    (record,) = witness.glob("*.json")
    assert json.loads(record.read_bytes())["chains"]["decisions"][0] == 2


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"SANDBOX_ENV": "TERMINAI_JOURNAL_CHECKPOINT=/etc/passwd"}, "TERMINAI_JOURNAL_CHECKPOINT"),
        ({"SANDBOX_ENV": "TERMINAI_JOURNAL_WITNESS=/tmp"}, "TERMINAI_JOURNAL_WITNESS"),
        ({"TERMINAI_JOURNAL_CHECKPOINT": "relative/journal.json"}, "is not an absolute path"),
        ({"TERMINAI_JOURNAL_CHECKPOINT": "/nonexistent/journal.json"}, "No such file"),
        ({"TERMINAI_JOURNAL_WITNESS": "/etc/passwd"}, "is not a directory"),
    ],
)
def test_journal_settings_are_checked_and_never_free_form(
    site: Site, tmp_path: Path, env: dict[str, str], named: str
) -> None:
    result = _run(site, site.project, "true", env=env)
    assert result.returncode == 3, (result.stdout, result.stderr)
    assert named in result.stderr and "Traceback" not in result.stderr
