"""The policy module is held to the launch kernel's seal: a session start parses it."""

from __future__ import annotations

import os

from tests.unit.launch.test_kernel_seal import forbidden, loaded_by, outside_the_seal


def test_parsing_and_deciding_a_policy_stays_inside_the_seal() -> None:
    code, loaded, err = loaded_by(
        "from terminai_apts.egress.policy import parse_network_policy\n"
        "p = parse_network_policy('allow:pypi.org,*.b\\u00fccher.example:443,[::1]:8080,!x.pypi.org', source='s')\n"
        "assert p.decide('pypi.org', 443).allowed\n"
        "assert p.from_json(p.to_json()) == p\n"
        "p.describe()\n",
        {"PATH": os.environ["PATH"]},
    )
    assert code == 0, err
    assert "terminai_apts.egress.policy" in loaded
    assert not outside_the_seal(loaded), outside_the_seal(loaded)
    assert not forbidden(loaded), forbidden(loaded)
