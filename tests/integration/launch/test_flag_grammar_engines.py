"""The engines' CLIs themselves read SANDBOX_FLAGS' words as the launcher's parser does.

For each generated spelling, ``docker create`` and ``podman create`` (the real CLIs, their
real pflag parsers; no container starts) build a container from the words, and its
inspect document is compared with what :func:`terminai_sandbox.launch.flags.parse` said
the words mean: every flag the parser saw shows in the container, and no flag the parser
did not see does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from terminai_sandbox.launch import flags

from tests.fixtures.empty_image import imported
from tests.unit.launch.test_flags import spellings

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# A tag of this process's own: the rows of this file may run in several xdist workers at once,
# and one worker's clean-up must not remove the image another is creating containers from.
IMAGE = f"localhost/terminai-test/empty:flag-grammar-{os.getpid()}"
# What the engine adds to every container's environment (podman: TERM, container, HOSTNAME).
_ENGINE_ENV = ("PATH", "TERM", "container", "HOSTNAME")


def _true(value: str | None) -> bool:
    return value is None or value in ("1", "t", "T", "TRUE", "true", "True")


def _last(values: list[str | None], default: Any) -> Any:
    return values[-1] if values else default


def _bind(spec: str) -> str:
    return ":".join(spec.split(":")[:2])  # source:target (the engines add their own options)


def _entrypoint(config: dict[str, Any]) -> list[str]:
    value = config.get("Entrypoint") or []
    return [value] if isinstance(value, str) else list(value)  # podman 4.3 prints a string


# What each flag becomes in `inspect`, and what the parser's values predict there.
FIELDS: dict[str, tuple[Callable[[dict[str, Any]], Any], Callable[[list[str | None]], Any]]] = {
    "--user": (lambda c: c["Config"]["User"], lambda v: _last(v, "")),
    "--volume": (
        lambda c: [_bind(b) for b in c["HostConfig"].get("Binds") or []],
        lambda v: [_bind(str(x)) for x in v],
    ),
    "--env": (
        lambda c: [e for e in c["Config"].get("Env") or [] if e.partition("=")[0] not in _ENGINE_ENV],
        list,
    ),
    "--read-only": (lambda c: c["HostConfig"]["ReadonlyRootfs"], lambda v: _true(_last(v, "false"))),
    "--workdir": (lambda c: c["Config"]["WorkingDir"] or "/", lambda v: _last(v, "/")),
    "--label": (lambda c: c["Config"].get("Labels") or {}, lambda v: dict(str(x).partition("=")[::2] for x in v)),
    "--tmpfs": (
        lambda c: sorted(c["HostConfig"].get("Tmpfs") or {}),
        lambda v: sorted(str(x).partition(":")[0] for x in v),
    ),
    "--entrypoint": (lambda c: _entrypoint(c["Config"]), lambda v: [_last(v, "")] if v else []),
    "--interactive": (lambda c: c["Config"]["OpenStdin"], lambda v: _true(_last(v, "false"))),
    "--tty": (lambda c: c["Config"]["Tty"], lambda v: _true(_last(v, "false"))),
    "--privileged": (lambda c: c["HostConfig"]["Privileged"], lambda v: _true(_last(v, "false"))),
    "--group-add": (lambda c: c["HostConfig"].get("GroupAdd") or [], list),
    "--pids-limit": (lambda c: c["HostConfig"].get("PidsLimit") or 0, lambda v: int(_last(v, "0"))),
    "--hostname": (lambda c: c["Config"]["Hostname"], lambda v: _last(v, None)),
}
SAMPLES = {
    "--user": "0",
    "--volume": "/:/host:ro",
    "--env": "A=1",
    "--read-only": "false",
    "--workdir": "/work",
    "--label": "team=red",
    "--tmpfs": "/mnt/scratch:size=64m",
    "--entrypoint": "/bin/sh",
    "--interactive": None,
    "--tty": None,
    "--privileged": None,
    "--group-add": "0",
    "--pids-limit": "100",  # (-1, unlimited, is stored as 0 by dockerd 20.10)
    "--hostname": "box",
}
TRICKY = [
    ["-e", "-v/:/host=1"],  # the next word is -e's value, whatever it looks like
    ["--env", "--privileged=1"],
    ["-itu0"],
    ["-ti=false"],
    ["-v/:/host:ro", "-u0"],
    ["-u="],
    ["-h", "box"],
    ["--read-only", "--read-only=false"],
]
GRAMMARS = {"docker": flags.DOCKER_RUN, "podman": flags.PODMAN_RUN}


def _cases(grammar: flags.Grammar) -> Iterator[list[str]]:
    for name, value in SAMPLES.items():
        yield from spellings(grammar, name, value)
    yield from TRICKY


def _cli(engine: str) -> str:
    binary = shutil.which(engine)
    assert binary is not None, f"the {engine} CLI is the oracle here"
    return binary


@pytest.fixture(scope="module", params=sorted(GRAMMARS))
def engine_cli(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The engine's CLI, holding an empty image to create containers from (nothing is pulled)."""
    name: str = request.param
    if name == "docker":
        request.getfixturevalue("engine")  # dockerd answers (scripts/ensure-engine)
    with imported(_cli(name), IMAGE, tmp_path_factory.mktemp("empty")):
        yield name


def _observed(binary: str, spellings: list[list[str]]) -> list[tuple[str, dict[str, Any]]]:
    """The id and inspect document of a container the engine creates from each of ``spellings``.

    Each container is created from its own words; they are inspected and removed in one
    engine call each (the documents come back in the order asked).
    """
    ids: list[str] = []
    try:
        for words in spellings:
            created = subprocess.run(
                [binary, "create", *words, IMAGE, "true"], capture_output=True, text=True, timeout=120, check=False
            )
            assert created.returncode == 0, (binary, words, created.stderr)
            ids.append(created.stdout.strip().splitlines()[-1])
        shown = subprocess.run(
            [binary, "container", "inspect", *ids], capture_output=True, text=True, timeout=120, check=True
        )
    finally:
        if ids:
            subprocess.run([binary, "rm", "-f", *ids], capture_output=True, check=False, timeout=120)
    documents: list[dict[str, Any]] = json.loads(shown.stdout)
    assert len(documents) == len(ids) and all(d["Id"].startswith(i) for i, d in zip(ids, documents, strict=True))
    return list(zip(ids, documents, strict=True))


def test_the_engine_reads_every_spelling_as_the_launcher_does(engine_cli: str) -> None:
    binary, grammar = _cli(engine_cli), GRAMMARS[engine_cli]
    cases = list(_cases(grammar))
    # The engine's own defaults, for every field the words leave alone.
    (_, plain), *observed = _observed(binary, [[], *cases])
    baseline = {name: actual_of(plain) for name, (actual_of, _) in FIELDS.items()}
    mismatches = []
    for words, (container_id, document) in zip(cases, observed, strict=True):
        parsed = flags.parse(words, grammar)
        for name, (actual_of, expected_of) in FIELDS.items():
            values = [f.value for f in parsed if f.name == name]
            actual = actual_of(document)
            if name == "--hostname" and not values:
                assert container_id.startswith(actual), (words, actual)  # the default: the id
                continue
            expected = expected_of(values) if values else baseline[name]
            if actual != expected:
                mismatches.append(f"{engine_cli} {words}: {name} engine={actual!r} parser={expected!r}")
    assert not mismatches, "\n".join(mismatches)


# Env files as people write them: comments, blank lines, CRLF, a BOM, spaces, values holding
# '=', '#' and quotes (taken as written), names inherited from the caller's environment.
ENV_FILES = (
    "# settings\nFOO=bar\n\nLANG=C.UTF-8\n",
    "\ufeffFOO=1\r\nBAR=two words\r\n",
    "   INDENTED=yes\n\tTABBED=also\n",
    'QUOTED="kept as written"\nHASH=a#b\nEQ=a=b=c\nEMPTY=\n',
    "INHERITED_SET\nINHERITED_UNSET\n",
    "TRAIL=space \nVT=a\x0bb\n",
)


@pytest.mark.parametrize("text", ENV_FILES, ids=range(len(ENV_FILES)))
def test_an_env_file_becomes_the_entries_the_engine_would_read_from_it(
    engine_cli: str, text: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """``--env-file`` is replaced by ``--env`` entries (the engine never reads the file the
    launcher checked, so a swap after the check cannot matter): the container's environment
    is the one the engine makes from the file itself."""
    binary, grammar = _cli(engine_cli), GRAMMARS[engine_cli]
    path = tmp_path_factory.mktemp("env-file") / "session.env"
    path.write_text(text, encoding="utf-8", newline="")
    parsed = flags.parse(["--env-file", str(path)], grammar)
    with pytest.MonkeyPatch.context() as patch:  # the launcher's environment is the CLI's here
        patch.setenv("INHERITED_SET", "from the caller")
        patch.delenv("INHERITED_UNSET", raising=False)
        checked = flags.check_env(parsed, allowed_env=frozenset(), engine=engine_cli)
    rewritten = flags.words(checked)
    assert str(path) not in " ".join(rewritten)
    env = {"PATH": "/usr/bin:/bin", "INHERITED_SET": "from the caller", "HOME": "/root"}

    def created_env(words: list[str]) -> list[str]:
        created = subprocess.run(
            [binary, "create", *words, IMAGE, "true"], capture_output=True, text=True, timeout=120, env=env, check=True
        )
        container_id = created.stdout.strip().splitlines()[-1]
        try:
            shown = subprocess.run([binary, "container", "inspect", container_id], capture_output=True, text=True,
                                   timeout=120, check=True)  # fmt: skip
        finally:
            subprocess.run([binary, "rm", "-f", container_id], capture_output=True, check=False, timeout=120)
        found = json.loads(shown.stdout)[0]["Config"]["Env"] or []
        return sorted(
            item for item in found if item.split("=", 1)[0] not in _ENGINE_ENV
        )  # the engine's order is a map's

    assert created_env(rewritten) == created_env(["--env-file", str(path)])
