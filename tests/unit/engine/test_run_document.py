"""The session's argv read back as an API document: a word it cannot say exactly keeps the CLI.

That the document it does make configures the container as ``docker run`` does is proven
against dockerd in ``tests/integration/engine/test_run_document.py``.
"""

from __future__ import annotations

import pytest
from terminai_sandbox.engine.run_document import _bytes, _nano_cpus, create_document


@pytest.mark.parametrize(
    "extra",
    [
        ["--privileged"],  # any flag the launcher does not write itself
        ["--env", "INHERITED"],  # a value the CLI reads from its own environment
        ["--memory=1g"],  # a spelling the launcher never writes
        ["--memory", "1.5g"],  # a size the CLI reads, not this module
        ["--mount", "type=volume,src=v,dst=/v"],
        ["--publish", "8080"],
    ],
)
def test_a_word_the_document_cannot_say_exactly_keeps_the_cli(extra: list[str]) -> None:
    argv = ["docker", "run", "--rm", "--name", "n", *extra, "image", "true"]
    assert create_document(argv) is None
    assert create_document(["docker", "run", "--rm", "--name", "n", "image", "true"]) is not None


def test_sizes_and_cpus_are_read_as_the_docker_cli_reads_them() -> None:
    assert [_bytes(t) for t in ("512m", "256M", "1g", "1024", "2k", "1.5g", "1gib", "")] == [
        512 << 20,
        256 << 20,
        1 << 30,
        1024,
        2048,
        None,
        None,
        None,
    ]
    assert [_nano_cpus(t) for t in ("2", "1.5", "0.000000001", "1.0000000001", "x", "")] == [
        2 * 10**9,
        1_500_000_000,
        1,
        None,
        None,
        None,
    ]
