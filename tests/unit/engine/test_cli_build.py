"""A project layer is built by one spelling for both engine CLIs, differing only where the CLIs do."""

from __future__ import annotations

from pathlib import Path

import pytest
from terminai_sandbox.engine.cli import NO_PULL, build_failure, build_words
from terminai_sandbox.errors import LaunchError

ARGS = {
    "context": Path("/p/.terminai"),
    "dockerfile": "sandbox.Dockerfile",
    "build_args": {"BASE_IMAGE": "r/o@sha256:" + "a" * 64},
    "tag": "terminai-project:x",
    "labels": {"dev.terminai.base": "sha256:" + "a" * 64},
}
TAIL = [
    "--file",
    "/p/.terminai/sandbox.Dockerfile",
    "--tag",
    "terminai-project:x",
    "--build-arg",
    "BASE_IMAGE=r/o@sha256:" + "a" * 64,
    "--label",
    "dev.terminai.base=sha256:" + "a" * 64,
    "/p/.terminai",
]


@pytest.mark.parametrize(
    ("engine", "no_pull"),
    [("docker", ["--pull=false", "--rm", "--force-rm"]), ("podman", ["--pull=never"])],
)
def test_each_engine_builds_quietly_offline_from_what_it_holds(engine: str, no_pull: list[str]) -> None:
    assert build_words(engine, **ARGS) == ["build", "--quiet", "--network=none", *no_pull, *TAIL]  # type: ignore[arg-type]


def test_an_engine_without_a_spelling_is_a_programming_error_not_a_build() -> None:
    assert set(NO_PULL) == {"docker", "podman"}
    with pytest.raises(KeyError):
        build_words("nerdctl", **ARGS)  # type: ignore[arg-type]


def test_a_failed_build_shows_the_last_fifteen_lines() -> None:
    error = build_failure("sandbox.Dockerfile", "".join(f"out {n}\n" for n in range(20)), "err\n")
    assert isinstance(error, LaunchError)
    assert error.message.splitlines()[0] == "building sandbox.Dockerfile failed:"
    assert error.message.splitlines()[1:] == [f"out {n}" for n in range(6, 20)] + ["err"]
