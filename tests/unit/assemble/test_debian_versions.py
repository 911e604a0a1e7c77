"""Debian versions are ordered by Debian policy (python-debian), never as strings."""

from __future__ import annotations

import pytest
from terminai_sandbox.artifacts.debian_lock import DebianLock
from terminai_sandbox.assemble import debian

from tests.fixtures.locks import debian_lock_doc


@pytest.mark.parametrize(
    ("candidate", "current"),
    [
        ("1.10", "1.9"),  # numeric runs, where string order says 1.9 > 1.10
        ("2.6.10-1", "2.6.9-1"),
        ("1:1.0", "2.0"),  # an epoch outranks any upstream version
        ("1.0", "1.0~rc1"),  # a tilde sorts before the release
        ("1.0~rc2", "1.0~rc1"),
        ("3.11.2-6+deb12u10", "3.11.2-6+deb12u9"),
        ("2.6.1-1+b1", "2.6.1-1"),  # binNMU
    ],
)
def test_newer_follows_debian_policy(candidate: str, current: str) -> None:
    assert debian.is_newer(candidate, current)
    assert not debian.is_newer(current, candidate)
    assert not debian.is_newer(current, current)


def test_newest_picks_by_policy_not_by_string() -> None:
    assert debian.newest(["1.9", "1.10", "1.2"]) == "1.10"
    assert debian.newest(["2.0", "1:0.1", "9.9"]) == "1:0.1"
    assert debian.newest(["1.0~rc1", "1.0", "1.0~beta"]) == "1.0"
    assert debian.newest([]) is None


def test_drift_reports_the_policy_newest_candidate() -> None:
    lines = debian.drift_report(
        DebianLock.from_dict(debian_lock_doc(("libfoo", "1.9-1"), ("gone", "2"))).packages,
        {"libfoo": {"1.9-1", "1.10-1", "1.8-1"}, "gone": {"1"}},
    )
    assert lines == ["newer: libfoo 1.9-1 -> 1.10-1", "gone: gone 2 is no longer on the mirrors"]
