"""The docker CLI itself reads SANDBOX_FLAGS' words as the launcher's parser does.

For each generated spelling, ``docker create`` (the real CLI, its real pflag parser; no
container starts) builds a container from the words, and its inspect document is
compared with what :func:`terminai_sandbox.launch.flags.parse` said the words mean: every
flag the parser saw shows in the container, and no flag the parser did not see does.
"""

from __future__ import annotations

import contextlib
import io
import shutil
import subprocess
import tarfile
from collections.abc import Callable, Iterator
from typing import Any

import docker
import pytest
from terminai_sandbox.engine import Engine
from terminai_sandbox.launch import flags

from tests.unit.launcher.test_flags import spellings

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPOSITORY, TAG = "terminai-test/empty", "flag-grammar"
IMAGE = f"{REPOSITORY}:{TAG}"


def _true(value: str | None) -> bool:
    return value is None or value in ("1", "t", "T", "TRUE", "true", "True")


def _last(values: list[str | None], default: Any) -> Any:
    return values[-1] if values else default


# What each flag becomes in `docker inspect`, and what the parser's values predict there.
FIELDS: dict[str, tuple[Callable[[dict[str, Any]], Any], Callable[[list[str | None]], Any]]] = {
    "--user": (lambda c: c["Config"]["User"], lambda v: _last(v, "")),
    "--volume": (lambda c: c["HostConfig"].get("Binds") or [], list),
    "--env": (lambda c: [e for e in c["Config"]["Env"] or [] if not e.startswith("PATH=")], list),
    "--read-only": (lambda c: c["HostConfig"]["ReadonlyRootfs"], lambda v: _true(_last(v, "false"))),
    "--workdir": (lambda c: c["Config"]["WorkingDir"], lambda v: _last(v, "")),
    "--label": (lambda c: c["Config"]["Labels"] or {}, lambda v: dict(str(x).partition("=")[::2] for x in v)),
    "--tmpfs": (lambda c: c["HostConfig"].get("Tmpfs") or {}, lambda v: dict(str(x).partition(":")[::2] for x in v)),
    "--entrypoint": (lambda c: c["Config"]["Entrypoint"] or [], lambda v: [_last(v, "")] if v else []),
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
    "--tmpfs": "/scratch:size=64m",
    "--entrypoint": "/bin/sh",
    "--interactive": None,
    "--tty": None,
    "--privileged": None,
    "--group-add": "0",
    "--pids-limit": "100",  # (-1, unlimited, is stored as 0 by the daemon)
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


def _cases() -> Iterator[list[str]]:
    for name, value in SAMPLES.items():
        yield from spellings(flags.DOCKER_RUN, name, value)
    yield from TRICKY


@pytest.fixture(scope="module")
def empty_image(engine: Engine) -> Iterator[str]:
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w"):
        pass
    engine.client.api.import_image_from_data(archive.getvalue(), repository=REPOSITORY, tag=TAG)
    try:
        yield IMAGE
    finally:
        with contextlib.suppress(docker.errors.APIError):
            engine.client.images.remove(IMAGE, force=True)


def test_docker_reads_every_spelling_as_the_launcher_does(engine: Engine, empty_image: str) -> None:
    binary = shutil.which("docker")
    assert binary is not None, "the docker CLI is the oracle here"
    mismatches = []
    for words in _cases():
        parsed = flags.parse(words, flags.DOCKER_RUN)
        created = subprocess.run(
            [binary, "create", *words, empty_image, "true"], capture_output=True, text=True, timeout=60, check=False
        )
        assert created.returncode == 0, (words, created.stderr)
        container_id = created.stdout.strip()
        try:
            document = engine.client.api.inspect_container(container_id)
        finally:
            engine.client.api.remove_container(container_id, force=True)
        for name, (actual_of, expected_of) in FIELDS.items():
            values = [f.value for f in parsed if f.name == name]
            actual = actual_of(document)
            if name == "--hostname" and not values:
                assert container_id.startswith(actual), (words, actual)  # docker's default: the id
                continue
            expected = expected_of(values)
            if actual != expected:
                mismatches.append(f"{words}: {name} docker={actual!r} parser={expected!r}")
    assert not mismatches, "\n".join(mismatches)
