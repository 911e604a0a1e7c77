"""The documented examples (through the image's own ``terminai-apts exec`` CLI) and the
agent-program corpus (through its executor), inside the built image, as the image user,
read-only root, no capabilities, no network, against a real memory index."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from terminai_apts.memory import store
from terminai_apts.memory.cli import import_archive
from terminai_sandbox.assemble import BuildResult, repo_root
from terminai_sandbox.engine.client import DockerApi

from tests.corpus import memory_fixture, seed_written
from tests.corpus.seed_written import write_archive
from tests.unit.executor.test_agent_corpus import STRICT_REFUSED
from tests.unit.executor.test_everyday_python import PROGRAMS as EVERYDAY
from tests.unit.executor.test_seed_examples import EXAMPLES, expected

# Runs in the image's interpreter: only the image's own packages are importable.
DRIVER = """
import json, pathlib, subprocess
from terminai_apts.executor import ExecutorSession, SandboxConfig, thermal_spec
DB = "/data/memory.db"
out = {"examples": {}, "corpus": {}}
for path in sorted(pathlib.Path("/examples").glob("*.py")):
    for mode in ("standard", "high", "strict"):
        done = subprocess.run(["terminai-apts", "exec", "--db", DB, "--json", "--mode", mode],
                              input=path.read_text(), capture_output=True, text=True, timeout=120)
        out["examples"][path.stem + ":" + mode] = json.loads(done.stdout)
for mode in ("standard", "high", "strict"):
    session, rows = None, {}
    for path in sorted(pathlib.Path("/corpus").glob("*.py")):
        if session is None or session.closed:
            session = ExecutorSession(SandboxConfig(timeout_seconds=10, security_mode=mode), api=thermal_spec(DB))
        r = session.run(path.read_text())
        rows[path.name] = [r.success, r.refused_by, r.error]
    session.close()
    out["corpus"][mode] = rows
# programs written from the seeds alone, over the index of the seed-shaped archive
out["seed_written"] = {}
def seed_session(mode):
    return ExecutorSession(SandboxConfig(timeout_seconds=20, security_mode=mode), api=thermal_spec("/seed/memory.db"))
for mode in ("standard", "high"):
    session = seed_session(mode)
    out["seed_written"][mode] = {}
    for path in sorted(pathlib.Path("/seed/programs").glob("*.py")):
        if session.closed:
            session = seed_session(mode)
        r = session.run(path.read_text())
        out["seed_written"][mode][path.stem] = [r.success, r.stdout, r.error]
    session.close()
# everyday Python: the image's own CPython is the oracle
out["everyday"] = {}
for path in sorted(pathlib.Path("/everyday").glob("*.py")):
    plain = subprocess.run(["python3", "-I", "-c", path.read_text()],
                           capture_output=True, text=True, timeout=60, cwd="/tmp")
    for mode in ("standard", "high"):
        r = ExecutorSession(SandboxConfig(timeout_seconds=20, security_mode=mode)).run(path.read_text())
        out["everyday"][path.stem + ":" + mode] = [plain.returncode, plain.stdout, r.success, r.stdout, r.error]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def mounted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    data = memory_fixture.build(tmp_path_factory.mktemp("image-memory")).parent
    examples = tmp_path_factory.mktemp("image-examples")
    for name, code in EXAMPLES.items():
        (examples / f"{name}.py").write_text(code)
        (examples / f"{name}.py").chmod(0o644)
    examples.chmod(0o755)
    seed = tmp_path_factory.mktemp("image-seed-written")
    archive = write_archive(seed / "archive.db")
    store.build(seed / "memory.db", import_archive(archive))
    shutil.copytree(seed_written.ROOT / "programs", seed / "programs")
    everyday = tmp_path_factory.mktemp("image-everyday")
    for number, code in enumerate(EVERYDAY.values()):
        (everyday / f"{number:02d}.py").write_text(code)
    for path in [seed, everyday, *seed.rglob("*"), *everyday.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)  # read by the image's unprivileged user
    return {"data": data, "examples": examples, "seed": seed, "everyday": everyday}


def test_examples_and_corpus_inside_the_image(
    engine: DockerApi, built_image: BuildResult, mounted: dict[str, Path]
) -> None:
    corpus = repo_root() / "tests" / "corpus" / "programs"
    status, stdout, stderr = engine.run(
        built_image.config_digest,
        ["python3", "-c", DRIVER],
        network_mode="none",
        read_only=True,
        tmpfs={"/tmp": "rw,size=64m"},
        cap_drop=["ALL"],
        security_opt=["no-new-privileges"],
        volumes={
            str(mounted["data"]): {"bind": "/data", "mode": "ro"},
            str(mounted["examples"]): {"bind": "/examples", "mode": "ro"},
            str(corpus): {"bind": "/corpus", "mode": "ro"},
            str(mounted["seed"]): {"bind": "/seed", "mode": "ro"},
            str(mounted["everyday"]): {"bind": "/everyday", "mode": "ro"},
        },
        timeout=600,
    )
    assert status == 0, stderr.decode(errors="replace")[-3000:]
    report = json.loads(stdout.decode().splitlines()[-1])
    for key, result in report["examples"].items():
        name, mode = key.split(":")
        if mode == "strict" and "import " in EXAMPLES[name]:
            assert result["refused_by"] == "L2-validate", key
            continue
        assert result["success"], (key, result["error"])
        assert result["stdout"] == expected(name), key
    assert len(report["examples"]) == 3 * len(EXAMPLES)
    programs = sorted(p.name for p in corpus.glob("*.py"))
    for mode in ("standard", "high"):
        failures = {k: v for k, v in report["corpus"][mode].items() if not v[0]}
        assert sorted(report["corpus"][mode]) == programs and not failures, (mode, failures)
    strict_refused = [k for k, v in report["corpus"]["strict"].items() if v[1] is not None]
    assert len(strict_refused) == STRICT_REFUSED
    # the seed-written corpus prints what the seed's own code prints (issue: on the host, in
    # the executor and in the image)
    for mode in ("standard", "high"):
        rows = report["seed_written"][mode]
        assert sorted(rows) == [p.stem for p in seed_written.PROGRAMS]
        wrong = {k: v[2] or v[1] for k, v in rows.items() if not v[0] or v[1] != seed_written.expected(Path(k))}
        assert not wrong, (mode, wrong)
    # everyday Python prints what the image's own interpreter prints
    assert len(report["everyday"]) == 2 * len(EVERYDAY)
    for key, (code, plain, success, stdout, error) in report["everyday"].items():
        assert code == 0 and success and stdout == plain, (key, error, stdout, plain)
