"""`run --network/--memory/--cpus`: a limit of 0 is no limit to the engines, and `host`,
`container:ID`, `ns:PATH` join a namespace the session must not share. Both were passed
to `docker run` unchecked (SANDBOX_FLAGS refused the same through its allowlist)."""

from __future__ import annotations

import itertools
import re
import subprocess

import pytest
from terminai_sandbox.common.hardening import HARDENED_LIMITS, Limits
from terminai_sandbox.errors import ConfigError

NUMBERS = ["0", "00", "0.0", "1", "2", "0.5", ".5", "1.5", "10", "-1", "1.2.3", "", " ", "1e3", "nan", "inf", "½", "٣"]
UNITS = ["", "k", "M", "g", "G", "t", "p", "b", "gb", "GiB", "mib", " g", "x", "gg"]
SIZES = sorted({n + u for n, u in itertools.product(NUMBERS, UNITS)})


def _a_positive_size(text: str) -> bool:
    """The spellings the launcher takes: a decimal above 0, an optional space, then k/m/g/t/p
    with an optional i and b, in any case (the docker CLI is held to it below)."""
    found = re.fullmatch(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+) ?(?:[kmgtp])?i?b?", text, re.IGNORECASE)
    return found is not None and float(found.group(1)) > 0


@pytest.mark.parametrize("network", ["host", "HOST", "Host", "container:abc", "ns:/proc/1/ns/net", "", " none", "-x"])
def test_a_shared_or_malformed_network_is_refused(network: str) -> None:
    with pytest.raises(ConfigError, match=r"--network .* would share a network namespace"):
        Limits(network=network)


@pytest.mark.parametrize("network", ["none", "bridge", "my-net", "project_1.net"])
def test_ordinary_networks_pass(network: str) -> None:
    assert Limits(network=network).network == network


@pytest.mark.parametrize("text", SIZES)
def test_a_memory_size_passes_exactly_when_it_is_a_positive_size(text: str) -> None:
    try:
        Limits(memory=text)
        accepted = True
    except ConfigError as refused:
        accepted = False
        assert "is not a positive size" in refused.message
    assert accepted == _a_positive_size(text)


@pytest.mark.parametrize("cpus", ["0", "0.0", "-1", "", "abc", "nan", "inf", "1,5", "1e3", "½"])
def test_no_cpus_or_a_malformed_number_is_refused(cpus: str) -> None:
    with pytest.raises(ConfigError, match="is not a positive number of CPUs"):
        Limits(cpus=cpus)


def test_the_hardened_defaults_pass() -> None:
    assert Limits() == HARDENED_LIMITS


@pytest.mark.integration
def test_every_size_we_accept_the_docker_cli_accepts() -> None:
    """docker's own CLI is the judge: every size that passes here docker parses, and among
    what docker parses only 0 (which it takes as no limit at all) and a few odd spellings
    (a trailing space, `i` without `b`) are refused here."""
    refused_zero: list[str] = []
    for text in SIZES:
        try:
            Limits(memory=text)
            accepted = True
        except ConfigError:
            accepted = False
        done = subprocess.run(
            ["docker", "create", "--pull", "never", "--memory", text, "terminai-no-such-image:0", "true"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        parsed = "invalid argument" not in done.stderr
        if accepted:
            assert parsed, (text, done.stderr)
        elif parsed and float(text.rstrip("kKmMgGtTpPiIbB ") or "nan") == 0:
            refused_zero.append(text)
    assert {"0", "0g", "0.0", "00"} <= set(refused_zero)
